// The Anthropic Messages client format: chat chunks (the normal form) written as Messages stream events,
// each with its `event:` line (message_start, content blocks, message_delta, message_stop), or folded into
// one `message` object. Which Anthropic content block a chunk belongs to is decided here, as it streams.
import { anthropicErrorEnvelope } from "../../lib/errors";
import { REASONING_FORMAT } from "../../providers/anthropic/request";
import type { ChatChunk } from "../../providers/types";
import type { ChatClientFormat } from "../chat";
import { type BodyFormat, type ChatMeta, chargedOnFailure, type StreamFormat } from "../chat-stream";
import {
  debugFrames,
  failureDelta,
  frame,
  type Json,
  MessageSnapshot,
  startEvent,
  stopReasonOf,
  stopSequenceOf,
  usageOf,
} from "./messages-events";
import { messagesPassthroughJson, messagesPassthroughStream } from "./messages-passthrough";
import { type ToolCall, ToolSequence } from "./tool-sequence";

export { anthropicUsage, stopReasonOf } from "./messages-events";

/** Signatures and redacted thinking only mean something to Anthropic: other formats' are not shown. */
const isAnthropic = (detail: Json) => detail.format == null || detail.format === REASONING_FORMAT;

const textOfDetail = (detail: Json): string | undefined => {
  const text = detail.type === "reasoning.summary" ? detail.summary : detail.text;
  return typeof text === "string" ? text : undefined;
};

const isThinkingDetail = (detail: Json) =>
  detail.type === "reasoning.text" || detail.type === "reasoning.summary";

/** The content block being streamed. */
type OpenBlock =
  | { kind: "text" }
  | { kind: "thinking"; detail?: number; fromReasoning: boolean }
  | { kind: "tool"; tool: number };

type Emit = (event: Json & { type: string }) => void;

/**
 * Chunks as Messages content-block events, told to `emit` in the order the chunks arrive: a block opens when
 * a chunk brings another kind of content (or another reasoning block, or another tool call) than the open
 * one, so thinking, text and tool use interleave as the upstream sent them (but tool calls whose deltas
 * interleave do not: see ToolSequence). The stream and the JSON answer are both written from these
 * events, so they hold the same blocks.
 */
function contentBlocks(emit: Emit) {
  let open: OpenBlock | null = null;
  let index = -1;

  const stop = () => {
    if (!open) return;
    open = null;
    emit({ type: "content_block_stop", index });
  };
  const start = (block: OpenBlock | null, contentBlock: Json) => {
    stop();
    index++;
    open = block;
    emit({ type: "content_block_start", index, content_block: contentBlock });
  };
  const delta = (d: Json) => emit({ type: "content_block_delta", index, delta: d });

  // Blocks cannot interleave: one tool_use block per call, whatever order the upstream's deltas came in.
  const tools = new ToolSequence();
  const toolUse = (call: ToolCall) => {
    start({ kind: "tool", tool: call.index }, { type: "tool_use", id: call.id, name: call.name, input: {} });
    if (call.arguments) delta({ type: "input_json_delta", partial_json: call.arguments });
  };

  /** The thinking block for reasoning block `detail` (a new one when another block is open). */
  const thinking = (detail: number | undefined) => {
    if (
      open?.kind === "thinking" &&
      (detail === undefined || open.detail === undefined || open.detail === detail)
    ) {
      open.detail ??= detail;
      return;
    }
    start(
      { kind: "thinking", detail, fromReasoning: false },
      { type: "thinking", thinking: "", signature: "" },
    );
  };

  const reasoning = (text: string | undefined, details: Json[]) => {
    const indexOf = (d: Json | undefined) => (typeof d?.index === "number" ? d.index : undefined);
    if (text) {
      thinking(indexOf(details.find(isThinkingDetail)));
      if (open?.kind === "thinking") open.fromReasoning = true;
      delta({ type: "thinking_delta", thinking: text });
    }
    for (const detail of details) {
      if (detail.type === "reasoning.encrypted") {
        if (typeof detail.data === "string" && isAnthropic(detail)) {
          start(null, { type: "redacted_thinking", data: detail.data });
          emit({ type: "content_block_stop", index });
        }
        continue;
      }
      if (!isThinkingDetail(detail)) continue;
      const detailText = textOfDetail(detail);
      // Providers that send reasoning only as details: the text comes from them (never twice).
      if (!text && detailText) {
        thinking(indexOf(detail));
        if (open?.kind === "thinking" && !open.fromReasoning)
          delta({ type: "thinking_delta", thinking: detailText });
      }
      if (typeof detail.signature === "string" && detail.signature && isAnthropic(detail)) {
        thinking(indexOf(detail));
        delta({ type: "signature_delta", signature: detail.signature });
      }
    }
  };

  return {
    chunk(chunk: ChatChunk): void {
      for (const choice of chunk.choices) {
        if (choice.index !== 0) continue;
        const d = choice.delta;
        reasoning(d.reasoning, d.reasoning_details ?? []);
        const text = `${d.content ?? ""}${d.refusal ?? ""}`;
        if (text) {
          if (open?.kind !== "text") start({ kind: "text" }, { type: "text", text: "" });
          delta({ type: "text_delta", text });
        }
        for (const call of d.tool_calls ?? []) {
          const step = tools.add(call, open?.kind === "tool" ? open.tool : undefined);
          if (step && "open" in step) toolUse(step.open);
          else if (step) delta({ type: "input_json_delta", partial_json: step.args });
        }
      }
    },
    /** Closes the open block, then writes the tool calls that could not be streamed in order, each whole. */
    close: () => {
      stop();
      for (const call of tools.rest()) {
        toolUse(call);
        stop();
      }
    },
  };
}

/** Messages stream events for one answer. */
export function messagesStream(meta: ChatMeta): StreamFormat {
  let out = "";
  const blocks = contentBlocks((event) => {
    out += frame(event.type, event);
  });
  const take = () => {
    const frames = out;
    out = "";
    return frames;
  };

  return {
    open: () => {
      const debug = meta.echo === undefined ? "" : debugFrames(meta.echo);
      return `${frame("message_start", startEvent(meta))}${debug}`;
    },
    chunk: (chunk) => {
      blocks.chunk(chunk);
      return take();
    },
    end: (folded, usage) => {
      blocks.close();
      return `${take()}${frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: stopReasonOf(folded), stop_sequence: stopSequenceOf(folded) },
        usage: usageOf(usage, meta),
      })}${frame("message_stop", { type: "message_stop" })}`;
    },
    // What the answer used and costs until it broke off (charged as produced) goes in a message_delta
    // without a stop reason, where a Messages client reads usage; then the error.
    fail: (error, folded) => {
      blocks.close();
      const { usage } = folded.finalUsage(meta);
      return `${take()}${failureDelta(usage, chargedOnFailure(folded, meta))}${frame(
        "error",
        anthropicErrorEnvelope(error.code, error.message),
      )}`;
    },
    keepalive: frame("ping", { type: "ping" }),
  };
}

/** One Messages `message`: the blocks the stream would have sent, in the same order. */
export function messagesJson(meta: ChatMeta): BodyFormat {
  const snapshot = new MessageSnapshot();
  const blocks = contentBlocks((event) => snapshot.apply(event));
  return {
    chunk: (chunk) => blocks.chunk(chunk),
    body: (folded, usage) => {
      blocks.close();
      return {
        id: meta.id,
        type: "message" as const,
        role: "assistant" as const,
        model: meta.model,
        provider: meta.provider,
        content: snapshot.blocks(),
        stop_reason: stopReasonOf(folded),
        stop_sequence: stopSequenceOf(folded),
        usage: usageOf(usage, meta),
      };
    },
  };
}

export const MESSAGES: ChatClientFormat = {
  apiType: "messages",
  stream: messagesStream,
  json: messagesJson,
  passthrough: {
    wire: "anthropic-messages",
    stream: messagesPassthroughStream,
    json: messagesPassthroughJson,
  },
};
