// POST /messages: the Anthropic Messages request as Anthropic clients send it, plus the gateway's routing
// fields (provider, models or fallbacks, preset), and the `message` object it answers.
import { z } from "@hono/zod-openapi";
import { ChatRequestSchema } from "./chat";
import { boundedJson, FallbackModelSchema, MAX_ITEMS, PromptTextSchema } from "./common";
import { BASE64, FetchableUrlSchema, SessionIdSchema, TraceSchema } from "./media-common";

const MAX_MESSAGES = 10_000;
/** Fallback models a Messages request may name (`models` or `fallbacks`). */
export const MAX_MESSAGES_FALLBACKS = 3;

const Text = PromptTextSchema;
const Bounded = <T extends z.ZodType>(schema: T) =>
  boundedJson(schema, { maxDepth: 32, maxChars: 1_000_000 });

const CacheControlSchema = z
  .object({ type: z.literal("ephemeral"), ttl: z.string().max(8).optional() })
  .openapi("AnthropicCacheControl");
const CacheControl = CacheControlSchema.nullish();

const TextBlock = z.object({
  type: z.literal("text"),
  text: Text,
  cache_control: CacheControl,
  citations: z.array(z.unknown()).max(MAX_ITEMS).nullish(),
});

const Base64Data = z
  .string()
  .min(1, "must not be empty")
  .regex(BASE64, "must be base64: the standard alphabet, without a data: prefix or line breaks");

const ImageSource = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("base64"),
    media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
    data: Base64Data,
  }),
  z.object({ type: z.literal("url"), url: FetchableUrlSchema }),
]);

const ImageBlock = z.object({ type: z.literal("image"), source: ImageSource, cache_control: CacheControl });

const DocumentSource = z.discriminatedUnion("type", [
  z.object({ type: z.literal("base64"), media_type: z.literal("application/pdf"), data: Base64Data }),
  z.object({ type: z.literal("text"), media_type: z.literal("text/plain"), data: Text }),
  z.object({ type: z.literal("url"), url: FetchableUrlSchema }),
  z.object({
    type: z.literal("content"),
    content: z.union([Text, z.array(z.union([TextBlock, ImageBlock])).max(MAX_ITEMS)]),
  }),
]);

const DocumentBlock = z.object({
  type: z.literal("document"),
  source: DocumentSource,
  title: z.string().nullish(),
  context: z.string().nullish(),
  citations: z.unknown().optional(),
  cache_control: CacheControl,
});

const ToolUseBlock = z.object({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: Bounded(z.record(z.string(), z.unknown())),
  cache_control: CacheControl,
});

const ToolResultBlock = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z
    .union([
      Text,
      z.array(z.discriminatedUnion("type", [TextBlock, ImageBlock, DocumentBlock])).max(MAX_ITEMS),
    ])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: CacheControl,
});

/** Signed thinking: replayed to the provider byte for byte, so both strings are kept exactly. */
const ThinkingBlock = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
const RedactedThinkingBlock = z.object({ type: z.literal("redacted_thinking"), data: z.string() });

export const MessagesContentBlockSchema = z
  .discriminatedUnion("type", [
    TextBlock,
    ImageBlock,
    DocumentBlock,
    ToolUseBlock,
    ToolResultBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
  ])
  .openapi("AnthropicContentBlock");
export type MessagesContentBlock = z.infer<typeof MessagesContentBlockSchema>;

export const MessagesMessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.union([Text, z.array(MessagesContentBlockSchema).max(MAX_ITEMS)]),
});
export type MessagesMessage = z.infer<typeof MessagesMessageSchema>;

const ToolSchema = z.object({
  type: z.literal("custom").optional(),
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, "tool names are 1-128 letters, digits, _ . -"),
  description: z.string().optional(),
  input_schema: Bounded(z.record(z.string(), z.unknown())),
  cache_control: CacheControl,
});

const Parallel = { disable_parallel_tool_use: z.boolean().optional() };
const ToolChoiceSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("auto"), ...Parallel }),
  z.object({ type: z.literal("any"), ...Parallel }),
  z.object({ type: z.literal("tool"), name: z.string().min(1), ...Parallel }),
  z.object({ type: z.literal("none") }),
]);

const ThinkingSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("enabled"), budget_tokens: z.int().min(1) }),
  z.object({ type: z.literal("disabled") }),
  z.object({ type: z.literal("adaptive") }),
]);

const OutputConfigSchema = z.object({
  /** How much the model spends on its answer, thinking included (Anthropic's levels). */
  effort: z.enum(["low", "medium", "high", "xhigh", "max"]).nullish(),
  format: z
    .object({ type: z.literal("json_schema"), schema: Bounded(z.record(z.string(), z.unknown())) })
    .nullish(),
});

const FallbackSchema = z.object({ model: FallbackModelSchema });

const messagesFields = {
  model: z.string().min(1).optional(),
  messages: z.array(MessagesMessageSchema).min(1, "messages must have at least 1 message").max(MAX_MESSAGES),
  system: z.union([Text, z.array(TextBlock).max(MAX_ITEMS)]).optional(),
  max_tokens: z.int().min(1),
  stop_sequences: z.array(z.string()).max(16).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.int().min(0).optional(),
  tools: z.array(ToolSchema).max(512).optional(),
  tool_choice: ToolChoiceSchema.optional(),
  /** Refused rather than ignored: an answer without the servers' tools would pass for one with them. */
  mcp_servers: z
    .array(z.unknown())
    .max(
      0,
      "mcp_servers is not supported: the gateway connects to no MCP server (send their tools as client tools)",
    )
    .optional(),
  thinking: ThinkingSchema.optional(),
  metadata: z.object({ user_id: z.string().max(256).nullish() }).optional(),
  cache_control: CacheControl,
  output_config: OutputConfigSchema.optional(),
  service_tier: z.string().max(32).optional(),
  /** Gateway: fallback models, tried in order when the model's providers all fail. */
  models: z.array(FallbackModelSchema).max(MAX_MESSAGES_FALLBACKS).optional(),
  /** Gateway: the same as `models`, as objects (OpenRouter's Messages name). */
  fallbacks: z.array(FallbackSchema).max(MAX_MESSAGES_FALLBACKS).nullish(),
  provider: ChatRequestSchema.shape.provider,
  preset: z.string().min(1).optional(),
  plugins: ChatRequestSchema.shape.plugins,
  user: ChatRequestSchema.shape.user,
  session_id: SessionIdSchema.optional(),
  trace: TraceSchema.optional(),
  debug: ChatRequestSchema.shape.debug,
};

const oneFallbackList = (body: { models?: unknown[]; fallbacks?: unknown[] | null }) =>
  !(body.models?.length && body.fallbacks?.length);
const ONE_FALLBACK_LIST = {
  message: "Send fallback models as `models` or as `fallbacks`, not both",
  path: ["fallbacks"],
};

export const MessagesRequestSchema = z
  .object(messagesFields)
  .refine(oneFallbackList, ONE_FALLBACK_LIST)
  .openapi("MessagesRequest", {
    description:
      "An Anthropic Messages request. Gateway additions: `provider` preferences, fallback `models` (or `fallbacks`, at most 3, not both) and `preset`. Unknown fields are ignored.",
  });
export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

/** A Messages body for a preset: no conversation and no max_tokens needed. */
export const PresetMessagesRequestSchema = z
  .object({
    ...messagesFields,
    messages: z.array(MessagesMessageSchema).max(MAX_MESSAGES).nullish(),
    max_tokens: z.int().min(1).optional(),
  })
  .refine(oneFallbackList, ONE_FALLBACK_LIST)
  .openapi("PresetMessagesRequest", {
    description:
      "An Anthropic Messages body. Only the fields that belong to a preset config persist; `system` becomes the system prompt; `messages`, `stream` and other per-request fields are ignored.",
  });
export type PresetMessagesRequest = z.infer<typeof PresetMessagesRequestSchema>;

const UsageSchema = z.object({
  input_tokens: z.int(),
  output_tokens: z.int(),
  cache_creation_input_tokens: z.int(),
  cache_read_input_tokens: z.int(),
  cost: z.number().optional(),
  is_byok: z.boolean().optional(),
});

export const MessageResponseSchema = z
  .object({
    id: z.string(),
    type: z.literal("message"),
    role: z.literal("assistant"),
    model: z.string(),
    provider: z.string(),
    content: z.array(z.record(z.string(), z.unknown())),
    stop_reason: z
      .enum([
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
      ])
      .nullable(),
    stop_sequence: z.string().nullable(),
    usage: UsageSchema,
  })
  .openapi("Message");

export const AnthropicErrorSchema = z
  .object({
    type: z.literal("error"),
    error: z.object({ type: z.string(), message: z.string() }),
    request_id: z.string().optional(),
  })
  .openapi("AnthropicError");
