// Anthropic Messages requests in the chat normal form (ChatRequestBody), a pure translation: blocks become
// OpenAI-style parts, tool messages and tool calls; signed thinking rides in reasoning_details unchanged.
import { badRequest } from "../../lib/errors";
import { REASONING_FORMAT } from "../../providers/anthropic/request";
import type { ChatRequestBody } from "../../schemas/chat";
import type {
  MessagesContentBlock,
  MessagesMessage,
  MessagesRequest,
  PresetMessagesRequest,
} from "../../schemas/messages";

type Part = Record<string, unknown>;
type Message = Record<string, unknown> & { role: string };
type Block<T extends MessagesContentBlock["type"]> = Extract<MessagesContentBlock, { type: T }>;

/** Anthropic's cache marker, kept on the part it marks (the OpenAI-style `cache_control` adapters read). */
const cache = (block: { cache_control?: { type: "ephemeral"; ttl?: string } | null }) =>
  block.cache_control ? { cache_control: block.cache_control } : {};

const textPart = (block: Block<"text">): Part => ({ type: "text", text: block.text, ...cache(block) });

function imagePart(block: Block<"image">): Part {
  const { source } = block;
  const url = source.type === "base64" ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: "image_url", image_url: { url }, ...cache(block) };
}

/** Plain-text documents become text; PDFs become `file` parts (a data URL or the document's URL). */
function documentParts(block: Block<"document">): Part[] {
  const { source } = block;
  const filename = block.title ? { filename: block.title } : {};
  switch (source.type) {
    case "text":
      return [{ type: "text", text: source.data, ...cache(block) }];
    case "content":
      if (typeof source.content === "string")
        return [{ type: "text", text: source.content, ...cache(block) }];
      return source.content.map((b) => (b.type === "text" ? textPart(b) : imagePart(b)));
    case "base64":
      return [
        {
          type: "file",
          file: { ...filename, file_data: `data:application/pdf;base64,${source.data}` },
          ...cache(block),
        },
      ];
    case "url":
      return [{ type: "file", file: { ...filename, file_data: source.url }, ...cache(block) }];
  }
}

function mediaParts(block: MessagesContentBlock, where: string): Part[] {
  switch (block.type) {
    case "text":
      return [textPart(block)];
    case "image":
      return [imagePart(block)];
    case "document":
      return documentParts(block);
    default:
      throw badRequest(`Invalid request: ${where} cannot hold a ${block.type} block`);
  }
}

/** A tool_result block as a tool message; `is_error` and the cache marker travel with it. */
function toolMessage(block: Block<"tool_result">, where: string): Message {
  const content =
    block.content === undefined
      ? ""
      : typeof block.content === "string"
        ? block.content
        : block.content.flatMap((b) => mediaParts(b, where));
  return {
    role: "tool",
    tool_call_id: block.tool_use_id,
    content,
    ...(block.is_error ? { is_error: true } : {}),
    ...cache(block),
  };
}

/** A user turn: its tool results as tool messages (in order), the rest as one user message. */
function userMessages(content: MessagesMessage["content"], where: string): Message[] {
  if (typeof content === "string") return [{ role: "user", content }];
  const out: Message[] = [];
  let parts: Part[] = [];
  const flush = () => {
    if (parts.length) out.push({ role: "user", content: parts });
    parts = [];
  };
  content.forEach((block, i) => {
    if (block.type === "tool_result") {
      flush();
      out.push(toolMessage(block, `${where}.content.${i}`));
    } else {
      parts.push(...mediaParts(block, `${where}.content.${i} (a user turn)`));
    }
  });
  flush();
  return out;
}

/**
 * An assistant turn: text parts, tool_use blocks as tool calls, and thinking / redacted_thinking blocks
 * as reasoning_details in Anthropic's format (one index per block, so the Anthropic adapter rebuilds each
 * block with its text and signature exactly as received).
 */
function assistantMessage(content: MessagesMessage["content"], where: string): Message {
  if (typeof content === "string") return { role: "assistant", content };
  const text: Part[] = [];
  const calls: Part[] = [];
  const details: Part[] = [];
  const order: BlockKind[] = [];
  content.forEach((block, i) => {
    order.push(block.type === "redacted_thinking" ? "thinking" : (block.type as BlockKind));
    switch (block.type) {
      case "text":
        text.push(textPart(block));
        break;
      case "tool_use":
        calls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.input) },
          ...cache(block),
        });
        break;
      case "thinking":
        details.push({
          type: "reasoning.text",
          text: block.thinking,
          signature: block.signature,
          format: REASONING_FORMAT,
          index: details.length,
        });
        break;
      case "redacted_thinking":
        details.push({
          type: "reasoning.encrypted",
          data: block.data,
          format: REASONING_FORMAT,
          index: details.length,
        });
        break;
      default:
        throw badRequest(
          `Invalid request: ${where}.content.${i} (an assistant turn) cannot hold a ${block.type} block`,
        );
    }
  });
  return {
    role: "assistant",
    content: text.length ? text : calls.length ? null : "",
    ...(calls.length ? { tool_calls: calls } : {}),
    ...(details.length ? { reasoning_details: details } : {}),
    ...(details.length && !inUsualOrder(order) ? { block_order: order } : {}),
  };
}

/** The kinds of an assistant turn's blocks, in the order a `block_order` lists them (see ChatMessage). */
type BlockKind = "thinking" | "text" | "tool_use";
const RANK: Record<BlockKind, number> = { thinking: 0, text: 1, tool_use: 2 };

/** Thinking, then text, then tool use: the order a turn is rebuilt in without a `block_order`. */
const inUsualOrder = (order: BlockKind[]) => order.every((k, i) => i === 0 || RANK[order[i - 1]!] <= RANK[k]);

function systemMessages(system: MessagesRequest["system"]): Message[] {
  if (system === undefined) return [];
  if (typeof system === "string") return system ? [{ role: "system", content: system }] : [];
  return system.length ? [{ role: "system", content: system.map(textPart) }] : [];
}

/** The conversation as chat messages: the system prompt first, then each turn. */
export function chatMessagesOf(system: MessagesRequest["system"], messages: MessagesMessage[]): Message[] {
  const out = systemMessages(system);
  messages.forEach((m, i) => {
    const where = `body.messages.${i}`;
    if (m.role === "user") out.push(...userMessages(m.content, where));
    else out.push(assistantMessage(m.content, where));
  });
  return out;
}

function toolChoiceOf(
  choice: MessagesRequest["tool_choice"],
): Pick<ChatRequestBody, "tool_choice" | "parallel_tool_calls"> {
  if (!choice) return {};
  const single = "disable_parallel_tool_use" in choice && choice.disable_parallel_tool_use === true;
  const parallel = single ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case "auto":
      return { tool_choice: "auto", ...parallel };
    case "any":
      return { tool_choice: "required", ...parallel };
    case "tool":
      return { tool_choice: { type: "function", function: { name: choice.name } }, ...parallel };
    case "none":
      return { tool_choice: "none" };
  }
}

/** `enabled` keeps its budget; `adaptive` lets the endpoint choose (the default budget); `disabled` turns it off. */
/**
 * Thinking as chat's reasoning. `output_config.effort` with thinking on is its effort too (a budget given
 * wins where a provider takes one); Anthropic upstreams also get it as sent (ChatRequest.anthropic).
 */
function reasoningOf(body: MessagesBody): ChatRequestBody["reasoning"] {
  const { thinking } = body;
  if (!thinking) return undefined;
  const effort = thinking.type === "disabled" ? undefined : (body.output_config?.effort ?? undefined);
  const levelled = effort ? { effort } : {};
  if (thinking.type === "enabled") return { max_tokens: thinking.budget_tokens, ...levelled };
  return { enabled: thinking.type === "adaptive", ...levelled };
}

type MessagesBody = MessagesRequest | PresetMessagesRequest;

/** Everything but the conversation (shared by inference and presets). */
function settingsOf(body: MessagesBody): Omit<ChatRequestBody, "messages"> {
  const out: Omit<ChatRequestBody, "messages"> = {
    model: body.model,
    models: body.models ?? body.fallbacks?.map((f) => f.model),
    max_tokens: body.max_tokens,
    stop: body.stop_sequences,
    stream: body.stream,
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    tools: body.tools?.map((t) => ({
      type: "function" as const,
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.input_schema,
      },
      ...cache(t),
    })),
    ...toolChoiceOf(body.tool_choice),
    reasoning: reasoningOf(body),
    response_format: body.output_config?.format
      ? {
          type: "json_schema",
          json_schema: { name: "output", schema: body.output_config.format.schema, strict: true },
        }
      : undefined,
    user: body.user ?? body.metadata?.user_id ?? undefined,
    cache_control: body.cache_control ?? undefined,
    provider: body.provider,
    preset: body.preset,
    plugins: body.plugins,
    session_id: body.session_id,
    trace: body.trace,
    debug: body.debug,
    service_tier: body.service_tier,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined)) as typeof out;
}

/** A Messages request as the chat body runChat takes. */
export function chatBodyOf(body: MessagesRequest): ChatRequestBody {
  return {
    ...settingsOf(body),
    messages: chatMessagesOf(body.system, body.messages) as ChatRequestBody["messages"],
  };
}

/** A Messages body as the chat body a preset is made from: its settings and system prompt (turns ignored). */
export function presetChatBodyOf(body: PresetMessagesRequest): ChatRequestBody {
  return {
    ...settingsOf(body),
    messages: chatMessagesOf(body.system, []) as ChatRequestBody["messages"],
  };
}
