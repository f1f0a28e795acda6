// GET /generation: one generation record as OpenRouter answers it (names and nullability as @openrouter/sdk parses them).
import { z } from "@hono/zod-openapi";
import type { Modality } from "../catalog/types";
import { DataRegionSchema } from "./common";

export const GenerationQuerySchema = z.object({
  id: z
    .string()
    .min(1, "id is required")
    .max(128)
    .openapi({ param: { name: "id", in: "query" }, example: "gen-1767225600-AbCdEfGhIjKlMnOpQrSt" }),
});

/** `api_type` by the record's modality (the SDK's enum: completions, embeddings, tts, video...). */
export const API_TYPES = {
  chat: "completions",
  embeddings: "embeddings",
  speech: "tts",
  video: "video",
} as const satisfies Record<Modality, string>;

export const ProviderResponseSchema = z
  .object({
    endpoint_id: z.string().optional(),
    provider_name: z.string().optional(),
    model_permaslug: z.string().optional(),
    is_byok: z.boolean().optional(),
    latency: z
      .number()
      .optional()
      .openapi({ description: "Milliseconds until the attempt answered or failed" }),
    status: z
      .int()
      .nullable()
      .openapi({ description: "The provider's HTTP status; null when none came (timeout, network)" }),
  })
  .openapi("GenerationProviderResponse");

const nullableInt = z.int().nullable();
const unknownString = z.string().nullable();

export const GenerationSchema = z
  .object({
    id: z.string(),
    model: z.string(),
    provider_name: z.string().nullable(),
    is_byok: z.boolean(),
    streamed: z.boolean().nullable(),
    cancelled: z.boolean().nullable(),
    finish_reason: z.string().nullable(),
    native_finish_reason: z.string().nullable(),
    latency: z
      .number()
      .nullable()
      .openapi({ description: "Milliseconds to the served attempt's first byte, failover included" }),
    generation_time: z.number().nullable().openapi({
      description:
        "Milliseconds from the start of the attempt that served to the end of the answer (its last byte, for a stream)",
    }),
    moderation_latency: z.number().nullable(),
    tokens_prompt: nullableInt,
    tokens_completion: nullableInt,
    native_tokens_prompt: nullableInt,
    native_tokens_completion: nullableInt,
    native_tokens_completion_images: nullableInt,
    native_tokens_reasoning: nullableInt,
    native_tokens_cached: nullableInt,
    num_media_prompt: nullableInt,
    num_media_completion: nullableInt,
    num_input_audio_prompt: nullableInt,
    num_search_results: nullableInt,
    num_fetches: nullableInt,
    total_cost: z.number().openapi({ description: "What the generation cost, USD" }),
    usage: z.number().openapi({ description: "What was charged to credits, USD (0 for BYOK)" }),
    upstream_inference_cost: z
      .number()
      .nullable()
      .openapi({ description: "BYOK: what the provider charged the key's owner, USD" }),
    cache_discount: z.number().nullable(),
    provider_responses: z.array(ProviderResponseSchema).nullable(),
    created_at: z.string(),
    data_region: DataRegionSchema,
    api_type: z.enum(["completions", "responses", "messages", "embeddings", "tts", "video"]).nullable(),
    workspace_id: z.string().nullable(),
    external_user: z.string().nullable(),
    session_id: z
      .string()
      .nullable()
      .openapi({ description: "The request's `session_id`, or its `x-session-id` header" }),
    origin: z.string(),
    app_id: nullableInt,
    http_referer: unknownString,
    user_agent: unknownString,
    preset_id: unknownString,
    request_id: unknownString.openapi({
      description: "The X-Request-Id of the request that made this generation (the key to its log line)",
    }),
    router: unknownString,
    service_tier: unknownString,
    upstream_id: unknownString,
    web_search_engine: unknownString,
  })
  .openapi("Generation");
export type Generation = z.infer<typeof GenerationSchema>;
