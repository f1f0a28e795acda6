// Catalog discovery the SDK speaks beyond GET /models: providers, a model's endpoints, counts, the key's own models.
import { z } from "@hono/zod-openapi";
import { getCatalog } from "../catalog/cache";
import { catalogProviders, providerDisplayName } from "../catalog/providers";
import {
  type CatalogEndpointEntry,
  type CatalogModelEntry,
  findModel,
  OUTPUT_MODALITY,
} from "../catalog/types";
import { notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { guardrailRefusal, regionRefusal } from "../routing/filters";
import {
  ModelEndpointsParamSchema,
  ModelEndpointsSchema,
  ModelSchema,
  ModelsCountSchema,
  ModelsListSchema,
  ModelsUserQuerySchema,
  OutputModalitiesQuerySchema,
  ProvidersListSchema,
  type PublicEndpointSchema,
} from "../schemas/models";
import { architectureOf, endpointParametersOf, modelsListBody, pricingOf, toModel } from "./model-shapes";

const common = { method: "get" as const, security: [{ bearer: [] }] };

const listProviders = apiRoute({
  operationId: "listProviders",
  ...common,
  path: "/providers",
  tags: ["Providers"],
  summary: "List the providers the catalog routes to",
  responses: { 200: jsonContent(ProvidersListSchema, "Providers") },
});

const countModels = apiRoute({
  operationId: "listModelsCount",
  ...common,
  path: "/models/count",
  tags: ["Models"],
  summary: "Count the catalog's models, optionally by output modality",
  request: { query: OutputModalitiesQuerySchema },
  responses: { 200: jsonContent(ModelsCountSchema, "The count") },
});

const listUserModels = apiRoute({
  operationId: "listModelsUser",
  ...common,
  path: "/models/user",
  tags: ["Models"],
  summary: "List the models this key may use here: its guardrails and this deployment's data region applied",
  request: { query: ModelsUserQuerySchema },
  responses: { 200: jsonContent(ModelsListSchema, "Models") },
});

const listEndpoints = apiRoute({
  operationId: "listEndpoints",
  ...common,
  path: "/models/{author}/{slug}/endpoints",
  tags: ["Endpoints"],
  summary: "List a model's provider endpoints with their prices and limits",
  request: { params: ModelEndpointsParamSchema },
  responses: {
    200: jsonContent(ModelEndpointsSchema, "The model and its endpoints"),
  },
});

const getModel = apiRoute({
  operationId: "getModel",
  ...common,
  path: "/model/{author}/{slug}",
  tags: ["Models"],
  summary: "Get one model as GET /models lists it",
  request: { params: ModelEndpointsParamSchema },
  responses: { 200: jsonContent(z.object({ data: ModelSchema }).openapi("ModelResponse"), "The model") },
});

/** The catalog's model `author/slug` (its canonical slug also finds it), or 404. */
async function modelOf(db: D1Database, author: string, slug: string): Promise<CatalogModelEntry> {
  const m = findModel(await getCatalog(db), `${author}/${slug}`);
  if (!m) throw notFound(`Model '${author}/${slug}' not found`);
  return m;
}

/** Models whose output modality is listed; absent or `all` keeps every model. */
function byOutput(models: CatalogModelEntry[], modalities: string | undefined): CatalogModelEntry[] {
  if (!modalities || modalities === "all") return models;
  const wanted = modalities.split(",");
  return models.filter((m) => wanted.includes(OUTPUT_MODALITY[m.modality]));
}

function toEndpoint(m: CatalogModelEntry, e: CatalogEndpointEntry): z.infer<typeof PublicEndpointSchema> {
  const parameters = endpointParametersOf(m, e);
  const tools = parameters.includes("tools");
  const name = providerDisplayName(e.provider);
  return {
    name: `${name} | ${m.slug}`,
    model_id: m.slug,
    model_name: m.name,
    context_length: m.contextLength ?? 0,
    pricing: pricingOf(m, e),
    provider_name: name,
    tag: e.provider,
    quantization: null,
    max_completion_tokens: e.capabilities.max_output_tokens ?? null,
    max_prompt_tokens: null,
    supported_parameters: parameters,
    supports_implicit_caching: e.pricing.cache_read_token !== undefined,
    supports_tool_choice: {
      auto: tools,
      function: tools,
      none: tools,
      required: tools && parameters.includes("tool_choice"),
    },
    status: 0,
    // The gateway keeps no uptime or latency statistics of its own.
    uptime_last_5m: null,
    uptime_last_30m: null,
    uptime_last_1d: null,
    latency_last_30m: null,
    throughput_last_30m: null,
    data_regions: e.regions,
  };
}

export const discoveryRoutes = createRouter()
  .openapi(listProviders, async (c) => {
    const providers = catalogProviders(await getCatalog(c.env.DB));
    const data = providers.map((p) => ({
      ...p,
      // The catalog records no provider documents or locations.
      privacy_policy_url: null,
      terms_of_service_url: null,
      status_page_url: null,
      datacenters: null,
      headquarters: null,
    }));
    return c.json({ data }, 200);
  })
  .openapi(countModels, async (c) => {
    const models = byOutput((await getCatalog(c.env.DB)).models, c.req.valid("query").output_modalities);
    return c.json({ data: { count: models.length } }, 200);
  })
  .openapi(listUserModels, async (c) => {
    const q = c.req.valid("query");
    const { policy } = c.get("auth");
    const region = c.env.REGION;
    // A model is the key's when at least one of its endpoints passes the key's guardrails and serves this region.
    const usable = byOutput((await getCatalog(c.env.DB)).models, q.output_modalities).filter((m) =>
      m.endpoints.some((e) => guardrailRefusal(policy, m, e) === null && regionRefusal(e, region) === null),
    );
    const page = usable.slice(q.offset, q.offset + q.limit);
    const more = new URLSearchParams({ offset: String(q.offset + q.limit), limit: String(q.limit) });
    if (q.output_modalities) more.set("output_modalities", q.output_modalities);
    const next = q.offset + q.limit < usable.length ? `/api/v1/models/user?${more}` : null;
    return c.json({ ...modelsListBody(page), total_count: usable.length, links: { next } }, 200);
  })
  .openapi(getModel, async (c) => {
    const { author, slug } = c.req.valid("param");
    return c.json({ data: toModel(await modelOf(c.env.DB, author, slug)) }, 200);
  })
  .openapi(listEndpoints, async (c) => {
    const { author, slug } = c.req.valid("param");
    const m = await modelOf(c.env.DB, author, slug);
    const arch = architectureOf(m);
    return c.json(
      {
        data: {
          id: m.slug,
          name: m.name,
          created: m.created,
          description: m.description,
          architecture: {
            modality: arch.modality,
            input_modalities: arch.input_modalities,
            output_modalities: arch.output_modalities,
            tokenizer: arch.tokenizer ?? null,
            instruct_type: null,
          },
          endpoints: m.endpoints.map((e) => toEndpoint(m, e)),
        },
      },
      200,
    );
  });
