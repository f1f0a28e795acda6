// The effective policy of a request: the guardrails that apply (workspace default, member, key) intersected.
import type { DataRegion } from "../../regions";
import type { ContentFilterBuiltin, ContentFilterCustom, guardrails } from "../../schema/tables";

export type GuardrailRow = typeof guardrails.$inferSelect;

export type ZdrMaker = "vendor_a" | "vendor_b" | "vendor_c" | "vendor_d" | "other";

export interface AppliedFilter {
  /** The account whose guardrail it is (filtering work is metered per account: apply-filters.ts). */
  accountId: string;
  guardrailId: string;
  guardrailName: string;
  kind: "builtin" | "custom";
  /** Built-in slug, or the custom regex source. */
  match: string;
  action: "block" | "redact" | "flag";
  label: string;
}

export interface Budget {
  guardrailId: string;
  name: string;
  limitMicros: number;
  resetInterval: "daily" | "weekly" | "monthly" | null;
  includeByok: boolean;
}

export interface EffectivePolicy {
  /** Guardrails that contributed, for messages naming the one that refused. */
  guardrails: Array<{ id: string; name: string }>;
  /** null: unrestricted. */
  allowedDataRegions: DataRegion[] | null;
  allowedModels: string[] | null;
  ignoredModels: string[];
  allowedProviders: string[] | null;
  ignoredProviders: string[];
  enableFreeModelPublication: boolean;
  enableFreeModelTraining: boolean;
  enablePaidModelTraining: boolean;
  zdr: Record<ZdrMaker, boolean>;
  filters: AppliedFilter[];
  budgets: Budget[];
}

const intersect = (sets: string[][]): string[] | null => {
  if (sets.length === 0) return null;
  const [first, ...rest] = sets;
  return first!.filter((v) => rest.every((s) => s.includes(v)));
};

/**
 * Sets narrow (intersection of the non-null allow-lists, union of the ignore-lists), permissions need
 * every guardrail's consent, and ZDR is enforced if any guardrail enforces it.
 */
export function effectivePolicy(rows: GuardrailRow[]): EffectivePolicy {
  const nonNull = <T>(pick: (g: GuardrailRow) => T | null) => rows.map(pick).filter((v): v is T => v != null);
  const filters: AppliedFilter[] = rows.flatMap((g) => [
    ...(g.contentFilterBuiltins ?? []).map((f: ContentFilterBuiltin) => ({
      accountId: g.accountId,
      guardrailId: g.id,
      guardrailName: g.name,
      kind: "builtin" as const,
      match: f.slug,
      action: f.action,
      label: f.label,
    })),
    ...(g.contentFilters ?? []).map((f: ContentFilterCustom) => ({
      accountId: g.accountId,
      guardrailId: g.id,
      guardrailName: g.name,
      kind: "custom" as const,
      match: f.pattern,
      action: f.action,
      label: f.label,
    })),
  ]);
  return {
    guardrails: rows.map((g) => ({ id: g.id, name: g.name })),
    allowedDataRegions: intersect(nonNull((g) => g.allowedDataRegions)) as DataRegion[] | null,
    allowedModels: intersect(nonNull((g) => g.allowedModels)),
    ignoredModels: [...new Set(rows.flatMap((g) => g.ignoredModels ?? []))],
    allowedProviders: intersect(nonNull((g) => g.allowedProviders)),
    ignoredProviders: [...new Set(rows.flatMap((g) => g.ignoredProviders ?? []))],
    enableFreeModelPublication: rows.every((g) => g.enableFreeModelPublication),
    enableFreeModelTraining: rows.every((g) => g.enableFreeModelTraining),
    enablePaidModelTraining: rows.every((g) => g.enablePaidModelTraining),
    zdr: {
      vendor_a: rows.some((g) => g.enforceZdrVendorA),
      vendor_b: rows.some((g) => g.enforceZdrVendorB),
      vendor_c: rows.some((g) => g.enforceZdrVendorC),
      vendor_d: rows.some((g) => g.enforceZdrVendorD),
      other: rows.some((g) => g.enforceZdrOther),
    },
    filters,
    budgets: rows
      .filter((g) => g.limitMicros != null)
      .map((g) => ({
        guardrailId: g.id,
        name: g.name,
        limitMicros: g.limitMicros!,
        resetInterval: g.resetInterval,
        includeByok: g.includeByokInBudgets,
      })),
  };
}
