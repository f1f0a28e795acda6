// Runs the effective guardrails' content filters over every text input before routing: block refuses
// with 403 naming the filter's label, redact rewrites, flag is noted for the generation record.
import { applyContentFilters } from "../guardrails/filters";
import type { EffectivePolicy } from "../guardrails/policy";
import { forbidden } from "../lib/errors";

export interface FilteredTexts {
  texts: string[];
  /** `flag:<label>` / `redact:<label>` notes for the generation record (labels only, never matched text). */
  flags: string[];
}

export function filterTexts(policy: EffectivePolicy, texts: string[]): FilteredTexts {
  if (policy.filters.length === 0) return { texts, flags: [] };
  const flags = new Set<string>();
  const out = texts.map((text) => {
    const verdict = applyContentFilters(policy.filters, text);
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
