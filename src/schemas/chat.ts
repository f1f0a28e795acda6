// POST /chat/completions: the OpenAI chat request as OpenRouter accepts it (names as @openrouter/sdk sends them).
import { z } from "@hono/zod-openapi";
import { REASONING_EFFORTS } from "../catalog/schema";
import { ProviderPreferencesSchema } from "../routing/preferences";
import {
  boundedJson,
  FallbackModelsSchema,
  MAX_ITEMS,
  MAX_TURN_ITEMS,
  MetadataSchema,
  PromptTextSchema,
} from "./common";
import {
  audioData,
  EndUserSchema,
  mediaUrl,
  ProviderPassthroughSchema,
  SessionIdSchema,
  TraceSchema,
} from "./media-common";

const MAX_MESSAGES = 10_000;
const Text = PromptTextSchema;
const Bounded = <T extends z.ZodType>(schema: T) =>
  boundedJson(schema, { maxDepth: 32, maxChars: 1_000_000 });

const CacheControl = z.object({ type: z.literal("ephemeral"), ttl: z.string().optional() }).optional();

export const ChatContentPartSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: Text, cache_control: CacheControl }),
  z.object({
    type: z.literal("image_url"),
    image_url: z.object({
      url: mediaUrl("image", { http: true }),
      detail: z.enum(["auto", "low", "high"]).optional(),
    }),
  }),
  z.object({
    type: z.literal("input_audio"),
    input_audio: z.object({
      data: audioData(),
      format: z.string().min(1),
    }),
  }),
  z.object({
    type: z.literal("file"),
    file: z.object({
      filename: z.string().optional(),
      file_data: z.string().optional(),
      file_id: z.string().optional(),
    }),
  }),
]);

const Content = z.union([Text, z.array(ChatContentPartSchema).max(MAX_ITEMS)]);

const ToolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

/** Reasoning blocks replayed unchanged (signed thinking must reach the provider byte for byte). */
const ReasoningDetails = z.array(Bounded(z.record(z.string(), z.unknown()))).max(MAX_TURN_ITEMS);

const RefusalPart = z.object({ type: z.literal("refusal"), refusal: Text });

const AssistantMessageSchema = z.object({
  role: z.literal("assistant"),
  // OpenAI's SDK types let an assistant turn hold refusal parts beside its text.
  content: z.union([Text, z.array(z.union([ChatContentPartSchema, RefusalPart])).max(MAX_ITEMS)]).nullish(),
  name: z.string().optional(),
  tool_calls: z.array(ToolCallSchema).max(MAX_TURN_ITEMS).optional(),
  reasoning: z.string().nullish(),
  reasoning_details: ReasoningDetails.optional(),
  refusal: z.string().nullish(),
});
type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
/** An assistant turn as the rest of the gateway reads it: no refusal parts in its content. */
type AssistantTurn = Omit<AssistantMessage, "content"> & { content?: z.infer<typeof Content> | null };

/**
 * An assistant turn's refusal parts moved to its `refusal` (after any it had): the one place adapters and
 * content filters read a refusal, where a responses client's refusal parts arrive too. The other parts
 * stay; content is null when none is left.
 */
function refusalPartsOut(message: AssistantMessage): AssistantTurn {
  const { content } = message;
  const refusals = Array.isArray(content)
    ? content.flatMap((p) => (p.type === "refusal" ? [p.refusal] : []))
    : [];
  if (!Array.isArray(content) || refusals.length === 0) return message as AssistantTurn;
  const parts = content.filter((p): p is ChatContentPartBody => p.type !== "refusal");
  return {
    ...message,
    content: parts.length > 0 ? parts : null,
    refusal: [message.refusal ?? "", ...refusals].join(""),
  };
}

export const ChatMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: Content, name: z.string().optional() }),
  z.object({ role: z.literal("developer"), content: Content, name: z.string().optional() }),
  z.object({ role: z.literal("user"), content: Content, name: z.string().optional() }),
  AssistantMessageSchema.transform(refusalPartsOut),
  z.object({ role: z.literal("tool"), content: Content, tool_call_id: z.string().min(1) }),
]);
export type ChatMessageBody = z.infer<typeof ChatMessageSchema>;
export type ChatContentPartBody = z.infer<typeof ChatContentPartSchema>;

const FunctionToolSchema = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, "tool names are 1-128 letters, digits, _ . -"),
    description: z.string().optional(),
    parameters: Bounded(z.record(z.string(), z.unknown())).optional(),
    strict: z.boolean().nullish(),
  }),
  cache_control: CacheControl,
});

const NamedFunction = z.object({
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1) }),
});

const ToolChoiceSchema = z.union([
  z.enum(["none", "auto", "required"]),
  NamedFunction,
  // OpenAI's: the model may call only these tools (served as the tool list cut to them, in `mode`).
  z.object({
    type: z.literal("allowed_tools"),
    allowed_tools: z.object({
      mode: z.enum(["auto", "required"]),
      tools: z.array(NamedFunction).min(1).max(512),
    }),
  }),
]);

const ResponseFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    json_schema: z.object({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: Bounded(z.record(z.string(), z.unknown())).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/** Reasoning effort levels, as `openai` and `@openrouter/sdk` type them (`max` the most a model offers). */
export const ReasoningEffortSchema = z.enum(REASONING_EFFORTS);

const ReasoningSchema = z.object({
  effort: ReasoningEffortSchema.nullish(),
  max_tokens: z.int().min(0).nullish(),
  exclude: z.boolean().optional(),
  enabled: z.boolean().optional(),
  summary: z.string().nullish(),
});

const PluginSchema = z.object({ id: z.string().min(1) }).catchall(z.unknown());

/** A request's `provider`: routing preferences, plus `options` keyed by provider slug. */
export const ChatProviderSchema = ProviderPreferencesSchema.extend(ProviderPassthroughSchema.shape);

export const ChatRequestSchema = z
  .object({
    messages: z.array(ChatMessageSchema).min(1, "messages must have at least 1 message").max(MAX_MESSAGES),
    model: z.string().min(1).optional(),
    /** Fallback models, tried in order when the model's providers all fail. */
    models: FallbackModelsSchema.optional(),
    stream: z.boolean().nullish(),
    /** One choice per request: more would be silently dropped, so more is refused. */
    n: z.int().min(1).max(1, "n must be 1: the gateway returns one choice per request").nullish(),
    /** Deprecated: usage is always reported; accepted and ignored. */
    stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
    /** Deprecated: usage is always reported; accepted and ignored. */
    usage: z.object({ include: z.boolean().optional() }).optional(),
    max_tokens: z.int().min(1).nullish(),
    max_completion_tokens: z.int().min(1).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    top_k: z.int().min(0).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    repetition_penalty: z.number().min(0).max(2).nullish(),
    min_p: z.number().min(0).max(1).nullish(),
    top_a: z.number().min(0).max(1).nullish(),
    seed: z.int().nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(16)]).nullish(),
    logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.int().min(0).max(20).nullish(),
    tools: z.array(FunctionToolSchema).max(512).optional(),
    tool_choice: ToolChoiceSchema.optional(),
    parallel_tool_calls: z.boolean().nullish(),
    response_format: ResponseFormatSchema.optional(),
    reasoning: ReasoningSchema.optional(),
    reasoning_effort: ReasoningEffortSchema.nullish(),
    /** OpenRouter's legacy form: false hides the reasoning (`reasoning.exclude`), true asks for it. */
    include_reasoning: z.boolean().nullish(),
    /** Routing preferences, plus `options` keyed by provider slug (only the chosen provider's entry is sent). */
    provider: ChatProviderSchema.nullish(),
    preset: z.string().min(1).optional(),
    plugins: z.array(PluginSchema).max(16).optional(),
    transforms: z.array(z.string()).max(16).optional(),
    user: EndUserSchema.optional(),
    session_id: SessionIdSchema.optional(),
    metadata: MetadataSchema.nullish(),
    trace: TraceSchema.optional(),
    debug: z.object({ echo_upstream_body: z.boolean().optional() }).optional(),
    cache_control: CacheControl,
    prompt_cache_key: z.string().max(256).nullish(),
    service_tier: z.string().max(32).nullish(),
    modalities: z
      .array(z.enum(["text", "image", "audio"]))
      .max(8)
      .nullish(),
  })
  .openapi("ChatRequest");
export type ChatRequestBody = z.infer<typeof ChatRequestSchema>;

const UsageSchema = z.object({
  prompt_tokens: z.int(),
  completion_tokens: z.int(),
  total_tokens: z.int(),
  prompt_tokens_details: z
    .object({ cached_tokens: z.int(), cache_write_tokens: z.int().optional() })
    .optional(),
  completion_tokens_details: z.object({ reasoning_tokens: z.int() }).optional(),
  cost: z.number(),
  is_byok: z.boolean(),
  cost_details: z.object({
    upstream_inference_cost: z.number().nullable(),
    upstream_inference_prompt_cost: z.number(),
    upstream_inference_completions_cost: z.number(),
  }),
});

export const ChatResponseSchema = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion"),
    created: z.int(),
    model: z.string(),
    provider: z.string(),
    system_fingerprint: z.string().nullable(),
    choices: z.array(
      z.object({
        index: z.int(),
        finish_reason: z.enum(["stop", "length", "tool_calls", "content_filter", "error"]).nullable(),
        native_finish_reason: z.string().nullable(),
        message: z.object({
          role: z.literal("assistant"),
          content: z.string().nullable(),
          refusal: z.string().nullable(),
          reasoning: z.string().nullable().optional(),
          reasoning_details: z.array(z.record(z.string(), z.unknown())).optional(),
          tool_calls: z.array(ToolCallSchema).optional(),
        }),
      }),
    ),
    usage: UsageSchema,
  })
  .openapi("ChatResponse");
