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
