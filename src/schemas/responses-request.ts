// The responses request object (POST /presets/{slug}/responses and inference): every field and limit of the spec.
import { z } from "@hono/zod-openapi";
import { FallbackModelsSchema, MAX_ITEMS, MetadataSchema, PromptTextSchema } from "./common";
import { InputSchema } from "./responses-input";
import { PluginsSchema } from "./responses-plugins";
import { ToolsSchema } from "./responses-tools";

export const RESPONSES_LIMITS = {
  sessionIdLength: 256,
  userLength: 256,
  maxToolCalls: 30,
} as const;

export const INCLUDE_VALUES = [
  "file_search_call.results",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "reasoning.encrypted_content",
  "code_interpreter_call.outputs",
  "message.output_text.logprobs",
  "web_search_call.results",
  "web_search_call.action.sources",
] as const;

/** `fast` is an alias of `priority` and is normalised to it. */
export const ServiceTierSchema = z
  .enum(["auto", "default", "fast", "flex", "priority", "scale"])
  .transform((t) => (t === "fast" ? "priority" : t));

export const CacheControlSchema = z.strictObject({
  type: z.literal("ephemeral", { error: "cache_control.type must be 'ephemeral'" }),
  ttl: z.enum(["5m", "1h"]).optional(),
});

const looseRecord = z.record(z.string(), z.unknown());

const nullableNumber = (min: number, max: number) => z.number().min(min).max(max).nullable().optional();

export const ResponsesRequestSchema = z
  .object({
    model: z.string().min(1).optional(),
    models: FallbackModelsSchema.optional().openapi({ description: "Fallback models, in order" }),
    preset: z
      .string()
      .min(1)
      .optional()
      .openapi({ description: "Apply this preset (inference only; never persisted in a preset)" }),
    input: InputSchema.optional(),
    instructions: PromptTextSchema.nullable().optional(),
    max_output_tokens: z.int().min(1).nullable().optional(),
    max_tool_calls: z
      .int()
      .min(0)
      .max(RESPONSES_LIMITS.maxToolCalls, `max_tool_calls is at most ${RESPONSES_LIMITS.maxToolCalls}`)
      .nullable()
      .optional(),
    temperature: nullableNumber(0, 2),
    top_p: nullableNumber(0, 1),
    frequency_penalty: nullableNumber(-2, 2),
    presence_penalty: nullableNumber(-2, 2),
    top_k: z.int().min(0).optional(),
    top_logprobs: z.int().min(0).max(20).nullable().optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    stream: z.boolean().nullable().default(false),
    store: z
      .literal(false, { error: "store must be false: responses are not stored" })
      .nullable()
      .default(false),
    previous_response_id: z
      .null({
        error: "previous_response_id is not supported: send the conversation history in `input` instead",
      })
      .optional(),
    conversation: z
      .null({ error: "conversation is not supported: send the conversation history in `input` instead" })
      .optional(),
    include: z.array(z.enum(INCLUDE_VALUES)).max(32).nullable().optional(),
    modalities: z
      .array(z.enum(["text", "image"]))
      .refine((a) => new Set(a).size === a.length, "modalities must not repeat")
      .optional(),
    image_config: z
      .record(
        z.string(),
        z.union([z.string(), z.number(), z.array(z.union([z.string(), z.number()])).max(MAX_ITEMS)]),
      )
      .optional(),
    metadata: MetadataSchema.nullable().optional(),
    service_tier: ServiceTierSchema.nullable().optional(),
    session_id: z
      .string()
      .max(
        RESPONSES_LIMITS.sessionIdLength,
        `session_id is at most ${RESPONSES_LIMITS.sessionIdLength} characters`,
      )
      .optional(),
    user: z
      .string()
      .max(RESPONSES_LIMITS.userLength, `user is at most ${RESPONSES_LIMITS.userLength} characters`)
      .optional(),
    safety_identifier: z.string().nullable().optional(),
    prompt_cache_key: z.string().nullable().optional(),
    prompt_cache_options: looseRecord.nullable().optional(),
    prompt: looseRecord.nullable().optional(),
    provider: looseRecord.nullable().optional(),
    reasoning: looseRecord.nullable().optional(),
    text: looseRecord.optional(),
    tool_choice: z.union([z.enum(["auto", "none", "required"]), looseRecord]).optional(),
    trace: looseRecord.optional(),
    truncation: z.enum(["auto", "disabled"]).nullable().optional(),
    stop_server_tools_when: z.union([looseRecord, z.array(looseRecord).max(100)]).optional(),
    route: z.string().nullable().optional().openapi({ deprecated: true }),
    cache_control: CacheControlSchema.optional(),
    debug: z.strictObject({ echo_upstream_body: z.boolean().optional() }).optional(),
    plugins: PluginsSchema.optional(),
    tools: ToolsSchema.optional(),
  })
  .openapi("ResponsesRequest", {
    description: "Unknown top-level fields are accepted and ignored (for presets: never persisted).",
  });
export type ResponsesRequest = z.infer<typeof ResponsesRequestSchema>;

/** The request fields a preset persists in its version's `config` (`instructions` becomes `system_prompt`). */
export const PRESET_CONFIG_FIELDS = [
  "model",
  "models",
  "temperature",
  "top_p",
  "top_k",
  "top_logprobs",
  "frequency_penalty",
  "presence_penalty",
  "max_output_tokens",
  "max_tool_calls",
  "parallel_tool_calls",
  "provider",
  "plugins",
  "tools",
  "tool_choice",
  "reasoning",
  "text",
  "include",
  "modalities",
  "image_config",
  "service_tier",
  "truncation",
  "cache_control",
  "prompt_cache_options",
  "stop_server_tools_when",
] as const satisfies ReadonlyArray<keyof ResponsesRequest>;
export type PresetConfig = Partial<Pick<ResponsesRequest, (typeof PRESET_CONFIG_FIELDS)[number]>>;

/** The persisted part of a request: config fields that were sent (nulls included) and the system prompt. */
export function presetConfigOf(body: ResponsesRequest): {
  config: PresetConfig;
  systemPrompt: string | null;
} {
  const config: Record<string, unknown> = {};
  for (const field of PRESET_CONFIG_FIELDS) {
    if (body[field] !== undefined) config[field] = body[field];
  }
  return { config: config as PresetConfig, systemPrompt: body.instructions ?? null };
}
