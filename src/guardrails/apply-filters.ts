// Runs the effective guardrails' content filters over every text input before routing: block refuses
// with 403 naming the filter's label, redact rewrites, flag is noted for the generation record.

import { ApiError, forbidden } from "../lib/errors";
import type { ScanBudget } from "./custom-pattern";
import { applyContentFilters, CUSTOM_SCAN_BUDGET, newScanBudget } from "./filters";
import type { EffectivePolicy } from "./policy";

export interface FilteredTexts {
  texts: string[];
  /** `flag:<label>` / `redact:<label>` notes for the generation record (labels only, never matched text). */
  flags: string[];
}

/**
 * Filtering work one account may take of an isolate in a window: ten requests' worth at the most each
 * may do (about 3 s of CPU with the heaviest custom patterns; 200 requests of 200 KB prompts under all
 * the built-ins). Each request's work is bounded (CUSTOM_SCAN_BUDGET), but many at once (refused with
 * 402, 403 or 413 afterwards, so never billed) would hold the isolate's one thread for everyone else;
 * past this, an account's requests are refused with 429 before any scanning, until the window ends.
 */
export const ACCOUNT_FILTER_UNITS = 10 * CUSTOM_SCAN_BUDGET;
export const FILTER_WINDOW_MS = 10_000;
const spentByAccount = new Map<string, { since: number; units: number }>();

function meterOf(accountId: string, now: number) {
  let meter = spentByAccount.get(accountId);
  if (!meter || now - meter.since >= FILTER_WINDOW_MS) {
    if (spentByAccount.size >= 10_000) {
      for (const [id, m] of spentByAccount) if (now - m.since >= FILTER_WINDOW_MS) spentByAccount.delete(id);
    }
    meter = { since: now, units: 0 };
    spentByAccount.set(accountId, meter);
  }
  return meter;
}

export function filterTexts(policy: EffectivePolicy, texts: string[]): FilteredTexts {
  if (policy.filters.length === 0) return { texts, flags: [] };
  const now = Date.now();
  const meter = meterOf(policy.filters[0]!.accountId, now);
  if (meter.units >= ACCOUNT_FILTER_UNITS) {
    const seconds = Math.max(1, Math.ceil((meter.since + FILTER_WINDOW_MS - now) / 1000));
    throw new ApiError(
      429,
      `Too much content filtering for this account at once: retry in ${seconds} s`,
      { scan_budget: ACCOUNT_FILTER_UNITS },
      { "Retry-After": String(seconds) },
    );
  }
  // One budget for all the texts: the bound is on the request's filtering work, however it is split.
  const budget = newScanBudget();
  try {
    return scanned(policy, texts, budget);
  } finally {
    meter.units += CUSTOM_SCAN_BUDGET - Math.max(0, budget.remaining);
  }
}

function scanned(policy: EffectivePolicy, texts: string[], budget: ScanBudget): FilteredTexts {
  const flags = new Set<string>();
  const out = texts.map((text) => {
    const verdict = applyContentFilters(policy.filters, text, budget);
    if (verdict.overBudget) {
      // 413, not 400: the request is well formed, just more text than these filters may scan. Refusing
      // (rather than passing unchecked text on) keeps block filters fail-closed.
      const f = verdict.overBudget;
      throw new ApiError(
        413,
        `Content too large to filter under the content filters of guardrail '${f.guardrailName}': send less text or fewer inputs`,
        { guardrail_id: f.guardrailId, scan_budget: CUSTOM_SCAN_BUDGET },
      );
    }
    if (verdict.blockedBy) {
      const f = verdict.blockedBy;
      throw forbidden(`Request blocked by content filter '${f.label}' of guardrail '${f.guardrailName}'`, {
        filter: f.label,
        guardrail_id: f.guardrailId,
      });
    }
    for (const f of verdict.flagged) flags.add(`flag:${f.label}`);
    for (const f of verdict.redacted) flags.add(`redact:${f.label}`);
    return verdict.text;
  });
  return { texts: out, flags: [...flags] };
}
