// The zod schema of catalog/catalog.json: models, their provider endpoints, pricing, capabilities, policies.
// Imports only zod so scripts/catalog.mjs can load it outside the Worker.
import { z } from "zod";

export const CATALOG_REGIONS = ["global", "europe", "us"] as const;
export const MAKERS = ["vendor_a", "vendor_b", "vendor_c", "vendor_d", "other"] as const;
export const MODALITIES = ["embeddings", "speech", "video", "chat"] as const;
export const VIDEO_RESOLUTIONS = ["480p", "720p", "768p", "1080p", "1K", "2K", "4K"] as const;
export const ASPECT_RATIOS = ["16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9", "9:21"] as const;

/** A non-negative price in micro-dollars per unit; fractions allowed ($0.02 per million tokens = 0.02). */
const Micros = z.number().nonnegative();

/**
 * Chat token prices for a request whose prompt (cached and cache-written tokens included) is longer
 * than `above_prompt_tokens`: the whole request is priced at these (Gemini 2.5 Pro above 200k tokens,
 * Claude's 1M-token window above 200k, Grok 4 above 128k). Units absent here keep their usual price.
 */
const LongContextPricingSchema = z.strictObject({
  above_prompt_tokens: z.int().positive(),
  input_token: Micros,
  output_token: Micros,
  cache_read_token: Micros.optional(),
  cache_write_token: Micros.optional(),
  cache_write_1h_token: Micros.optional(),
});

/** Prices in micro-dollars per unit. Absent units are free for that endpoint. */
export const PricingSchema = z.strictObject({
  /** Per input token (embeddings, chat prompt). */
  input_token: Micros.optional(),
  /** Per output token (chat completion, reasoning included). */
  output_token: Micros.optional(),
  /** Per prompt token read from the provider's cache (chat); absent: input_token. */
  cache_read_token: Micros.optional(),
  /** Per prompt token written to the provider's cache (chat); absent: input_token. */
  cache_write_token: Micros.optional(),
  /** Per prompt token written to the cache for an hour (Anthropic's `ttl: "1h"`); absent: cache_write_token. */
  cache_write_1h_token: Micros.optional(),
  /** Chat prices past a prompt length (see LongContextPricingSchema). */
  long_context: LongContextPricingSchema.optional(),
  /** Per input character (speech). */
  character: Micros.optional(),
  /** Per second of generated video, by resolution; `default` applies to resolutions not listed. */
  video_second: z.record(z.string(), Micros).optional(),
  /** Flat price per successful request. */
  request: Micros.optional(),
});
export type Pricing = z.infer<typeof PricingSchema>;

/** Reasoning efforts, least to most (the request's `reasoning.effort` takes any of them). */
export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

/** What an endpoint can do; the router filters on these, adapters read the ones of their modality. */
export const CapabilitiesSchema = z.strictObject({
  // embeddings
  /** Native vector size; requests for other sizes need `dimensions_configurable`. */
  dimensions: z.int().min(1).optional(),
  /** Whether the endpoint can return vectors of another size (1..max_dimensions). */
  dimensions_configurable: z.boolean().optional(),
  max_dimensions: z.int().min(1).optional(),
  encodings: z.array(z.enum(["float", "base64"])).optional(),
  input_types: z.array(z.string().min(1)).optional(),
  /** Input kinds accepted: text, tokens, image... (multimodal parts). */
  inputs: z.array(z.enum(["text", "tokens", "image", "audio", "video", "file"])).optional(),
  max_batch: z.int().min(1).optional(),
  // speech
  voices: z.array(z.string().min(1)).optional(),
  voice_cloning: z.boolean().optional(),
  speed: z.boolean().optional(),
  formats: z.array(z.enum(["mp3", "pcm"])).optional(),
  // video
  audio_generation: z.boolean().optional(),
  frame_images: z.array(z.enum(["first_frame", "last_frame"])).optional(),
  references: z.array(z.enum(["image", "audio", "video"])).optional(),
  durations: z.array(z.int().min(1)).optional(),
  resolutions: z.array(z.enum(VIDEO_RESOLUTIONS)).optional(),
  aspect_ratios: z.array(z.enum(ASPECT_RATIOS)).optional(),
  seed: z.boolean().optional(),
  /** A video upscaling model (accepts creativity and upscale_factor; generation models refuse them). */
  upscale: z.boolean().optional(),
  // chat
  /** Most completion tokens the endpoint produces in one answer. */
  max_output_tokens: z.int().min(1).optional(),
  /** Request parameters the endpoint honours (OpenRouter's `supported_parameters` names). */
  parameters: z.array(z.string().min(1)).optional(),
  /**
   * The reasoning efforts the upstream takes (OpenAI's gpt-5 minimal..high, xAI's grok-3-mini low and high,
   * none for one that takes no effort); another effort is sent as the nearest it takes. Absent: as asked.
   */
  reasoning_efforts: z.array(z.enum(REASONING_EFFORTS)).optional(),
});
export type Capabilities = z.infer<typeof CapabilitiesSchema>;

export const EndpointPoliciesSchema = z.strictObject({
  /** Zero data retention: the provider keeps nothing once it has answered. */
  zdr: z.boolean(),
  trains_on_data: z.boolean(),
  publishes_prompts: z.boolean(),
});
export type EndpointPolicies = z.infer<typeof EndpointPoliciesSchema>;

/** Per-endpoint attempt deadline (milliseconds); absent, the modality default in src/inference/deadlines.ts. */
export const TimeoutsSchema = z.strictObject({
  first_byte_ms: z.int().min(1).optional(),
});

export const CatalogEndpointSchema = z.strictObject({
  /** Stable and unique across the catalog, e.g. `sandbox/embed-small@sandbox`. */
  id: z.string().min(1),
  provider: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "provider slugs are lowercase, digits and dashes"),
  /** Which adapter in src/providers/registry.ts speaks this endpoint's wire format. */
  adapter: z.string().min(1),
  upstream_model: z.string().min(1),
  /** Base URL per data region; `default` for regions not listed. */
  base_urls: z.object({ default: z.string().min(1) }).catchall(z.string().min(1)),
  pricing: PricingSchema,
  capabilities: CapabilitiesSchema,
  policies: EndpointPoliciesSchema,
  /** Data regions whose requests this endpoint may serve. */
  regions: z.array(z.enum(CATALOG_REGIONS)).min(1),
  exempt_free_limits: z.boolean().default(false),
  timeouts: TimeoutsSchema.optional(),
});
export type CatalogEndpoint = z.infer<typeof CatalogEndpointSchema>;

export const CatalogModelSchema = z.strictObject({
  /** `maker/name`, with `:free` for the free variant. */
  slug: z.string().regex(/^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._-]*(:free)?$/, "slug is maker/name[:free]"),
  canonical_slug: z.string().min(1),
  name: z.string().min(1),
  maker: z.enum(MAKERS),
  modality: z.enum(MODALITIES),
  description: z.string().default(""),
  /** Unix seconds the model was added (GET /models `created`). */
  created: z.int().min(0),
  context_length: z.int().min(1).nullable().default(null),
  /** Input modalities beyond text (e.g. image for multimodal embeddings, image for image-to-video). */
  input_modalities: z.array(z.enum(["text", "image", "audio", "video", "file"])).default(["text"]),
  endpoints: z.array(CatalogEndpointSchema).min(1),
});
export type CatalogModel = z.infer<typeof CatalogModelSchema>;

export const CatalogSchema = z
  .strictObject({
    /** Bumped on every change; stored on each row so a reload is visible. */
    version: z.string().min(1),
    models: z.array(CatalogModelSchema).min(1),
  })
  .superRefine((catalog, ctx) => {
    const slugs = new Set<string>();
    const endpointIds = new Set<string>();
    catalog.models.forEach((model, i) => {
      if (slugs.has(model.slug))
        ctx.addIssue({ code: "custom", path: ["models", i, "slug"], message: "duplicate slug" });
      slugs.add(model.slug);
      model.endpoints.forEach((endpoint, j) => {
        const path = ["models", i, "endpoints", j];
        if (endpointIds.has(endpoint.id)) {
          ctx.addIssue({ code: "custom", path: [...path, "id"], message: "duplicate endpoint id" });
        }
        endpointIds.add(endpoint.id);
        const freeModel = model.slug.endsWith(":free");
        const priced = Object.values(endpoint.pricing).some((p) =>
          typeof p === "number" ? p > 0 : Object.values(p ?? {}).some((v) => v > 0),
        );
        if (freeModel && priced) {
          ctx.addIssue({ code: "custom", path: [...path, "pricing"], message: ":free models cost nothing" });
        }
      });
    });
  });
export type Catalog = z.infer<typeof CatalogSchema>;
export type CatalogInput = z.input<typeof CatalogSchema>;
