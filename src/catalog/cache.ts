// The catalog in isolate memory: read from D1 about once per CATALOG_TTL_MS, ahead of its end, so the hot
// path does no query.
import { asc } from "drizzle-orm";
import type { DataRegion } from "../../regions";
import { getDb, tables } from "../db/client";
import { type Background, RefreshAhead } from "../lib/refresh-ahead";
import type { Capabilities, EndpointPolicies, Pricing } from "./schema";
import { type CatalogModelEntry, indexCatalog, type LoadedCatalog, type Maker, type Modality } from "./types";

/** A reloaded catalog reaches every isolate within this long. */
export const CATALOG_TTL_MS = 60_000;
/** A request that finds a copy with less than this left reads the catalog again in its background. */
export const CATALOG_REFRESH_AHEAD_MS = 15_000;

let cached: { value: LoadedCatalog; expires: number } | null = null;

async function load(d1: D1Database): Promise<LoadedCatalog> {
  const db = getDb(d1);
  const [modelRows, endpointRows] = await db.batch([
    db.select().from(tables.models).orderBy(asc(tables.models.slug)),
    db
      .select()
      .from(tables.endpoints)
      .orderBy(asc(tables.endpoints.modelSlug), asc(tables.endpoints.position)),
  ]);
  const models = new Map<string, CatalogModelEntry>();
  let version = "empty";
  for (const row of modelRows) {
    const details = row.details as {
      created?: number;
      context_length?: number | null;
      input_modalities?: string[];
    };
    version = row.catalogVersion;
    models.set(row.slug, {
      slug: row.slug,
      canonicalSlug: row.canonicalSlug,
      name: row.name,
      maker: row.maker as Maker,
      modality: row.modality as Modality,
      isFree: row.isFree,
      description: row.description ?? "",
      created: details.created ?? 0,
      contextLength: details.context_length ?? null,
      inputModalities: details.input_modalities ?? ["text"],
      endpoints: [],
    });
  }
  for (const e of endpointRows) {
    models.get(e.modelSlug)?.endpoints.push({
      id: e.id,
      modelSlug: e.modelSlug,
      provider: e.provider,
      adapter: e.adapter,
      upstreamModel: e.upstreamModel,
      baseUrls: e.baseUrls,
      pricing: e.pricing as Pricing,
      capabilities: e.capabilities as Capabilities,
      policies: e.policies as EndpointPolicies,
      regions: e.regions as DataRegion[],
      exemptFreeLimits: e.exemptFreeLimits,
      timeouts: e.timeouts ?? {},
    });
  }
  return indexCatalog(version, [...models.values()]);
}

const refresh = new RefreshAhead<"catalog">(CATALOG_REFRESH_AHEAD_MS, "catalog");

/**
 * The catalog, from the isolate cache when fresh; a copy in its last CATALOG_REFRESH_AHEAD_MS is read
 * again in `background`. Concurrent misses each read D1 (promises are not shared across requests:
 * Workers ties I/O to the request that started it).
 */
export async function getCatalog(d1: D1Database, background?: Background): Promise<LoadedCatalog> {
  const now = Date.now();
  if (cached && cached.expires > now) {
    refresh.check("catalog", cached.expires, now, background, (current) => reload(d1, current));
    return cached.value;
  }
  return reload(d1, refresh.guard());
}

async function reload(d1: D1Database, current: () => boolean): Promise<LoadedCatalog> {
  const value = await load(d1);
  if (current()) cached = { value, expires: Date.now() + CATALOG_TTL_MS };
  return value;
}
