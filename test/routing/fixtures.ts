// Small in-memory catalogs and guardrails for the pure routing tests.
import type { CatalogEndpointEntry, CatalogModelEntry } from "../../src/catalog/types";
import { indexCatalog } from "../../src/catalog/types";
import { effectivePolicy, type GuardrailRow } from "../../src/guardrails/policy";
import type { ByokRecord } from "../../src/routing/byok";
import type { RouteContext } from "../../src/routing/plan";

export function endpoint(provider: string, over: Partial<CatalogEndpointEntry> = {}): CatalogEndpointEntry {
  return {
    id: `${provider}-${crypto.randomUUID()}`,
    modelSlug: "m",
    provider,
    adapter: "openai-compatible",
    upstreamModel: "up",
    baseUrls: { default: `https://${provider}.example/v1`, europe: `https://eu.${provider}.example/v1` },
    pricing: { input_token: 0.1 },
    capabilities: { dimensions: 8 },
    policies: { zdr: true, trains_on_data: false, publishes_prompts: false },
    regions: ["global", "europe", "us"],
    exemptFreeLimits: false,
    timeouts: {},
    ...over,
  };
}

export function model(
  slug: string,
  endpoints: CatalogEndpointEntry[],
  over: Partial<CatalogModelEntry> = {},
): CatalogModelEntry {
  return {
    slug,
    canonicalSlug: `${slug.replace(/:free$/, "")}-2026`,
    name: slug,
    maker: "vendor_a",
    modality: "embeddings",
    isFree: slug.endsWith(":free"),
    description: "",
    created: 0,
    contextLength: null,
    inputModalities: ["text"],
    endpoints,
    ...over,
  };
}

export function guardrailRow(over: Partial<GuardrailRow> = {}): GuardrailRow {
  return {
    id: crypto.randomUUID(),
    accountId: "a",
    workspaceId: "w",
    name: "G",
    description: null,
    limitMicros: null,
    resetInterval: null,
    includeByokInBudgets: false,
    allowedDataRegions: null,
    allowedModels: null,
    ignoredModels: null,
    allowedProviders: null,
    ignoredProviders: null,
    contentFilterBuiltins: null,
    contentFilters: null,
    enableFreeModelPublication: true,
    enableFreeModelTraining: true,
    enablePaidModelTraining: true,
    enforceZdr: null,
    enforceZdrVendorA: false,
    enforceZdrVendorB: false,
    enforceZdrVendorC: false,
    enforceZdrVendorD: false,
    enforceZdrOther: false,
    version: 1,
    createdAt: "",
    updatedAt: "",
    ...over,
  } as GuardrailRow;
}

export function byokRow(provider: string, over: Partial<ByokRecord> = {}): ByokRecord {
  return {
    id: crypto.randomUUID(),
    accountId: "a",
    workspaceId: "w",
    provider,
    name: provider,
    label: "x",
    ciphertext: "",
    iv: "",
    keyVersion: "1",
    disabled: false,
    isByokOnly: false,
    isFallback: false,
    isRequired: false,
    sortOrder: 0,
    allowedApiKeyHashes: null,
    allowedModels: null,
    allowedUserIds: null,
    createdAt: "",
    updatedAt: "",
    ...over,
  } as ByokRecord;
}

export function context(
  models: CatalogModelEntry[],
  over: Partial<RouteContext> & { rows?: GuardrailRow[] } = {},
): RouteContext {
  const { rows = [], ...rest } = over;
  return {
    catalog: indexCatalog("test", models),
    region: "global",
    guardrails: rows.map((g) => ({ id: g.id, name: g.name, policy: effectivePolicy([g]) })),
    byok: [],
    caller: { keyHash: "kh", userId: "u1" },
    platformAvailable: () => true,
    ...rest,
  };
}
