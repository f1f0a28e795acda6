// Presets from chat bodies: the body POST /presets/{slug}/chat/completions takes, and the part of it a preset keeps.
import { z } from "@hono/zod-openapi";
import { type ChatMessageBody, ChatMessageSchema, type ChatRequestBody, ChatRequestSchema } from "./chat";

/** A chat body whose `messages` may be absent or empty: a preset needs no conversation. */
export const PresetChatRequestSchema = ChatRequestSchema.extend({
  messages: z.array(ChatMessageSchema).max(10_000).optional(),
}).openapi("PresetChatRequest", {
  description:
    "A chat completions body. Unknown top-level fields, `messages` other than system/developer ones, `stream` and other per-request fields are accepted and never persisted.",
});
export type PresetChatRequest = z.infer<typeof PresetChatRequestSchema>;

/** The chat fields a preset persists in its version's `config` (system/developer messages become `system_prompt`). */
export const CHAT_PRESET_CONFIG_FIELDS = [
  "model",
  "models",
  "provider",
  "temperature",
  "top_p",
  "top_k",
  "frequency_penalty",
  "presence_penalty",
  "repetition_penalty",
  "min_p",
  "top_a",
  "seed",
  "stop",
  "max_tokens",
  "max_completion_tokens",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "reasoning",
  "reasoning_effort",
  "plugins",
  "transforms",
  "modalities",
  "service_tier",
  "cache_control",
] as const satisfies ReadonlyArray<keyof ChatRequestBody>;
export type ChatPresetField = (typeof CHAT_PRESET_CONFIG_FIELDS)[number];
export type ChatPresetConfig = Partial<Pick<ChatRequestBody, ChatPresetField>>;

const isInstruction = (m: ChatMessageBody) => m.role === "system" || m.role === "developer";

/** A system or developer message's text (text parts joined; other parts carry no instruction). */
function textOf(content: ChatMessageBody["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
}

/** Whether a conversation already carries its own instructions (then a preset's system prompt stays out). */
export const hasInstructions = (messages: ChatMessageBody[]) => messages.some(isInstruction);

/**
 * The persisted part of a chat body: config fields that were sent (nulls included), and the system and
 * developer messages, in order, as the system prompt (several are joined by a blank line).
 */
export function chatPresetConfigOf(body: PresetChatRequest): {
  config: ChatPresetConfig;
  systemPrompt: string | null;
} {
  const config: Record<string, unknown> = {};
  for (const field of CHAT_PRESET_CONFIG_FIELDS) {
    if (body[field] !== undefined) config[field] = body[field];
  }
  const prompts = (body.messages ?? []).filter(isInstruction).map((m) => textOf(m.content));
  return {
    config: config as ChatPresetConfig,
    systemPrompt: prompts.length ? prompts.join("\n\n") : null,
  };
}
