// Runs the effective guardrails' content filters over every text input before routing: block refuses
// with 403 naming the filter's label, redact rewrites, flag is noted for the generation record.

import { ApiError, forbidden } from "../lib/errors";
import { applyContentFilters, CUSTOM_SCAN_BUDGET, newScanBudget } from "./filters";
import type { EffectivePolicy } from "./policy";

export interface FilteredTexts {
  texts: string[];
  /** `flag:<label>` / `redact:<label>` notes for the generation record (labels only, never matched text). */
  flags: string[];
}

export function filterTexts(policy: EffectivePolicy, texts: string[]): FilteredTexts {
  if (policy.filters.length === 0) return { texts, flags: [] };
  const flags = new Set<string>();
  // One budget for all the texts: the bound is on the request's filtering work, however it is split.
  const budget = newScanBudget();
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
