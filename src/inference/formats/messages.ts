// The Anthropic Messages client format: chat chunks (the normal form) written as Messages stream events,
// each with its `event:` line (message_start, content blocks, message_delta, message_stop), or folded into
// one `message` object. Which Anthropic content block a chunk belongs to is decided here, as it streams.
import { anthropicErrorEnvelope } from "../../lib/errors";
import { REASONING_FORMAT } from "../../providers/anthropic/request";
import type { ChatChunk, ChatFinishReason, ChatUsage } from "../../providers/types";
import type { ChatClientFormat } from "../chat";
import { type ChatMeta, type Folded, type StreamFormat, toolCallsOf, usageWire } from "../chat-stream";

type Json = Record<string, unknown>;

/** Stop reasons an Anthropic upstream reports, passed on as they are. */
const ANTHROPIC_STOPS = new Set([
  "end_turn",
  "max_tokens",
  "stop_sequence",
  "tool_use",
  "pause_turn",
  "refusal",
  "model_context_window_exceeded",
]);

const STOP_OF_FINISH: Record<ChatFinishReason, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
  error: "end_turn",
};

export function stopReasonOf(folded: Pick<Folded, "finish" | "native">): string {
  if (folded.native && ANTHROPIC_STOPS.has(folded.native)) return folded.native;
  return STOP_OF_FINISH[folded.finish ?? "stop"];
}

/** Anthropic's counts: its input_tokens leaves out cache reads and writes (the normal form includes them). */
export function anthropicUsage(usage: ChatUsage) {
  const read = usage.cachedTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  return {
    input_tokens: Math.max(0, usage.promptTokens - read - written),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
    output_tokens: usage.completionTokens,
  };
}

/** The usage of the wire, with the gateway's cost (USD) beside Anthropic's counts. */
function usageOf(usage: ChatUsage, meta: ChatMeta) {
  return { ...anthropicUsage(usage), cost: usageWire(usage, meta).cost, is_byok: meta.isByok };
}

/** Signatures and redacted thinking only mean something to Anthropic: other formats' are not shown. */
const isAnthropic = (detail: Json) => detail.format == null || detail.format === REASONING_FORMAT;

const textOfDetail = (detail: Json): string | undefined => {
  const text = detail.type === "reasoning.summary" ? detail.summary : detail.text;
  return typeof text === "string" ? text : undefined;
};

const isThinkingDetail = (detail: Json) =>
  detail.type === "reasoning.text" || detail.type === "reasoning.summary";

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** The content block being streamed. */
type OpenBlock =
  | { kind: "text" }
  | { kind: "thinking"; detail?: number; fromReasoning: boolean }
  | { kind: "tool"; tool: number };

/** Messages stream events for one answer. */
export function messagesStream(meta: ChatMeta): StreamFormat {
  let open: OpenBlock | null = null;
  let index = -1;

  const stop = () => {
    if (!open) return "";
    open = null;
    return frame("content_block_stop", { type: "content_block_stop", index });
  };
  const start = (block: OpenBlock | null, contentBlock: Json) => {
    const closed = stop();
    index++;
    open = block;
    return `${closed}${frame("content_block_start", { type: "content_block_start", index, content_block: contentBlock })}`;
  };
  const delta = (d: Json) => frame("content_block_delta", { type: "content_block_delta", index, delta: d });

  /** The thinking block for reasoning block `detail` (a new one when another block is open). */
  const thinking = (detail: number | undefined): string => {
    if (
      open?.kind === "thinking" &&
      (detail === undefined || open.detail === undefined || open.detail === detail)
    ) {
      open.detail ??= detail;
      return "";
    }
    return start(
      { kind: "thinking", detail, fromReasoning: false },
      { type: "thinking", thinking: "", signature: "" },
    );
  };

  const reasoningFrames = (reasoning: string | undefined, details: Json[]): string => {
    let out = "";
    const indexOf = (d: Json | undefined) => (typeof d?.index === "number" ? d.index : undefined);
    if (reasoning) {
      out += thinking(indexOf(details.find(isThinkingDetail)));
      if (open?.kind === "thinking") open.fromReasoning = true;
      out += delta({ type: "thinking_delta", thinking: reasoning });
    }
    for (const detail of details) {
      if (detail.type === "reasoning.encrypted") {
        if (typeof detail.data === "string" && isAnthropic(detail)) {
          out += start(null, { type: "redacted_thinking", data: detail.data });
          out += frame("content_block_stop", { type: "content_block_stop", index });
        }
        continue;
      }
      if (!isThinkingDetail(detail)) continue;
      const text = textOfDetail(detail);
      // Providers that send reasoning only as details: the text comes from them (never twice).
      if (!reasoning && text) {
        out += thinking(indexOf(detail));
        if (open?.kind === "thinking" && !open.fromReasoning)
          out += delta({ type: "thinking_delta", thinking: text });
      }
      if (typeof detail.signature === "string" && detail.signature && isAnthropic(detail)) {
        out += thinking(indexOf(detail));
        out += delta({ type: "signature_delta", signature: detail.signature });
      }
    }
    return out;
  };

  return {
    open: () => {
      const message = {
        id: meta.id,
        type: "message",
        role: "assistant",
        model: meta.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // The real counts come with message_delta; until then, the prompt as estimated for admission.
        usage: {
          input_tokens: meta.promptEstimate,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 0,
        },
      };
      const debug =
        meta.echo === undefined
          ? ""
          : frame("debug", { type: "debug", debug: { echo_upstream_body: meta.echo } });
      return `${frame("message_start", { type: "message_start", message })}${debug}`;
    },
    chunk: (chunk: ChatChunk) => {
      let out = "";
      for (const choice of chunk.choices) {
        if (choice.index !== 0) continue;
        const d = choice.delta;
        out += reasoningFrames(d.reasoning, d.reasoning_details ?? []);
        const text = `${d.content ?? ""}${d.refusal ?? ""}`;
        if (text) {
          if (open?.kind !== "text") out += start({ kind: "text" }, { type: "text", text: "" });
          out += delta({ type: "text_delta", text });
        }
        for (const call of d.tool_calls ?? []) {
          if (open?.kind !== "tool" || open.tool !== call.index) {
            out += start(
              { kind: "tool", tool: call.index },
              { type: "tool_use", id: call.id ?? "", name: call.function?.name ?? "", input: {} },
            );
          }
          const args = call.function?.arguments;
          if (args) out += delta({ type: "input_json_delta", partial_json: args });
        }
      }
      return out;
    },
    end: (folded, usage) =>
      `${stop()}${frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: stopReasonOf(folded), stop_sequence: null },
        usage: usageOf(usage, meta),
      })}${frame("message_stop", { type: "message_stop" })}`,
    fail: (error) => frame("error", anthropicErrorEnvelope(error.code, error.message)),
    keepalive: frame("ping", { type: "ping" }),
  };
}

/** Tool input as an object: arguments that are not a JSON object (a cut-off answer) give `{}`. */
function inputOf(args: string): Json {
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Json) : {};
  } catch {
    return {};
  }
}

/** Thinking blocks from the folded reasoning: one per reasoning block, or one holding plain reasoning text. */
function thinkingBlocks(folded: Folded): Json[] {
  const blocks: Json[] = [];
  for (const detail of folded.reasoningDetails) {
    if (detail.type === "reasoning.encrypted") {
      if (typeof detail.data === "string" && isAnthropic(detail))
        blocks.push({ type: "redacted_thinking", data: detail.data });
    } else if (isThinkingDetail(detail)) {
      const signature = typeof detail.signature === "string" && isAnthropic(detail) ? detail.signature : "";
      blocks.push({ type: "thinking", thinking: textOfDetail(detail) ?? "", signature });
    }
  }
  const thinking = blocks.filter((b) => b.type === "thinking");
  if (folded.reasoning && thinking.every((b) => b.thinking === "")) {
    if (thinking[0]) thinking[0].thinking = folded.reasoning;
    else blocks.unshift({ type: "thinking", thinking: folded.reasoning, signature: "" });
  }
  return blocks;
}

/** One Messages `message`: thinking, then text, then tool_use blocks. */
export function messageBody(folded: Folded, usage: ChatUsage, meta: ChatMeta) {
  const text = `${folded.content}${folded.refusal}`;
  const content: Json[] = [
    ...thinkingBlocks(folded),
    ...(text ? [{ type: "text", text }] : []),
    ...toolCallsOf(folded).map((t) => ({
      type: "tool_use",
      id: t.id,
      name: t.function.name,
      input: inputOf(t.function.arguments),
    })),
  ];
  return {
    id: meta.id,
    type: "message" as const,
    role: "assistant" as const,
    model: meta.model,
    provider: meta.provider,
    content,
    stop_reason: stopReasonOf(folded),
    stop_sequence: null,
    usage: usageOf(usage, meta),
  };
}

export const MESSAGES: ChatClientFormat = {
  apiType: "messages",
  stream: messagesStream,
  body: messageBody,
};
