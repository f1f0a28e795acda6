// Anthropic Messages stream events (message_start ... message_stop) read back as OpenAI-shaped chat chunks.
import { UpstreamError } from "../errors";
import { END_OF_STREAM } from "../sse";
import type { ChatChoiceDelta, ChatChunk, ChatDelta, ChatFinishReason, ChatUsage, SseEvent } from "../types";
import { REASONING_FORMAT } from "./request";

const FINISH: Record<string, ChatFinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  pause_turn: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
};

/** Anthropic's error types as the HTTP status it answers them with before a stream starts. */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) ? v : undefined;

/** What each content block (by Anthropic's block index) turns into on the OpenAI side. */
type Block =
  | { kind: "text" }
  | { kind: "thinking"; reasoningIndex: number }
  | { kind: "tool"; toolIndex: number; hasArguments: boolean }
  | { kind: "other" };

/** An `error` event: the stream failed after the upstream answered 200. */
export function anthropicStreamError(payload: unknown, provider: string): UpstreamError {
  const error = isObject(payload) && isObject(payload.error) ? payload.error : {};
  const type = typeof error.type === "string" ? error.type : undefined;
  const message = typeof error.message === "string" ? error.message : undefined;
  return new UpstreamError({
    kind: "http",
    status: type ? ERROR_STATUS[type] : undefined,
    providerCode: type,
    message: `Provider ${provider} failed mid-stream${message ? `: ${message}` : ""}`,
  });
}

/**
 * Token counts. Anthropic's input_tokens leaves out cache reads and writes, so the prompt is all three;
 * message_delta repeats the counts cumulatively (output_tokens is the final one). `cache_creation`
 * splits the writes by how long they are kept: an hour's cost twice the input price, 5 minutes' 1.25x.
 */
class UsageCounter {
  input = 0;
  cacheRead = 0;
  cacheWrite = 0;
  cacheWrite1h = 0;
  output = 0;
  thinking?: number;

  update(u: unknown): void {
    if (!isObject(u)) return;
    this.input = count(u.input_tokens) ?? this.input;
    this.cacheRead = count(u.cache_read_input_tokens) ?? this.cacheRead;
    this.cacheWrite = count(u.cache_creation_input_tokens) ?? this.cacheWrite;
    if (isObject(u.cache_creation)) {
      this.cacheWrite1h = count(u.cache_creation.ephemeral_1h_input_tokens) ?? this.cacheWrite1h;
    }
    this.output = count(u.output_tokens) ?? this.output;
    if (isObject(u.output_tokens_details)) this.thinking = count(u.output_tokens_details.thinking_tokens);
  }

  usage(): ChatUsage {
    const usage: ChatUsage = {
      promptTokens: this.input + this.cacheRead + this.cacheWrite,
      completionTokens: this.output,
    };
    if (this.cacheRead) usage.cachedTokens = this.cacheRead;
    if (this.cacheWrite) usage.cacheWriteTokens = this.cacheWrite;
    if (this.cacheWrite1h) usage.cacheWrite1hTokens = this.cacheWrite1h;
    if (this.thinking) usage.reasoningTokens = this.thinking;
    return usage;
  }
}

/**
 * Translates the events of one Messages stream, one event at a time. Tool calls are numbered 0, 1, 2... in
 * the order their tool_use blocks start, thinking blocks likewise for reasoning_details. The role rides on
 * the first chunk with content, so an error before any output still lets the router try elsewhere.
 */
export class AnthropicStreamReader {
  private readonly blocks = new Map<number, Block>();
  private readonly usage = new UsageCounter();
  private model: string | undefined;
  private upstreamId: string | undefined;
  private tools = 0;
  private reasoningBlocks = 0;
  private started = false;
  /** message_start's usage, not yet handed on with a chunk. */
  private promptUsage: ChatUsage | undefined;

  constructor(private readonly provider: string) {}

  private chunk(delta: ChatDelta, finish?: { raw: string; sequence?: string | undefined }): ChatChunk {
    if (!this.started) {
      delta = { role: "assistant", ...delta };
      this.started = true;
    }
    const choice: ChatChoiceDelta = { index: 0, delta, finish_reason: null };
    if (finish) {
      choice.finish_reason = FINISH[finish.raw] ?? "stop";
      choice.native_finish_reason = finish.raw;
      if (finish.sequence !== undefined) choice.stop_sequence = finish.sequence;
    }
    const out: ChatChunk = { choices: [choice] };
    if (this.model) out.model = this.model;
    if (this.upstreamId) out.upstreamId = this.upstreamId;
    if (this.promptUsage) {
      out.promptUsage = this.promptUsage;
      this.promptUsage = undefined;
    }
    return out;
  }

  /** The chunk one event makes, if any; END_OF_STREAM at message_stop. Throws an UpstreamError for `error`. */
  read({ event, data }: SseEvent): ChatChunk | undefined | typeof END_OF_STREAM {
    if (event === "ping") return undefined;
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
    const type = payload.type ?? event;
    if (type === "error") throw anthropicStreamError(payload, this.provider);

    switch (type) {
      case "message_start": {
        const message = isObject(payload.message) ? payload.message : {};
        if (typeof message.model === "string") this.model = message.model;
        if (typeof message.id === "string") this.upstreamId = message.id;
        this.usage.update(message.usage);
        if (isObject(message.usage)) this.promptUsage = { ...this.usage.usage(), completionTokens: 0 };
        return undefined;
      }
      case "content_block_start":
        return this.blockStart(payload);
      case "content_block_delta":
        return this.blockDelta(payload);
      case "content_block_stop": {
        const block = this.blocks.get(count(payload.index) ?? -1);
        // A tool called without input streams no JSON at all; clients parse the arguments, so send "{}".
        if (block?.kind === "tool" && !block.hasArguments) {
          return this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: "{}" } }] });
        }
        return undefined;
      }
      case "message_delta": {
        this.usage.update(payload.usage);
        const delta = isObject(payload.delta) ? payload.delta : {};
        const stop = typeof delta.stop_reason === "string" ? delta.stop_reason : undefined;
        const sequence = typeof delta.stop_sequence === "string" ? delta.stop_sequence : undefined;
        const out = stop
          ? this.chunk({}, { raw: stop, sequence })
          : {
              choices: [] as ChatChoiceDelta[],
              ...(this.model ? { model: this.model } : {}),
              ...(this.upstreamId ? { upstreamId: this.upstreamId } : {}),
            };
        out.usage = this.usage.usage();
        return out;
      }
      case "message_stop":
        return END_OF_STREAM;
      default:
        // Event types added later are skipped, as Anthropic's versioning policy asks of clients.
        return undefined;
    }
  }

  private blockStart(payload: Json): ChatChunk | undefined {
    const index = count(payload.index) ?? this.blocks.size;
    const block = isObject(payload.content_block) ? payload.content_block : {};
    if (block.type === "text") {
      this.blocks.set(index, { kind: "text" });
      if (typeof block.text === "string" && block.text) return this.chunk({ content: block.text });
    } else if (block.type === "thinking") {
      const reasoningIndex = this.reasoningBlocks++;
      this.blocks.set(index, { kind: "thinking", reasoningIndex });
      if (typeof block.thinking === "string" && block.thinking) {
        return this.chunk({
          reasoning: block.thinking,
          reasoning_details: [reasoningDetail(reasoningIndex, { text: block.thinking })],
        });
      }
    } else if (block.type === "redacted_thinking") {
      const reasoningIndex = this.reasoningBlocks++;
      this.blocks.set(index, { kind: "other" });
      if (typeof block.data === "string") {
        return this.chunk({
          reasoning_details: [
            {
              type: "reasoning.encrypted",
              data: block.data,
              format: REASONING_FORMAT,
              index: reasoningIndex,
            },
          ],
        });
      }
    } else if (block.type === "tool_use") {
      const toolIndex = this.tools++;
      this.blocks.set(index, { kind: "tool", toolIndex, hasArguments: false });
      return this.chunk({
        tool_calls: [
          {
            index: toolIndex,
            id: typeof block.id === "string" ? block.id : "",
            type: "function",
            function: { name: typeof block.name === "string" ? block.name : "", arguments: "" },
          },
        ],
      });
    } else {
      // Server tools (web search, code execution) and their results have no chat completions form.
      this.blocks.set(index, { kind: "other" });
    }
    return undefined;
  }

  private blockDelta(payload: Json): ChatChunk | undefined {
    const block = this.blocks.get(count(payload.index) ?? -1);
    const delta = isObject(payload.delta) ? payload.delta : {};
    if (delta.type === "text_delta" && typeof delta.text === "string") {
      if (block?.kind === "text" && delta.text) return this.chunk({ content: delta.text });
    } else if (delta.type === "thinking_delta" && typeof delta.thinking === "string") {
      if (block?.kind === "thinking" && delta.thinking) {
        return this.chunk({
          reasoning: delta.thinking,
          reasoning_details: [reasoningDetail(block.reasoningIndex, { text: delta.thinking })],
        });
      }
    } else if (delta.type === "signature_delta" && typeof delta.signature === "string") {
      if (block?.kind === "thinking") {
        return this.chunk({
          reasoning_details: [reasoningDetail(block.reasoningIndex, { signature: delta.signature })],
        });
      }
    } else if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
      if (block?.kind === "tool" && delta.partial_json) {
        block.hasArguments = true;
        return this.chunk({
          tool_calls: [{ index: block.toolIndex, function: { arguments: delta.partial_json } }],
        });
      }
    }
    return undefined;
  }
}

const reasoningDetail = (index: number, fields: Json) => ({
  type: "reasoning.text",
  ...fields,
  format: REASONING_FORMAT,
  index,
});

/** The chunks of a whole event stream (tests, and readers that need no raw events). */
export async function* anthropicChunks(
  events: AsyncIterable<SseEvent>,
  provider: string,
): AsyncGenerator<ChatChunk, void, undefined> {
  const reader = new AnthropicStreamReader(provider);
  for await (const event of events) {
    const chunk = reader.read(event);
    if (chunk === END_OF_STREAM) return;
    if (chunk) yield chunk;
  }
}
