// POST /embeddings: the request body (field names as @openrouter/sdk sends them) and the response shape.
import { z } from "@hono/zod-openapi";
import { ProviderPreferencesSchema } from "../routing/preferences";
import { FallbackModelsSchema } from "./common";
import { EndUserSchema, SessionIdSchema, TraceSchema } from "./media-common";

/** Inputs per request; larger batches must be split by the caller. */
export const MAX_EMBEDDING_INPUTS = 2048;
const MAX_TEXT_CHARS = 200_000;

const Text = z.string().max(MAX_TEXT_CHARS);
/** Tokens per token input: above every embedding model's window. */
export const MAX_INPUT_TOKENS = 32_768;
/** Parts per multimodal input. */
const MAX_PARTS = 32;

const isToken = (t: unknown) => typeof t === "number" && Number.isInteger(t) && t >= 0;
/**
 * One input as token ids. Checked in one loop with one issue for the whole list: a schema per token
 * made an issue per bad token, and a body holds hundreds of thousands of them.
 */
const TokenList = z
  .custom<number[]>(
    (v) => Array.isArray(v) && v.length >= 1 && v.length <= MAX_INPUT_TOKENS && v.every(isToken),
    `token inputs are 1 to ${MAX_INPUT_TOKENS} non-negative integers`,
  )
  .openapi({
    type: "array",
    items: { type: "integer", minimum: 0 },
    minItems: 1,
    maxItems: MAX_INPUT_TOKENS,
  });

export const EmbeddingsContentPartSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: Text.min(1, "a text part must not be empty") }),
  z.object({ type: z.literal("image_url"), image_url: z.object({ url: z.string().min(1) }) }),
  z.object({
    type: z.literal("input_audio"),
    input_audio: z.object({ data: z.string().min(1), format: z.string().optional() }),
  }),
  z.object({ type: z.literal("input_video"), video_url: z.object({ url: z.string().min(1) }) }),
  z.object({
    type: z.literal("file"),
    file: z.object({ file_data: z.string().optional(), filename: z.string().optional() }),
  }),
]);

export const EmbeddingsInputSchema = z
  .union([
    Text.min(1, "input must not be empty"),
    z
      .array(Text.min(1, "an input text must not be empty"))
      .min(1, "input must have at least 1 item")
      .max(MAX_EMBEDDING_INPUTS),
    TokenList,
    z.array(TokenList).min(1).max(MAX_EMBEDDING_INPUTS),
    z
      .array(z.object({ content: z.array(EmbeddingsContentPartSchema).min(1).max(MAX_PARTS) }))
      .min(1)
      .max(MAX_EMBEDDING_INPUTS),
  ])
  .openapi({ description: "Text, array of texts, token array(s), or multimodal inputs; at least 1 item" });

export const EmbeddingsRequestSchema = z
  .object({
    input: EmbeddingsInputSchema,
    model: z.string().min(1),
    /** Fallback models, tried in order when the model's providers all fail. */
    models: FallbackModelsSchema.optional(),
    dimensions: z.int().min(1).max(65_536).optional(),
    encoding_format: z.enum(["float", "base64"]).optional(),
    input_type: z.string().min(1).max(64).optional(),
    provider: ProviderPreferencesSchema.nullish(),
    trace: TraceSchema.optional(),
    session_id: SessionIdSchema.optional(),
    user: EndUserSchema.optional(),
  })
  .openapi("EmbeddingsRequest");
export type EmbeddingsRequestBody = z.infer<typeof EmbeddingsRequestSchema>;

export const EmbeddingsResponseSchema = z
  .object({
    object: z.literal("list"),
    data: z.array(
      z.object({
        object: z.literal("embedding"),
        index: z.int(),
        embedding: z.union([z.array(z.number()), z.string()]).openapi({
          description: "Floats, or with encoding_format base64 the little-endian float32 bytes in base64",
        }),
      }),
    ),
    model: z.string(),
    id: z.string(),
    provider: z.string().optional(),
    usage: z.object({
      prompt_tokens: z.int(),
      total_tokens: z.int(),
      cost: z.number().optional(),
      is_byok: z.boolean().optional(),
    }),
  })
  .openapi("EmbeddingsResponse");
