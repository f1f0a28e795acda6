// Anthropic Messages stream events shared by both ways of answering /messages (re-encoded from chunks, or
// passed through from an Anthropic upstream): frames, usage with the gateway's cost, stop reasons, and the
// `message` a JSON answer is, accumulated from events the way Anthropic's own clients do.
import type { ChatUsage } from "../../providers/types";
import { type ChatMeta, type Folded, usageWire } from "../chat-stream";

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** One SSE frame with its `event:` line (the Anthropic client ignores frames without one). */
export const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** `debug.echo_upstream_body`: one `event: debug` frame per body sent upstream, failed attempts' first. */
export const debugFrames = (bodies: unknown[]) =>
  bodies.map((body) => frame("debug", { type: "debug", debug: { echo_upstream_body: body } })).join("");

/**
 * The `message_start` event of a message the gateway writes: no content yet, and until `message_delta`
 * brings the real counts, the prompt as estimated for admission.
 */
export function startEvent(meta: ChatMeta): Json {
  return {
    type: "message_start",
    message: {
      id: meta.id,
      type: "message",
      role: "assistant",
      model: meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: meta.promptEstimate,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 0,
      },
    },
  };
}

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

const STOP_OF_FINISH: Record<NonNullable<Folded["finish"]>, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
  error: "end_turn",
};

type Ending = Pick<Folded, "finish" | "native"> & { stopSequence?: string | null };

export function stopReasonOf(folded: Ending): string {
  if (stopSequenceOf(folded) !== null) return "stop_sequence";
  if (folded.native && ANTHROPIC_STOPS.has(folded.native)) return folded.native;
  return STOP_OF_FINISH[folded.finish ?? "stop"];
}

/** `stop_sequence` of a Messages answer: the one that ended it, when it was one. */
export const stopSequenceOf = (folded: Ending): string | null =>
  folded.finish === "stop" ? (folded.stopSequence ?? null) : null;

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

/** What the gateway adds to a Messages usage object: the cost (USD) of the usage billed, and `is_byok`. */
export const gatewayCost = (usage: ChatUsage, meta: ChatMeta) => ({
  cost: usageWire(usage, meta).cost,
  is_byok: meta.isByok,
});

/** The usage of the wire, with the gateway's cost (USD) beside Anthropic's counts. */
export const usageOf = (usage: ChatUsage, meta: ChatMeta) => ({
  ...anthropicUsage(usage),
  ...gatewayCost(usage, meta),
});

/**
 * The message_delta of an answer that broke off: no stop reason, and the usage and cost until the break
 * (`meta` prices it as charged), so a Messages client sees the charge before the `error` event.
 */
export const failureDelta = (usage: ChatUsage, meta: ChatMeta) =>
  frame("message_delta", {
    type: "message_delta",
    delta: { stop_reason: null, stop_sequence: null },
    usage: usageOf(usage, meta),
  });

/** Tool input as an object: arguments that are not a JSON object (a cut-off answer) give `{}`. */
export function inputOf(args: string): Json {
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

const str = (v: unknown) => (typeof v === "string" ? v : "");

/**
 * A `message` built from its stream events: message_start gives the message, content blocks fill in at
 * their index from their deltas (text, thinking, signature, citations, tool input JSON parsed at the
 * block's stop), message_delta sets the stop reason and updates the usage. Blocks keep every field the
 * events gave them, so an upstream's message comes out as the upstream built it.
 */
export class MessageSnapshot {
  message: Json = {};
  private content: Json[] = [];
  private json = new Map<number, string>();

  apply(event: Json): void {
    const index = typeof event.index === "number" ? event.index : -1;
    switch (event.type) {
      case "message_start":
        this.message = isObject(event.message) ? { ...event.message } : {};
        break;
      case "content_block_start":
        if (index >= 0 && isObject(event.content_block)) this.content[index] = { ...event.content_block };
        break;
      case "content_block_delta": {
        const block = this.content[index];
        const d = isObject(event.delta) ? event.delta : {};
        if (!block) break;
        if (d.type === "text_delta") block.text = str(block.text) + str(d.text);
        else if (d.type === "thinking_delta") block.thinking = str(block.thinking) + str(d.thinking);
        else if (d.type === "signature_delta") block.signature = str(d.signature);
        else if (d.type === "input_json_delta")
          this.json.set(index, (this.json.get(index) ?? "") + str(d.partial_json));
        else if (d.type === "citations_delta")
          block.citations = [...(Array.isArray(block.citations) ? block.citations : []), d.citation];
        break;
      }
      case "content_block_stop": {
        const args = this.json.get(index);
        const block = this.content[index];
        if (args !== undefined && block) block.input = inputOf(args);
        this.json.delete(index);
        break;
      }
      case "message_delta": {
        if (isObject(event.delta)) Object.assign(this.message, event.delta);
        if (isObject(event.usage)) {
          const usage: Json = isObject(this.message.usage) ? { ...this.message.usage } : {};
          // Cumulative counts; a null leaves the count message_start gave.
          for (const [k, v] of Object.entries(event.usage)) if (v != null || !(k in usage)) usage[k] = v;
          this.message.usage = usage;
        }
        break;
      }
    }
  }

  /** The blocks so far, in index order. */
  blocks(): Json[] {
    return this.content.filter(Boolean);
  }
}
