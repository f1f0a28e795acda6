// Coarse abuse (DDoS) protection per API key through the Workers Rate Limiting binding; exact limits live in the ledger.
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";
import { errorText, log } from "../lib/log";
import { LruCache } from "../lib/lru";

/** The limit callers see (the 429's headers): requests per key per period. */
export const ABUSE_LIMIT = { requests: 6000, periodSeconds: 10 } as const;

/**
 * One binding call stands for this many requests of a key in one isolate: the isolate counts locally
 * and asks the binding on the 1st, 21st, 41st... request of the key in each period. wrangler.toml's
 * ABUSE_LIMITER `simple.limit` is therefore ABUSE_LIMIT.requests / ABUSE_SAMPLE (300 per 10 s).
 * A binding call per request cost more CPU than the rest of admission (the bench's profile).
 */
export const ABUSE_SAMPLE = 20;

/** Keys tracked per isolate; an evicted key simply starts a new count (one more binding call). */
const TRACKED_KEYS = 10_000;

interface KeyCount {
  /** The period (index since the epoch) the count belongs to. */
  period: number;
  count: number;
  /** The binding refused this key for the rest of the period: refuse without asking again. */
  refused: boolean;
}

const counts = new LruCache<string, KeyCount>(TRACKED_KEYS);

/**
 * Counts every authenticated request against its key. The binding's counters are per Cloudflare
 * location and eventually consistent, so this only stops floods; it never replaces the ledger.
 * Sampling makes it coarser still: an isolate may let up to ABUSE_SAMPLE - 1 requests through past
 * the binding's last verdict, and a key seen once by many isolates is counted high (a sample per
 * isolate). Without the binding (local tools that lack it), or when it throws, requests pass.
 */
export const abuseProtection = createMiddleware<AppEnv>(async (c, next) => {
  const limiter = c.env.ABUSE_LIMITER;
  if (limiter) {
    const key = c.get("auth").key.hash;
    const periodMs = ABUSE_LIMIT.periodSeconds * 1000;
    const period = Math.floor(Date.now() / periodMs);
    let state = counts.get(key);
    if (!state || state.period !== period) {
      state = { period, count: 0, refused: false };
      counts.set(key, state);
    }
    if (!state.refused && state.count++ % ABUSE_SAMPLE === 0) {
      state.refused = !(await allowed(limiter, key, c.get("requestId")));
    }
    if (state.refused) {
      const reset = (period + 1) * periodMs;
      throw new ApiError(
        429,
        "Too many requests: this API key dramatically exceeds reasonable usage; slow down and retry later",
        { reason: "abuse_protection" },
        {
          "X-RateLimit-Limit": String(ABUSE_LIMIT.requests),
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": String(reset),
          "Retry-After": String(Math.max(1, Math.ceil((reset - Date.now()) / 1000))),
        },
      );
    }
  }
  await next();
});

async function allowed(limiter: RateLimit, key: string, requestId: string | undefined): Promise<boolean> {
  try {
    return (await limiter.limit({ key })).success;
  } catch (err) {
    // Fail open: a broken limiter (locally, "database is locked") must not turn requests into
    // 500s, and the ledger still enforces the exact limits.
    log("warn", {
      message: "abuse limiter failed; request allowed",
      request_id: requestId,
      error: errorText(err),
    });
    return true;
  }
}
