// Normalises a guardrail's model and provider lists against the catalog: slugs or canonical slugs in, slugs out.
import { providerSlugOf } from "../catalog/providers";
import type { LoadedCatalog } from "../catalog/types";
import { badRequest } from "../lib/errors";

/** Provider slugs the catalog serves through at least one endpoint. */
export function catalogProviders(catalog: LoadedCatalog): Set<string> {
  return new Set(catalog.models.flatMap((m) => m.endpoints.map((e) => e.provider)));
}

/**
 * Maps each entry to the catalog model's slug. A canonical slug shared by a model and its `:free`
 * variant maps to the base slug, which the router matches for both. Unknown entries are a 400.
 */
export function normaliseModels(catalog: LoadedCatalog, field: string, list: string[]): string[] {
  const unknown: string[] = [];
  const out = list.map((entry) => {
    const bySlug = catalog.models.find((m) => m.slug === entry);
    if (bySlug) return bySlug.slug;
    const byCanonical = catalog.models.filter((m) => m.canonicalSlug === entry);
    if (byCanonical.length === 0) {
      unknown.push(entry);
      return entry;
    }
    return (byCanonical.find((m) => !m.slug.endsWith(":free")) ?? byCanonical[0]!).slug;
  });
  if (unknown.length > 0) {
    throw badRequest(`${field}: unknown model(s) ${unknown.map((u) => `'${u}'`).join(", ")}`, {
      field,
      unknown,
    });
  }
  return [...new Set(out)];
}

export function normaliseProviders(catalog: LoadedCatalog, field: string, sent: string[]): string[] {
  const known = catalogProviders(catalog);
  // Display names and any case read as slugs, as a request's provider preferences do.
  const list = sent.map(providerSlugOf);
  const unknown = sent.filter((_, i) => !known.has(list[i]!));
  if (unknown.length > 0) {
    throw badRequest(`${field}: unknown provider(s) ${unknown.map((u) => `'${u}'`).join(", ")}`, {
      field,
      unknown,
    });
  }
  return [...new Set(list)];
}
