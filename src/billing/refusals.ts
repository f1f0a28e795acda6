// The worker's wording of the ledger's refusals: status, message, metadata and the 429 headers.
import type { Rejection } from "../ledger/types";

/** What a caller is answered: the error envelope's status, message and metadata, and headers. */
export interface Refusal {
  status: 402 | 403 | 409 | 429;
  message: string;
  metadata: Record<string, string | number | null>;
  headers?: Record<string, string>;
}

const usd = (micros = 0) => (micros / 1_000_000).toFixed(6).replace(/\.?0+$/, "");
const iso = (ms: number) => new Date(ms).toISOString();
const dollars = (micros = 0) => micros / 1_000_000;

/** Words a refusal; instants are the ledger's (its clock decides windows), never this isolate's. */
export function worded(r: Rejection): Refusal {
  const meta = (extra: Refusal["metadata"] = {}) => ({ reason: r.reason, ...extra });
  switch (r.reason) {
    case "balance": {
      const balance = r.remainingMicros ?? 0;
      const message =
        balance <= 0
          ? "Insufficient credits: the account balance is not above zero. Add credits to continue."
          : `Insufficient credits: this request may cost up to $${usd(r.worstCaseMicros)} but $${usd(balance)} is available. Add credits to continue.`;
      return { status: 402, message, metadata: meta({ balance_usd: dollars(balance) }) };
    }
    case "key_cap": {
      const resets = r.resetsAt ?? null;
      const when = resets == null ? "it has no reset" : `it resets at ${iso(resets)}`;
      return {
        status: 402,
        message: `API key credit limit reached: $${usd(r.remainingMicros)} of the $${usd(r.limitMicros)} limit remains and this request may cost up to $${usd(r.worstCaseMicros)}. Raise the key's limit or wait for its reset (${when}).`,
        metadata: meta({
          limit_usd: dollars(r.limitMicros),
          limit_remaining_usd: dollars(r.remainingMicros),
          limit_reset: r.reset ?? null,
          resets_at: resets == null ? null : iso(resets),
        }),
      };
    }
    case "budget": {
      const resets = r.resetsAt ?? null;
      const when = resets == null ? "" : ` (it resets at ${iso(resets)})`;
      // Spent, or not spent but short of what this request may cost (its worst case is reserved).
      const what =
        (r.remainingMicros ?? 0) > 0 && r.worstCaseMicros != null
          ? `budget too low for this request: it may cost up to $${usd(r.worstCaseMicros)} and $${usd(r.remainingMicros)} of the $${usd(r.limitMicros)} limit remains${when}; lower its max_tokens or raise the budget`
          : `budget exhausted: $${usd(r.remainingMicros)} of its $${usd(r.limitMicros)} limit remains${when}`;
      return {
        status: 403,
        message: `Guardrail '${r.guardrailName}' ${what}.`,
        metadata: meta({
          guardrail_id: r.guardrailId ?? null,
          guardrail_name: r.guardrailName ?? null,
          limit_usd: dollars(r.limitMicros),
        }),
      };
    }
    case "free_per_day":
      return rateLimited(r, "Free-model daily request limit reached");
    case "free_per_minute":
      return rateLimited(r, "Free-model per-minute request limit reached");
    case "generation_reused":
      return {
        status: 409,
        message: `Generation id '${r.generationId}' was already settled`,
        metadata: meta(),
      };
    case "stale_authority":
      return { status: 409, message: "The API key's settings changed; read them again", metadata: meta() };
  }
}

/** A platform 429: X-RateLimit-Reset is the Unix epoch in milliseconds; Retry-After is in seconds. */
function rateLimited(r: Rejection, what: string): Refusal {
  const limit = r.requests ?? 0;
  const resetAt = r.resetsAt ?? r.at ?? 0;
  const retryAfter = Math.max(1, Math.ceil((resetAt - (r.at ?? resetAt)) / 1000));
  return {
    status: 429,
    message: `${what} (${limit}); retry after ${retryAfter} s. Requests with your own provider key (BYOK) are not limited.`,
    metadata: { reason: r.reason, limit, resets_at: iso(resetAt) },
    headers: {
      "X-RateLimit-Limit": String(limit),
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": String(resetAt),
      "Retry-After": String(retryAfter),
    },
  };
}
