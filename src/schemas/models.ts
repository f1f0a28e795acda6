// Model discovery shapes (GET /models, /embeddings/models, /videos/models) as @openrouter/sdk parses them.
import { z } from "@hono/zod-openapi";

const UsdPerUnit = z.string().openapi({ description: "USD per unit, as a decimal string" });

/** The fields every model listing shares. */
const ModelIdentity = {
  id: z.string(),
  canonical_slug: z.string(),
  name: z.string(),
  created: z.int(),
  description: z.string(),
};

export const ModelSchema = z
  .object({
    ...ModelIdentity,
    context_length: z.int().nullable(),
    architecture: z.object({
      modality: z.string().nullable(),
      input_modalities: z.array(z.string()),
      output_modalities: z.array(z.string()),
      tokenizer: z.string().optional().openapi({ description: "Model family (chat models)" }),
    }),
    pricing: z.object({
      prompt: UsdPerUnit.openapi({
        description: "USD per input token (embeddings, chat) or character (speech)",
      }),
      completion: UsdPerUnit.openapi({ description: "USD per output token (chat, reasoning included)" }),
      input_cache_read: UsdPerUnit.optional().openapi({
        description: "USD per prompt token read from cache",
      }),
      input_cache_write: UsdPerUnit.optional().openapi({
        description: "USD per prompt token written to cache",
      }),
      request: UsdPerUnit.optional(),
    }),
    top_provider: z.object({
      context_length: z.int().nullable(),
      max_completion_tokens: z.int().nullable(),
      is_moderated: z.boolean(),
    }),
    per_request_limits: z.null(),
    supported_parameters: z.array(z.string()),
    default_parameters: z.null(),
    supported_voices: z.array(z.string()).nullable(),
    links: z.object({ details: z.string() }),
  })
  .openapi("Model");

export const ModelsListSchema = z
  .object({
    data: z.array(ModelSchema),
    links: z.object({ next: z.string().nullable() }),
    total_count: z.int(),
  })
  .openapi("ModelsList");

export const VideoModelSchema = z
  .object({
    ...ModelIdentity,
    allowed_passthrough_parameters: z.array(z.string()),
    creativity: z.array(z.int()).nullable(),
    generate_audio: z.boolean().nullable(),
    seed: z.boolean().nullable(),
    pricing_skus: z.record(z.string(), z.string()).nullable(),
    supported_aspect_ratios: z.array(z.string()).nullable(),
    supported_durations: z.array(z.int()).nullable(),
    supported_frame_images: z.array(z.string()).nullable(),
    supported_resolutions: z.array(z.string()).nullable(),
    supported_sizes: z.array(z.string()).nullable(),
    upscale_factor: z.object({ min: z.number().nullable(), max: z.number().nullable() }).nullable(),
  })
  .openapi("VideoModel");

export const VideoModelsListSchema = z.object({ data: z.array(VideoModelSchema) }).openapi("VideoModelsList");

// ---- GET /providers, /models/count, /models/user, /models/{author}/{slug}/endpoints ----

export const ProviderSchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    privacy_policy_url: z.string().nullable(),
    terms_of_service_url: z.string().nullable(),
    status_page_url: z.string().nullable(),
    datacenters: z.array(z.string()).nullable(),
    headquarters: z.string().nullable(),
  })
  .openapi("Provider");

export const ProvidersListSchema = z.object({ data: z.array(ProviderSchema) }).openapi("ProvidersList");

export const OUTPUT_MODALITIES = ["text", "embeddings", "audio", "video"] as const;
/**
 * Modalities OpenRouter lists (and `@openrouter/sdk` documents) that this gateway serves no model of:
 * accepted, matching nothing, so a client asking for them gets an empty list rather than a 400.
 * `speech` names what this catalog calls `audio` (text to speech) and is read as it.
 */
const OPENROUTER_ONLY_MODALITIES = ["image", "rerank", "decisions", "transcription", "speech"];
const KNOWN_MODALITIES: readonly string[] = [...OUTPUT_MODALITIES, ...OPENROUTER_ONLY_MODALITIES];

export const OutputModalitiesQuerySchema = z.object({
  output_modalities: z
    .string()
    .regex(/^[a-z]+(,[a-z]+)*$/, "must be a comma-separated list of modalities, or 'all'")
    .refine(
      (s) => s === "all" || s.split(",").every((m) => KNOWN_MODALITIES.includes(m)),
      `each modality must be one of ${KNOWN_MODALITIES.join(", ")} (or the whole value 'all')`,
    )
    .transform((s) => (s === "all" ? s : s.replace(/\bspeech\b/g, "audio")))
    .optional()
    .openapi({ param: { name: "output_modalities", in: "query" }, description: "Default: all" }),
});

/** A page of a model list (`@openrouter/sdk` pages GET /embeddings/models and /models/user with these). */
export const ModelsPageQuerySchema = z.object({
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .openapi({ param: { name: "offset", in: "query" } }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(500)
    .openapi({ param: { name: "limit", in: "query" } }),
});

export const ModelsUserQuerySchema = OutputModalitiesQuerySchema.extend(ModelsPageQuerySchema.shape);

export const ModelsCountSchema = z.object({ data: z.object({ count: z.int() }) }).openapi("ModelsCount");

const pathParam = (name: string) =>
  z
    .string()
    .regex(/^[a-z0-9][a-z0-9._:-]*$/, `${name} is lowercase letters, digits, '.', '_', ':' and '-'`)
    .max(128)
    .openapi({ param: { name, in: "path" } });

export const ModelEndpointsParamSchema = z.object({ author: pathParam("author"), slug: pathParam("slug") });

export const PublicEndpointSchema = z
  .object({
    name: z.string(),
    model_id: z.string(),
    model_name: z.string(),
    context_length: z.int(),
    pricing: z.object({
      prompt: UsdPerUnit,
      completion: UsdPerUnit,
      input_cache_read: UsdPerUnit.optional(),
      input_cache_write: UsdPerUnit.optional(),
      request: UsdPerUnit.optional(),
    }),
    provider_name: z.string(),
    tag: z.string().openapi({ description: "The provider's slug, as provider preferences name it" }),
    quantization: z.string().nullable(),
    max_completion_tokens: z.int().nullable(),
    max_prompt_tokens: z.int().nullable(),
    supported_parameters: z.array(z.string()),
    supports_implicit_caching: z.boolean(),
    supports_tool_choice: z.object({
      auto: z.boolean(),
      function: z.boolean(),
      none: z.boolean(),
      required: z.boolean(),
    }),
    status: z.int().openapi({ description: "0: operational" }),
    uptime_last_5m: z.number().nullable(),
    uptime_last_30m: z.number().nullable(),
    uptime_last_1d: z.number().nullable(),
    latency_last_30m: z.null(),
    throughput_last_30m: z.null(),
    data_regions: z.array(z.string()).openapi({ description: "Gateway extension: data regions it serves" }),
  })
  .openapi("PublicEndpoint");

export const ModelEndpointsSchema = z
  .object({
    data: z.object({
      id: z.string(),
      name: z.string(),
      created: z.int(),
      description: z.string(),
      architecture: z.object({
        modality: z.string().nullable(),
        input_modalities: z.array(z.string()),
        output_modalities: z.array(z.string()),
        tokenizer: z.string().nullable(),
        instruct_type: z.string().nullable(),
      }),
      endpoints: z.array(PublicEndpointSchema),
    }),
  })
  .openapi("ModelEndpoints");

// ---- GET /models query (the filters @openrouter/sdk's models.list sends) ----

/** A comma-separated list of lowercase words (`tools,response_format`). */
const wordList = (name: string, description: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$/, `${name} must be a comma-separated list`)
    .optional()
    .openapi({ param: { name, in: "query" }, description });

const usdPerMillion = (name: string, description: string) =>
  z.coerce
    .number()
    .min(0)
    .optional()
    .openapi({ param: { name, in: "query" }, description: `${description}, USD per million units` });

const days = (name: string, description: string) =>
  z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ param: { name, in: "query" }, description });

/** Sorts the catalog can answer; the rest order by data the gateway does not keep (see MODEL_SORTS_UNMEASURED). */
export const MODEL_SORTS = [
  "pricing-low-to-high",
  "pricing-high-to-low",
  "context-high-to-low",
  "newest",
] as const;
/** Sorts by usage, performance or benchmark scores: no model has them here, so the default order stands. */
export const MODEL_SORTS_UNMEASURED = [
  "throughput-high-to-low",
  "latency-low-to-high",
  "most-popular",
  "top-weekly",
  "intelligence-high-to-low",
  "coding-high-to-low",
  "agentic-high-to-low",
  "design-arena-elo-high-to-low",
] as const;

/**
 * Filters on data this gateway does not keep (use-case categories, distillability, benchmark indices,
 * tool-call success rates): a request naming one is refused, never answered with a list that ignores it.
 */
export const MODEL_FILTERS_UNTRACKED = [
  "category",
  "distillable",
  "min_intelligence_index",
  "max_intelligence_index",
  "min_coding_index",
  "max_coding_index",
  "min_agentic_index",
  "max_agentic_index",
  "min_tool_success_rate",
  "max_tool_success_rate",
] as const;

const untracked = (name: (typeof MODEL_FILTERS_UNTRACKED)[number]) =>
  z
    .string()
    .optional()
    .openapi({ param: { name, in: "query" }, description: "Not tracked by this gateway: refused with 400" });

export const ModelsQuerySchema = OutputModalitiesQuerySchema.extend({
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({
      param: { name: "offset", in: "query" },
      description: "With neither offset nor limit: every model",
    }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .openapi({ param: { name: "limit", in: "query" }, description: "Default 500 when offset is given" }),
  supported_parameters: wordList("supported_parameters", "Models supporting every listed parameter"),
  input_modalities: z
    .string()
    .regex(
      /^(text|image|audio|video|file)(,(text|image|audio|video|file))*$/,
      "input_modalities must be a comma-separated list of text, image, audio, video, file",
    )
    .optional()
    .openapi({
      param: { name: "input_modalities", in: "query" },
      description: "Models reading every listed kind",
    }),
  q: z
    .string()
    .max(200)
    .optional()
    .openapi({ param: { name: "q", in: "query" }, description: "Words in the id, name or description" }),
  context: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ param: { name: "context", in: "query" }, description: "Minimum context length (tokens)" }),
  min_price: usdPerMillion("min_price", "Minimum prompt price"),
  max_price: usdPerMillion("max_price", "Maximum prompt price"),
  min_output_price: usdPerMillion("min_output_price", "Minimum completion price"),
  max_output_price: usdPerMillion("max_output_price", "Maximum completion price"),
  arch: z
    .string()
    .max(100)
    .optional()
    .openapi({
      param: { name: "arch", in: "query" },
      description: "Model family (`architecture.tokenizer`)",
    }),
  model_authors: wordList("model_authors", "Authors: the id's part before the slash"),
  providers: z
    .string()
    .max(1000)
    .optional()
    .openapi({
      param: { name: "providers", in: "query" },
      description: "Hosting providers, by slug or name",
    }),
  zdr: z
    .enum(["true"])
    .optional()
    .openapi({
      param: { name: "zdr", in: "query" },
      description: "Only models with a zero-data-retention endpoint",
    }),
  region: z
    .enum(["eu", "europe", "us"])
    .optional()
    .openapi({
      param: { name: "region", in: "query" },
      description:
        "Models with an endpoint serving the region (`eu` as OpenRouter names it, or `europe` as this API's data regions do)",
    }),
  min_age_days: days("min_age_days", "Minimum days since the model's creation"),
  max_age_days: days("max_age_days", "Maximum days since the model's creation"),
  sort: z
    .enum([...MODEL_SORTS, ...MODEL_SORTS_UNMEASURED])
    .optional()
    .openapi({ param: { name: "sort", in: "query" } }),
  category: untracked("category"),
  distillable: untracked("distillable"),
  min_intelligence_index: untracked("min_intelligence_index"),
  max_intelligence_index: untracked("max_intelligence_index"),
  min_coding_index: untracked("min_coding_index"),
  max_coding_index: untracked("max_coding_index"),
  min_agentic_index: untracked("min_agentic_index"),
  max_agentic_index: untracked("max_agentic_index"),
  min_tool_success_rate: untracked("min_tool_success_rate"),
  max_tool_success_rate: untracked("max_tool_success_rate"),
});
export type ModelsQuery = z.infer<typeof ModelsQuerySchema>;
