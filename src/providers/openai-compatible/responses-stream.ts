// OpenAI Responses stream events (response.created ... response.completed) read back as chat chunks, for
// folding and billing; the events themselves travel on as each chunk's `raw` (see responses.ts).
import { UpstreamError } from "../errors";
import { END_OF_STREAM } from "../sse";
import type { ChatChoiceDelta, ChatChunk, ChatDelta, ChatFinishReason, ChatUsage, SseEvent } from "../types";

/** The reasoning_details format of OpenAI's reasoning items (encrypted content replayable to OpenAI only). */
export const OPENAI_REASONING_FORMAT = "openai-responses-v1";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) ? v : undefined;
const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** OpenAI's error codes as the HTTP status it answers them with before a stream starts. */
const ERROR_STATUS: Record<string, number> = {
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  server_error: 500,
  invalid_prompt: 400,
  context_length_exceeded: 400,
};

/** A `response.failed` or `error` event: the stream failed after the upstream answered 200. */
export function responsesStreamError(error: unknown, provider: string): UpstreamError {
  const e = isObject(error) ? error : {};
  const code = str(e.code) ?? str(e.type);
  const message = str(e.message);
  return new UpstreamError({
    kind: "http",
    status: code ? ERROR_STATUS[code] : undefined,
    providerCode: code,
    message: `Provider ${provider} failed mid-stream${message ? `: ${message}` : ""}`,
  });
}

/** OpenAI's usage: input_tokens include cached ones (as the normal form's prompt does). */
export function responsesUsageOf(u: unknown): ChatUsage | undefined {
  if (!isObject(u)) return undefined;
  const input = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  const output = isObject(u.output_tokens_details) ? u.output_tokens_details : {};
  const usage: ChatUsage = {
    promptTokens: count(u.input_tokens) ?? 0,
    completionTokens: count(u.output_tokens) ?? 0,
  };
  const cached = count(input.cached_tokens);
  if (cached) usage.cachedTokens = cached;
  const reasoning = count(output.reasoning_tokens);
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/** What each output item (by output_index) turns into on the chat side. */
type Item = { kind: "function"; toolIndex: number } | { kind: "reasoning"; index: number; id: string };

/**
 * Translates the events of one Responses stream, one event at a time. Function calls are numbered 0, 1, 2...
 * in the order their items are added, reasoning items likewise for reasoning_details (which keep the item id
 * and encrypted content, so a replay reaches OpenAI as it came). The role rides on the first chunk with
 * content, so an error before any output still lets the router try elsewhere.
 */
export class ResponsesStreamReader {
  private readonly items = new Map<number, Item>();
  private model: string | undefined;
  private upstreamId: string | undefined;
  private tools = 0;
  private reasoningItems = 0;
  private started = false;

  constructor(private readonly provider: string) {}

  private chunk(delta: ChatDelta): ChatChunk {
    if (!this.started) {
      delta = { role: "assistant", ...delta };
      this.started = true;
    }
    const out: ChatChunk = { choices: [{ index: 0, delta, finish_reason: null }] };
    if (this.model) out.model = this.model;
    if (this.upstreamId) out.upstreamId = this.upstreamId;
    return out;
  }

  /** The last chunk: how the response ended, and its usage. */
  private end(response: Json, finish: ChatFinishReason, native: string): ChatChunk {
    const choice: ChatChoiceDelta = {
      index: 0,
      delta: this.started ? {} : { role: "assistant" },
      finish_reason: finish,
      native_finish_reason: native,
    };
    const out: ChatChunk = { choices: [choice] };
    const usage = responsesUsageOf(response.usage);
    if (usage) out.usage = usage;
    if (this.model) out.model = this.model;
    if (this.upstreamId) out.upstreamId = this.upstreamId;
    return out;
  }

  /** The chunk one event makes, if any; END_OF_STREAM at `[DONE]`. Throws an UpstreamError for a failure. */
  read({ data }: SseEvent): ChatChunk | undefined | typeof END_OF_STREAM {
    if (data === "[DONE]") return END_OF_STREAM;
    let payload: Json;
    try {
      const parsed: unknown = JSON.parse(data);
      payload = isObject(parsed) ? parsed : {};
    } catch {
      throw new UpstreamError({
        kind: "invalid_response",
        message: `Provider ${this.provider} sent a stream event the gateway cannot read`,
      });
    }
    const response = isObject(payload.response) ? payload.response : {};
    const outputIndex = count(payload.output_index) ?? -1;
    switch (payload.type) {
      case "error":
        throw responsesStreamError(isObject(payload.error) ? payload.error : payload, this.provider);
      case "response.created":
      case "response.in_progress":
      case "response.queued":
        if (typeof response.model === "string") this.model = response.model;
        if (typeof response.id === "string") this.upstreamId = response.id;
        return undefined;
      case "response.output_item.added":
        return this.itemAdded(outputIndex, isObject(payload.item) ? payload.item : {});
      case "response.output_item.done":
        return this.itemDone(outputIndex, isObject(payload.item) ? payload.item : {});
      case "response.output_text.delta": {
        const delta = str(payload.delta);
        return delta ? this.chunk({ content: delta }) : undefined;
      }
      case "response.refusal.delta": {
        const delta = str(payload.delta);
        return delta ? this.chunk({ refusal: delta }) : undefined;
      }
      case "response.function_call_arguments.delta": {
        const item = this.items.get(outputIndex);
        const delta = str(payload.delta);
        if (item?.kind !== "function" || !delta) return undefined;
        return this.chunk({ tool_calls: [{ index: item.toolIndex, function: { arguments: delta } }] });
      }
      case "response.reasoning_summary_text.delta":
        return this.reasoning(outputIndex, "reasoning.summary", "summary", str(payload.delta));
      case "response.reasoning_text.delta":
        return this.reasoning(outputIndex, "reasoning.text", "text", str(payload.delta));
      case "response.completed": {
        const called = [...this.items.values()].some((i) => i.kind === "function");
        return this.end(response, called ? "tool_calls" : "stop", "completed");
      }
      case "response.incomplete": {
        const details = isObject(response.incomplete_details) ? response.incomplete_details : {};
        const reason = str(details.reason) ?? "incomplete";
        return this.end(response, reason === "content_filter" ? "content_filter" : "length", reason);
      }
      case "response.failed":
        throw responsesStreamError(response.error, this.provider);
      default:
        // Part boundaries, `.done` events and event types added later carry nothing new for the chunks.
        return undefined;
    }
  }

  private itemAdded(outputIndex: number, item: Json): ChatChunk | undefined {
    if (item.type === "function_call") {
      const toolIndex = this.tools++;
      this.items.set(outputIndex, { kind: "function", toolIndex });
      const args = str(item.arguments);
      return this.chunk({
        tool_calls: [
          {
            index: toolIndex,
            id: str(item.call_id) ?? "",
            type: "function",
            function: { name: str(item.name) ?? "", arguments: args ?? "" },
          },
        ],
      });
    }
    if (item.type === "reasoning") {
      this.items.set(outputIndex, {
        kind: "reasoning",
        index: this.reasoningItems++,
        id: str(item.id) ?? "",
      });
    }
    return undefined;
  }

  /** A finished reasoning item's encrypted content, the part of it a stateless replay needs. */
  private itemDone(outputIndex: number, item: Json): ChatChunk | undefined {
    const known = this.items.get(outputIndex);
    const encrypted = str(item.encrypted_content);
    if (known?.kind !== "reasoning" || !encrypted) return undefined;
    return this.chunk({
      reasoning_details: [
        {
          type: "reasoning.encrypted",
          data: encrypted,
          id: known.id,
          format: OPENAI_REASONING_FORMAT,
          index: known.index,
        },
      ],
    });
  }

  private reasoning(
    outputIndex: number,
    type: string,
    field: "summary" | "text",
    delta: string | undefined,
  ): ChatChunk | undefined {
    const item = this.items.get(outputIndex);
    if (item?.kind !== "reasoning" || !delta) return undefined;
    return this.chunk({
      reasoning: delta,
      reasoning_details: [
        { type, [field]: delta, id: item.id, format: OPENAI_REASONING_FORMAT, index: item.index },
      ],
    });
  }
}
