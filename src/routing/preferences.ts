// The `provider` routing preferences object, with @openrouter/sdk's field names, shared by every inference route.
import { z } from "@hono/zod-openapi";
import { providerSlugOf } from "../catalog/providers";

/** Providers by slug or display name, in any case, read as slugs (an `ignore` must never fail open). */
const ProviderList = z.array(z.string().min(1).transform(providerSlugOf)).max(100);
const UsdString = z.union([z.number().nonnegative(), z.string().regex(/^\d+(\.\d+)?$/, "a price in USD")]);

export const ProviderSortSchema = z.enum(["price", "throughput", "latency", "exacto"]);

export const ProviderPreferencesSchema = z
  .object({
    /** Providers to try first, in this order; the others follow unless allow_fallbacks is false. */
    order: ProviderList.nullish(),
    /** Only these providers. */
    only: ProviderList.nullish(),
    /** Never these providers. */
    ignore: ProviderList.nullish(),
    /** false: no backup providers beyond `order` (or the first endpoint) and no fallback models. */
    allow_fallbacks: z.boolean().nullish(),
    sort: z
      .union([
        ProviderSortSchema,
        z.object({ by: ProviderSortSchema.nullish(), partition: z.enum(["model", "none"]).nullish() }),
      ])
      .nullish(),
    /**
     * USD: prompt per million input units (tokens or characters), completion per million output
     * tokens, request per request; image and audio per million prompt tokens (media in a prompt are
     * billed as prompt tokens).
     */
    max_price: z
      .object({
        prompt: UsdString.optional(),
        completion: UsdString.optional(),
        request: UsdString.optional(),
        audio: UsdString.optional(),
        image: UsdString.optional(),
      })
      .optional(),
    /** true: zero-data-retention endpoints only. */
    zdr: z.boolean().nullish(),
    /** deny: only endpoints that neither train on nor publish request data. */
    data_collection: z.enum(["allow", "deny"]).nullish(),
    /** true: only endpoints that support every optional parameter the request sets. */
    require_parameters: z.boolean().nullish(),
    // Accepted for SDK compatibility; no latency/throughput/quantization data exists for these modalities.
    quantizations: z.array(z.string()).max(100).nullish(),
    preferred_max_latency: z.unknown().optional(),
    preferred_min_throughput: z.unknown().optional(),
    enforce_distillable_text: z.boolean().nullish(),
  })
  .openapi("ProviderPreferences");

export type ProviderPreferences = z.infer<typeof ProviderPreferencesSchema>;

export function sortOf(prefs: ProviderPreferences | null | undefined): {
  by: z.infer<typeof ProviderSortSchema> | null;
  partition: "model" | "none";
} {
  const sort = prefs?.sort;
  if (!sort) return { by: null, partition: "model" };
  if (typeof sort === "string") return { by: sort, partition: "model" };
  return { by: sort.by ?? null, partition: sort.partition ?? "model" };
}

export const usd = (v: number | string | undefined): number | undefined =>
  v === undefined ? undefined : typeof v === "number" ? v : Number(v);
