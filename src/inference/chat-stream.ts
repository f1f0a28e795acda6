// A chat answer from an opened upstream stream: Server-Sent Events to a streaming client (every event sent
// as it arrives, keep-alives while the upstream thinks, mid-stream errors as the format's error event),
// or one aggregated JSON body. Either way `done` tells the pipeline what to settle. The client format
// (chat completions, responses, messages) only decides how frames and bodies are written: StreamFormat.
import type { ApiError } from "../lib/errors";
import { chargedMicros, microsToUsd } from "../lib/money";
import { UpstreamError } from "../providers/errors";
import type {
  ChatChoiceDelta,
  ChatChunk,
  ChatToolCallDelta,
  ChatUsage,
  UpstreamWire,
} from "../providers/types";
import { CHAT_IDLE_MS, CHAT_TOTAL_MS, DEFAULT_DEADLINES } from "./deadlines";
import type { CommittedStream } from "./early-stream";
import type { Answer, Final } from "./pipeline";
import { healedJson } from "./plugins";

/** A comment line while waiting on the upstream: well under the common 100 s idle timeouts of proxies. */
export const KEEPALIVE_MS = 15_000;
export const KEEPALIVE = ": OPENROUTER PROCESSING\n\n";
/** The headers of every streamed answer, committed early or not (the pipeline adds its ids). */
export const SSE_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
} as const;

/** An upstream stream whose first event was read inside the attempt (so failover could still happen). */
export interface OpenedChat {
  iterator: AsyncIterator<ChatChunk>;
  first: IteratorResult<ChatChunk>;
  /** Aborts the upstream request (client gone, deadline). */
  abort: AbortController;
  /** The upstream's wire format when its chunks carry their raw events (see ChatStream.wire). */
  wire?: UpstreamWire;
  /** The attempt's provider (its failures name it). */
  provider: string;
}

/** Everything about the served request the answer needs besides the stream. */
export interface ChatMeta {
  id: string;
  created: number;
  model: string;
  provider: string;
  isByok: boolean;
  /** Prompt tokens estimated before the call (used when the upstream reports no usage). */
  promptEstimate: number;
  /** The most output the attempt asked for (max_tokens or the model's cap): an estimate never passes it. */
  outputCap?: number;
  /** The cost of a usage, in micro-dollars, split as the usage object reports it. */
  price(usage: ChatUsage): { prompt: number; completion: number };
  /** `debug.echo_upstream_body`: the bodies sent upstream, one per attempted provider, first in the stream. */
  echo?: unknown[];
  /** The response-healing plugin on a JSON response_format: a malformed JSON answer is repaired. */
  healJson?: boolean;
  /** Media parts of the prompt (images and files; audio), counted onto the record's usage. */
  mediaPrompt?: { media: number; audio: number };
}

/**
 * A tool call's name with one more streamed fragment. A name given again whole (hosts that repeat it on
 * every chunk) is not a fragment: it is the name, as openai's own stream helper reads it.
 */
export const joinedName = (name: string, more: string | undefined): string =>
  !more || more === name ? name : `${name}${more}`;

/** What a stream produced, folded as it passes (for the record, the bill and the JSON answer). */
export class Folded {
  content = "";
  reasoning = "";
  /** Characters of reasoning produced but not shown (`reasoning.exclude`). */
  hiddenReasoning = 0;
  refusal = "";
  reasoningDetails: Array<Record<string, unknown>> = [];
  tools = new Map<number, { id: string; name: string; arguments: string }>();
  finish: ChatChoiceDelta["finish_reason"] = null;
  native: string | null = null;
  /** The stop sequence that ended the answer, when the provider said which. */
  stopSequence: string | null = null;
  usage?: ChatUsage;
  /** The prompt's tokens as the upstream counted them before its final usage (see ChatChunk.promptUsage). */
  promptUsage?: ChatUsage;
  /** The upstream's id for its answer, as its first chunk that names one says. */
  upstreamId: string | null = null;
  /** Choice 0's token log probabilities, when the upstream sent any: each list joined across chunks. */
  logprobs: { content: unknown[] | null; refusal?: unknown[] | null } | null = null;

  add(chunk: ChatChunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    if (chunk.promptUsage) this.promptUsage = chunk.promptUsage;
    if (chunk.hiddenReasoning) this.hiddenReasoning += chunk.hiddenReasoning;
    if (this.upstreamId === null && chunk.upstreamId) this.upstreamId = chunk.upstreamId;
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue;
      const d = choice.delta;
      if (d.content) this.content += d.content;
      if (d.reasoning) this.reasoning += d.reasoning;
      if (d.refusal) this.refusal += d.refusal;
      if (d.reasoning_details) for (const detail of d.reasoning_details) this.addDetail(detail);
      if (d.tool_calls) for (const call of d.tool_calls) this.addTool(call);
      if (choice.finish_reason) this.finish = choice.finish_reason;
      if (choice.native_finish_reason) this.native = choice.native_finish_reason;
      if (choice.stop_sequence) this.stopSequence = choice.stop_sequence;
      if (choice.logprobs != null) this.addLogprobs(choice.logprobs);
    }
  }

  /** OpenAI's `{content, refusal}` lists of one chunk, appended to those of the chunks before. */
  private addLogprobs(given: unknown): void {
    if (typeof given !== "object" || given === null) return;
    const lists = given as { content?: unknown; refusal?: unknown };
    this.logprobs ??= { content: null };
    for (const field of ["content", "refusal"] as const) {
      const more = lists[field];
      if (!Array.isArray(more)) continue;
      const into = this.logprobs[field] ?? [];
      for (const item of more) into.push(item);
      this.logprobs[field] = into;
    }
  }

  /** Streamed fragments of one reasoning block share an index: one entry per block, text joined. */
  private addDetail(detail: Record<string, unknown>): void {
    const last = this.reasoningDetails.at(-1);
    if (last && detail.index !== undefined && last.index === detail.index && last.type === detail.type) {
      for (const field of ["text", "summary", "data", "signature"]) {
        const more = detail[field];
        if (typeof more === "string")
          last[field] = `${typeof last[field] === "string" ? last[field] : ""}${more}`;
      }
      return;
    }
    this.reasoningDetails.push({ ...detail });
  }

  private addTool(call: ChatToolCallDelta): void {
    const tool = this.tools.get(call.index) ?? { id: "", name: "", arguments: "" };
    if (call.id) tool.id = call.id;
    tool.name = joinedName(tool.name, call.function?.name);
    if (call.function?.arguments) tool.arguments += call.function.arguments;
    this.tools.set(call.index, tool);
  }

  /** Any output at all (zero-completion insurance charges nothing without it). */
  produced(): boolean {
    return (
      this.content.length +
        this.reasoning.length +
        this.hiddenReasoning +
        this.refusal.length +
        this.tools.size >
      0
    );
  }

  /**
   * The upstream's usage, or, when it sent none (a stream cut short), one made of the prompt's tokens as
   * the upstream counted them early if it did (cache reads and writes with them), else the estimate,
   * and the output counted from its text (marked estimated).
   */
  finalUsage({ promptEstimate, outputCap }: Pick<ChatMeta, "promptEstimate" | "outputCap">): {
    usage: ChatUsage;
    estimated: boolean;
  } {
    if (this.usage) return { usage: this.usage, estimated: false };
    let chars = this.content.length + this.reasoning.length + this.hiddenReasoning + this.refusal.length;
    for (const t of this.tools.values()) chars += t.name.length + t.arguments.length;
    const {
      completionTokens: _,
      reasoningTokens: __,
      ...prompt
    } = this.promptUsage ?? {
      promptTokens: promptEstimate,
    };
    // About four characters a token, never more than the upstream could have written (text whose tokens
    // are short, such as runs of one letter, would be billed past max_tokens).
    const completionTokens = Math.min(Math.ceil(chars / 4), outputCap ?? Number.POSITIVE_INFINITY);
    return { usage: { ...prompt, completionTokens }, estimated: true };
  }
}

/** The usage object of the wire (chat.completion and the final chunk alike). */
export function usageWire(usage: ChatUsage, meta: ChatMeta) {
  const { prompt, completion } = meta.price(usage);
  const total = chargedMicros(prompt + completion);
  // Whole micro-dollars like the cost, and adding up to it: the completion part takes what rounding left.
  const promptMicros = chargedMicros(prompt);
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cachedTokens ?? 0,
      ...(usage.cacheWriteTokens ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    cost: microsToUsd(total),
    is_byok: meta.isByok,
    cost_details: {
      upstream_inference_cost: meta.isByok ? microsToUsd(total) : null,
      upstream_inference_prompt_cost: microsToUsd(promptMicros),
      upstream_inference_completions_cost: microsToUsd(total - promptMicros),
    },
  };
}

/** Zero-completion insurance: a request that ends in an error before any output costs nothing. */
const insured = (folded: Folded, status: Final["status"]) =>
  status !== "completed" && status !== "cancelled" && !folded.produced();

/** The price of an insured answer. */
const NOTHING = () => ({ prompt: 0, completion: 0 });

/**
 * The meta a failed answer's usage is priced with in its failure event: at no cost when the insurance
 * covers it, so the event says what the record charges.
 */
export const chargedOnFailure = (folded: Folded, meta: ChatMeta): ChatMeta =>
  insured(folded, "failed") ? { ...meta, price: NOTHING } : meta;

function finalOf(folded: Folded, meta: ChatMeta, status: Final["status"], error: string | null): Final {
  const { usage, estimated } = folded.finalUsage(meta);
  const { prompt, completion } = (insured(folded, status) ? NOTHING : meta.price)(usage);
  return {
    costMicros: prompt + completion,
    usage: {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.promptTokens + usage.completionTokens,
      ...(usage.cachedTokens ? { cached_tokens: usage.cachedTokens } : {}),
      ...(usage.cacheWriteTokens ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
      ...(usage.cacheWrite1hTokens ? { cache_write_1h_tokens: usage.cacheWrite1hTokens } : {}),
      ...(usage.reasoningTokens ? { reasoning_tokens: usage.reasoningTokens } : {}),
      ...(estimated ? { estimated: 1 } : {}),
      ...(meta.mediaPrompt
        ? { media_prompt: meta.mediaPrompt.media, input_audio_prompt: meta.mediaPrompt.audio }
        : {}),
    },
    status,
    error,
    finishReason: folded.finish,
    nativeFinishReason: folded.native,
    upstreamId: folded.upstreamId,
  };
}

/** A failure after the first byte: the status the spec maps it to, and its error_type. */
export interface StreamError {
  code: number;
  message: string;
  metadata: { error_type: string; provider_code?: string };
}

/**
 * How one client format writes a chat stream. Each member returns whole SSE frames (each ending in a
 * blank line), or "" for nothing; `folded` already holds the chunk being written.
 */
export interface StreamFormat {
  /** Frames before the first upstream event (the debug echo, a "created" event). */
  open(): string;
  chunk(chunk: ChatChunk, folded: Folded): string;
  /** The frames that end a stream the upstream completed, with its final usage. */
  end(folded: Folded, usage: ChatUsage): string;
  /** The frames that end a stream the upstream broke after the first byte. */
  fail(error: StreamError, folded: Folded): string;
  /** Sent while the upstream is silent (a comment, or the format's ping event). */
  keepalive: string;
}

/** How one client format writes a JSON answer: told every chunk as it is read, then asked for the body. */
export interface BodyFormat {
  chunk?(chunk: ChatChunk, folded: Folded): void;
  body(folded: Folded, usage: ChatUsage): unknown;
}

/**
 * The error chunk's `error` (integer code, error_type from the status the spec maps it to). A timeout
 * (the idle deadline between chunks) is 408, as the same timeout answers a JSON request.
 */
export function streamError(err: unknown): StreamError {
  const e = err instanceof UpstreamError ? err : undefined;
  const code =
    e?.kind === "timeout"
      ? 408
      : e?.status === 429 || e?.status === 529 || e?.status === 503
        ? e.status
        : 502;
  return {
    code,
    message: e?.message ?? "The provider's stream failed",
    metadata: {
      error_type: streamErrorType(code),
      ...(e?.providerCode != null ? { provider_code: String(e.providerCode) } : {}),
    },
  };
}

/**
 * The error chunk's `error` for a request whose attempts all failed after its stream was committed: the
 * status and message its HTTP error would have carried.
 */
export function committedStreamError(e: ApiError): StreamError {
  const code = e.metadata?.provider_code;
  return {
    code: e.status,
    message: e.message,
    metadata: {
      error_type: streamErrorType(e.status),
      ...(code != null ? { provider_code: String(code) } : {}),
    },
  };
}

/** The error_type an error chunk gives its status. */
function streamErrorType(status: number): string {
  if (status === 429) return "rate_limit_exceeded";
  if (status === 529) return "provider_overloaded";
  if (status === 503) return "provider_unavailable";
  if (status === 524 || status === 408) return "timeout";
  return status < 500 ? "invalid_request" : "server";
}

/**
 * The wire form of one upstream chunk's choices: finish_reason always present, optional fields omitted.
 * Each choice's first delta says role "assistant" whether the upstream's did or not, as OpenAI's do
 * (openai's stream helper throws "missing role" without it); `roled` holds the choices that had it.
 */
function choicesWire(chunk: ChatChunk, roled: Set<number>) {
  return chunk.choices.map((c) => {
    const delta: Record<string, unknown> = {};
    if (!roled.has(c.index)) {
      roled.add(c.index);
      delta.role = "assistant";
    }
    for (const [k, v] of Object.entries(c.delta)) if (v != null) delta[k] = v;
    return {
      index: c.index,
      delta,
      finish_reason: c.finish_reason ?? null,
      ...(c.native_finish_reason != null ? { native_finish_reason: c.native_finish_reason } : {}),
      ...(c.logprobs != null ? { logprobs: c.logprobs } : {}),
    };
  });
}

/**
 * One timer for a whole answer, firing every KEEPALIVE_MS: waits on the upstream race against it
 * rather than against a new timer per event (a timer per chunk was a tenth of a stream's CPU, and
 * left one pending timer per chunk behind). Stop it when the answer ends.
 */
class Ticker {
  private tick: Promise<"tick"> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  next(): Promise<"tick"> {
    this.tick ??= new Promise<"tick">((resolve) => {
      this.timer = setTimeout(() => {
        this.tick = null;
        resolve("tick");
      }, KEEPALIVE_MS);
    });
    return this.tick;
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * Whether a chunk carries some of the answer (text, reasoning, a tool call), not only a role or usage:
 * until one does, the model may still be thinking in silence, and is given the first token's time.
 */
const carriesAnswer = (chunk: ChatChunk) =>
  chunk.choices.some(
    (c) =>
      !!c.delta.content ||
      !!c.delta.reasoning ||
      (c.delta.tool_calls?.length ?? 0) > 0 ||
      (c.delta.reasoning_details?.length ?? 0) > 0,
  );

/**
 * An upstream stream that ended with nothing: no text, reasoning or tool call, no finish reason and no
 * usage (a host that answered 200 and closed, or sent only a role chunk). That is a failed attempt, not
 * an empty answer (which has a finish reason): it fails over while nothing was sent, and is never
 * charged (zero-completion insurance).
 */
export const endedEmpty = (folded: Folded) => !folded.produced() && folded.finish === null && !folded.usage;

/** The attempt's failure for a stream that ended empty (see endedEmpty). */
export const emptyStream = (provider: string) =>
  new UpstreamError({
    kind: "invalid_response",
    message: `Provider ${provider} ended its stream without an answer`,
  });

/**
 * An upstream stream that ended after some of its answer with neither a finish reason nor its usage
 * (which every provider sends last): cut on the way (a proxy, a host that went down), not finished. It
 * is a failure, not a complete answer: a JSON answer fails over (nothing was sent), a streamed one ends
 * with the error event and is billed for what was produced, as an answer broken off by an error is.
 */
const cutShort = (folded: Folded) => folded.finish === null && !folded.usage;
const cutStream = (provider: string) =>
  new UpstreamError({
    kind: "invalid_response",
    message: `Provider ${provider} ended its stream before the answer was finished (no finish reason)`,
  });

/**
 * Whether the upstream has been silent or slow past the chat deadlines. Before any of the answer came (a
 * host may open with an empty role chunk, then think), silence may last as long as the first token may.
 */
const pastDeadline = (now: number, lastEventAt: number, startedAt: number, answering: boolean) =>
  now - lastEventAt >= (answering ? CHAT_IDLE_MS : DEFAULT_DEADLINES.chat.firstByteMs) ||
  now - startedAt >= CHAT_TOTAL_MS;

/** Chat completions chunks (`chat.completion.chunk`), a final usage chunk and `data: [DONE]`. */
export function chatCompletionsStream(meta: ChatMeta): StreamFormat {
  const head = `{"id":${JSON.stringify(meta.id)},"object":"chat.completion.chunk","created":${meta.created},"model":${JSON.stringify(meta.model)},"provider":${JSON.stringify(meta.provider)}`;
  const frame = (rest: string) => `data: ${head},${rest}}\n\n`;
  const roled = new Set<number>();
  /** A delta of choice 0 the gateway writes itself: with the role if it is the first the client sees. */
  const ownDelta = (fields: string) => {
    if (roled.has(0)) return `{${fields}}`;
    roled.add(0);
    return `{"role":"assistant"${fields ? `,${fields}` : ""}}`;
  };
  return {
    open: () =>
      (meta.echo ?? [])
        .map((body) => frame(`"choices":[],"debug":${JSON.stringify({ echo_upstream_body: body })}`))
        .join(""),
    chunk: (chunk) =>
      chunk.choices.length > 0 ? frame(`"choices":${JSON.stringify(choicesWire(chunk, roled))}`) : "",
    // An upstream that ended with its usage but no finish reason (a cut stream has neither: see
    // cutStream) still ends with one, as the JSON answer does: "stop". Clients wait for it (openai's
    // stream helper throws without it).
    end: (folded, usage) =>
      `${folded.finish ? "" : frame(`"choices":[{"index":0,"delta":${ownDelta("")},"finish_reason":"stop"}]`)}${frame(`"choices":[],"usage":${JSON.stringify(usageWire(usage, meta))}`)}data: [DONE]\n\n`,
    // The error chunk also says what the answer used and costs until it broke off (charged as produced).
    fail: (error, folded) => {
      const { usage } = folded.finalUsage(meta);
      return frame(
        `"choices":[{"index":0,"delta":${ownDelta(`"content":""`)},"finish_reason":"error"}],"error":${JSON.stringify(error)},"usage":${JSON.stringify(usageWire(usage, chargedOnFailure(folded, meta)))}`,
      );
    },
    keepalive: KEEPALIVE,
  };
}

/** Frames written and not yet read by the client before the answer stops reading its upstream. */
export const FRAMES_IN_FLIGHT = 16;

/** Where the answer's frames go: the writable side of the response body's native byte pipe. */
interface FrameSink {
  enqueue(bytes: Uint8Array): void;
  close(): void;
}

/**
 * The SSE answer, written into a native byte pipe (IdentityTransformStream) by one loop: each upstream
 * event wakes the isolate once, and its frames are handed to the runtime, which sends them without
 * coming back into JavaScript. (A pull-driven JavaScript stream woke it again for every frame the
 * client took: the larger part of a streamed answer's CPU in the bench.) Back-pressure: while the
 * client has not taken what was written (the pipe is full), the next upstream event is not read. A
 * client that leaves errors the pipe, which stops the loop and aborts the upstream request.
 */
export function sseAnswer(
  opened: OpenedChat,
  meta: ChatMeta,
  format: StreamFormat = chatCompletionsStream(meta),
  committed?: CommittedStream,
): Answer {
  const encoder = new TextEncoder();
  const send = (sink: FrameSink, frames: string) => {
    if (frames) sink.enqueue(encoder.encode(frames));
  };
  const folded = new Folded();
  let settle!: (final: Final) => void;
  const done = new Promise<Final>((resolve) => {
    settle = resolve;
  });
  let finished = false;
  let watch: ReturnType<typeof setInterval> | null = null;
  const finish = (status: Final["status"], error: string | null) => {
    if (finished) return;
    finished = true;
    clearInterval(watch);
    settle(finalOf(folded, meta, status, error));
  };
  let lastEventAt = Date.now();
  const startedAt = Date.now();

  /** Folds the chunk and writes its frames (a chunk a format has no frame for is folded all the same). */
  let answering = false;
  const emitChunk = (sink: FrameSink, chunk: ChatChunk) => {
    if (!answering) answering = carriesAnswer(chunk);
    folded.add(chunk);
    send(sink, format.chunk(chunk, folded));
  };
  let over = false;
  const end = (sink: FrameSink) => {
    if (endedEmpty(folded)) return fail(sink, emptyStream(meta.provider));
    if (cutShort(folded)) return fail(sink, cutStream(meta.provider));
    const { usage } = folded.finalUsage(meta);
    send(sink, format.end(folded, usage));
    // The record says what the client saw: an answer with usage and no finish reason ended as "stop".
    folded.finish ??= "stop";
    over = true;
    sink.close();
    finish("completed", folded.usage ? null : "the provider's stream ended without usage; usage estimated");
  };
  const fail = (sink: FrameSink, err: unknown) => {
    if (over) return;
    opened.abort.abort(err);
    const error = streamError(err);
    send(sink, format.fail(error, folded));
    over = true;
    sink.close();
    finish("failed", `${error.code}: ${error.message}`);
  };

  /** Reads and writes the next upstream event, or the end. */
  const step = async (sink: FrameSink): Promise<void> => {
    let next: IteratorResult<ChatChunk>;
    try {
      next = await opened.iterator.next();
    } catch (err) {
      return fail(sink, err);
    }
    // The watch may have ended the answer meanwhile (a deadline): the late event is dropped.
    if (over) return;
    lastEventAt = Date.now();
    if (next.done) return end(sink);
    emitChunk(sink, next.value);
  };

  // An answer committed before its first token (early-stream.ts) goes on in the pipe the client has.
  const pipe = committed ? null : new IdentityTransformStream();
  const writer = (committed?.writable ?? pipe!.writable).getWriter();
  let left = false;
  const leave = (reason: unknown) => {
    // The client left: stop the upstream; the generation is cancelled and billed for what it produced.
    if (left || over) return;
    left = true;
    opened.abort.abort(reason);
    void opened.iterator.return?.().catch(() => {});
    finish("cancelled", "client disconnected");
  };
  writer.closed.catch(leave);
  // A write completes when the client has taken its bytes: frames written and not yet taken are counted,
  // and the loop waits for the client once there are FRAMES_IN_FLIGHT of them.
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const taken = () => {
    inFlight--;
    if (drained && inFlight < FRAMES_IN_FLIGHT / 2) {
      drained();
      drained = null;
    }
  };
  const sink: FrameSink = {
    // A write that fails means the client left: `closed` rejects too, and says so once.
    enqueue: (bytes) => {
      inFlight++;
      writer.write(bytes).then(taken, taken);
    },
    close: () => void writer.close().catch(() => {}),
  };
  // One timer for the whole answer (not a race against one per event): every KEEPALIVE_MS it sends a
  // keep-alive if the upstream was silent since the last, and ends the answer past a deadline, with
  // the upstream aborted, whatever the read in flight does.
  watch = setInterval(() => {
    if (over || left) return;
    const now = Date.now();
    if (pastDeadline(now, lastEventAt, startedAt, answering)) {
      fail(sink, new UpstreamError({ kind: "timeout", message: "The provider stopped sending the answer" }));
    } else if (now - lastEventAt >= KEEPALIVE_MS) send(sink, format.keepalive);
  }, KEEPALIVE_MS);
  const pump = async () => {
    send(sink, format.open());
    if (opened.first.done) return end(sink);
    emitChunk(sink, opened.first.value);
    while (!over && !left) {
      // Past a few frames the client has not taken, read upstream no further until it took half of
      // them (waiting on every frame would wake the isolate twice per event).
      if (inFlight >= FRAMES_IN_FLIGHT) {
        await new Promise<void>((resolve) => {
          drained = resolve;
        });
      }
      if (left) break;
      await step(sink);
    }
  };
  pump().catch((err: unknown) => {
    leave(err);
    void writer.abort(err).catch(() => {});
  });
  const response = committed?.response ?? new Response(pipe!.readable, { status: 200, headers: SSE_HEADERS });
  return { response, done };
}

/**
 * Reads a JSON answer's whole upstream stream before anything is sent, under the stream's idle and total
 * deadlines, so that a failure on the way still fails over (the client has been sent nothing): the
 * upstream's error is thrown, its request aborted. A client that leaves stops the upstream; the chunks
 * read until then replay, then the leaving, for `jsonAnswer` to answer as cancelled.
 */
export async function collectAnswer(opened: OpenedChat, left?: AbortSignal): Promise<OpenedChat> {
  if (opened.first.done) return opened;
  const rest: ChatChunk[] = [];
  let leaving: unknown;
  const startedAt = Date.now();
  let lastEventAt = startedAt;
  let answering = carriesAnswer(opened.first.value);
  const ticker = new Ticker();
  const onLeave = () => opened.abort.abort(left?.reason);
  left?.addEventListener("abort", onLeave, { once: true });
  try {
    let pending: Promise<IteratorResult<ChatChunk>> | null = null;
    for (;;) {
      // A hung upstream never hangs the client: the same idle and total deadlines as a stream.
      pending ??= opened.iterator.next();
      const next = await Promise.race([pending, ticker.next()]);
      if (next === "tick") {
        if (!pastDeadline(Date.now(), lastEventAt, startedAt, answering)) continue;
        pending.catch(() => {});
        throw new UpstreamError({ kind: "timeout", message: "The provider stopped sending the answer" });
      }
      pending = null;
      lastEventAt = Date.now();
      if (next.done) break;
      if (!answering) answering = carriesAnswer(next.value);
      rest.push(next.value);
    }
  } catch (err) {
    opened.abort.abort(err);
    if (!left?.aborted) throw err;
    leaving = err;
  } finally {
    ticker.stop();
    left?.removeEventListener("abort", onLeave);
  }
  if (leaving === undefined) {
    const folded = new Folded();
    folded.add(opened.first.value);
    for (const chunk of rest) folded.add(chunk);
    if (endedEmpty(folded)) throw emptyStream(opened.provider);
    if (cutShort(folded)) throw cutStream(opened.provider);
  }
  return { ...opened, iterator: replay(rest, leaving) };
}

async function* replay(chunks: ChatChunk[], leaving: unknown): AsyncGenerator<ChatChunk> {
  yield* chunks;
  if (leaving !== undefined) throw leaving;
}

/**
 * One JSON body, rendered by the client format, from an answer `collectAnswer` read whole; or, when the
 * client left (`left` aborted) before it was complete, the cancelled generation, billed for what the
 * upstream produced until it was stopped.
 */
export async function jsonAnswer(
  opened: OpenedChat,
  meta: ChatMeta,
  json: (body: unknown) => Response,
  format: BodyFormat = chatCompletionsJson(meta),
  left?: AbortSignal,
): Promise<{ response: Response; final: Final } | { cancelled: Final }> {
  const folded = new Folded();
  const add = (chunk: ChatChunk) => {
    folded.add(chunk);
    format.chunk?.(chunk, folded);
  };
  if (!opened.first.done) {
    add(opened.first.value);
    try {
      for (let next = await opened.iterator.next(); !next.done; next = await opened.iterator.next()) {
        add(next.value);
      }
    } catch (err) {
      if (left?.aborted) return { cancelled: finalOf(folded, meta, "cancelled", "client disconnected") };
      throw err;
    }
  }
  const { usage } = folded.finalUsage(meta);
  if (meta.healJson && folded.content) folded.content = healedJson(folded.content);
  return {
    response: json(format.body(folded, usage)),
    // The JSON answer says "stop" when the provider gave no reason: the record says what the client saw.
    final: {
      ...finalOf(folded, meta, "completed", folded.usage ? null : "usage estimated"),
      finishReason: folded.finish ?? "stop",
    },
  };
}

/** The tool calls a stream produced, in index order, as chat completions writes them. */
export function toolCallsOf(folded: Folded) {
  return [...folded.tools.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, t]) => ({
      id: t.id,
      type: "function" as const,
      function: { name: t.name, arguments: t.arguments },
    }));
}

/** The chat completions JSON answer. */
export const chatCompletionsJson = (meta: ChatMeta): BodyFormat => ({
  body: (folded, usage) => chatCompletionBody(folded, usage, meta),
});

/** One `chat.completion`. */
export function chatCompletionBody(folded: Folded, usage: ChatUsage, meta: ChatMeta) {
  const tools = toolCallsOf(folded);
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    provider: meta.provider,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        finish_reason: folded.finish ?? "stop",
        native_finish_reason: folded.native,
        // As OpenAI answers: null when the upstream sent none (or none were asked for).
        logprobs: folded.logprobs,
        message: {
          role: "assistant",
          content: folded.content || (tools.length ? null : ""),
          refusal: folded.refusal || null,
          ...(folded.reasoning ? { reasoning: folded.reasoning } : {}),
          ...(folded.reasoningDetails.length ? { reasoning_details: folded.reasoningDetails } : {}),
          ...(tools.length ? { tool_calls: tools } : {}),
        },
      },
    ],
    usage: usageWire(usage, meta),
  };
}
