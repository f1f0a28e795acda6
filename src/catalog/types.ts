// The catalog as the hot path sees it: models with their endpoints, indexed by slug and canonical slug.
import type { DataRegion } from "../../regions";
import type { Capabilities, EndpointPolicies, Pricing } from "./schema";

export type Modality = "embeddings" | "speech" | "video" | "chat";

/** What a model of each modality produces (the listing's `output_modalities`, a chat request's `modalities`). */
export const OUTPUT_MODALITY: Record<Modality, string> = {
  embeddings: "embeddings",
  speech: "audio",
  video: "video",
  chat: "text",
};
export type Maker = "vendor_a" | "vendor_b" | "vendor_c" | "vendor_d" | "other";

export interface CatalogEndpointEntry {
  id: string;
  modelSlug: string;
  provider: string;
  adapter: string;
  upstreamModel: string;
  /** `default` plus optional per-region overrides. */
  baseUrls: Record<string, string>;
  pricing: Pricing;
  capabilities: Capabilities;
  policies: EndpointPolicies;
  regions: DataRegion[];
  exemptFreeLimits: boolean;
  timeouts: { first_byte_ms?: number };
}

export interface CatalogModelEntry {
  slug: string;
  canonicalSlug: string;
  name: string;
  maker: Maker;
  modality: Modality;
  isFree: boolean;
  description: string;
  created: number;
  contextLength: number | null;
  inputModalities: string[];
  /** In catalog order: the default routing preference. */
  endpoints: CatalogEndpointEntry[];
}

export interface LoadedCatalog {
  version: string;
  models: CatalogModelEntry[];
  /** Both slugs and canonical slugs map to their model. */
  index: Map<string, CatalogModelEntry>;
}

export function findModel(catalog: LoadedCatalog, id: string): CatalogModelEntry | undefined {
  return catalog.index.get(id);
}

export function indexCatalog(version: string, models: CatalogModelEntry[]): LoadedCatalog {
  const index = new Map<string, CatalogModelEntry>();
  // A variant (`:free`, ...) shares its model's canonical slug: the canonical slug names the model
  // itself, so a variant has it only when no model without a variant does.
  const isVariant = (m: CatalogModelEntry) => m.slug.includes(":");
  for (const m of models) if (!isVariant(m)) index.set(m.canonicalSlug, m);
  for (const m of models) if (isVariant(m) && !index.has(m.canonicalSlug)) index.set(m.canonicalSlug, m);
  // Slugs win over canonical slugs when they collide.
  for (const m of models) index.set(m.slug, m);
  return { version, models, index };
}

/** The base URL of an endpoint for a data region. */
export function baseUrlFor(endpoint: CatalogEndpointEntry, region: DataRegion): string {
  return (endpoint.baseUrls[region] ?? endpoint.baseUrls.default ?? "").replace(/\/+$/, "");
}
