// The provider adapter interface: one optional member per capability, the credential passed on every call.
// Adapters translate between the gateway's normalized requests and one upstream wire format; they never
// choose endpoints, retry or bill (the router does that) and never log credentials.
import type { Capabilities } from "../catalog/schema";

/** The endpoint an attempt goes to, already resolved for the request's data region. */
export interface ResolvedEndpoint {
  /** Catalog endpoint id. */
  id: string;
  /** Provider slug (for messages and records; adapters must not branch on it). */
  provider: string;
  /** The model id the upstream expects. */
  upstreamModel: string;
  /** Base URL for the request's data region, without a trailing slash. */
  baseUrl: string;
  capabilities: Capabilities;
}

/** The key an attempt authenticates with upstream: the platform's, or the workspace's own (BYOK). */
export interface UpstreamCredential {
  source: "platform" | "byok";
  /** The secret itself; empty for keyless adapters (sandbox). Never log or return it. */
  apiKey: string;
  /** BYOK credential id, for records. */
  credentialId?: string;
}

/** Everything an adapter call needs besides the request itself. */
export interface CallContext {
  endpoint: ResolvedEndpoint;
  credential: UpstreamCredential;
  /** Aborted when the attempt's deadline passes or the client goes away; pass it to fetch. */
  signal: AbortSignal;
  /** The fetch to reach the upstream with (globalThis.fetch in production; tests may replace it). */
  fetch: typeof fetch;
  /**
   * Told the transformed body an attempt sends upstream (never holds credentials: they go in headers),
   * just before it is sent; chat's `debug.echo_upstream_body` shows one per attempted provider.
   */
  onUpstreamBody?: (body: unknown) => void;
}

// ---------- embeddings ----------

/** One multimodal input: a list of text or media parts embedded together into one vector. */
export type EmbeddingsContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "input_audio"; input_audio: { data: string; format?: string } }
  | { type: "input_video"; video_url: { url: string } }
  | { type: "file"; file: { file_data?: string; filename?: string } };

/** Inputs, normalized to one of three shapes (a single string becomes a one-item text list). */
export type EmbeddingsInput =
  | { kind: "text"; texts: string[] }
  | { kind: "tokens"; tokens: number[][] }
  | { kind: "multimodal"; items: EmbeddingsContentPart[][] };

export interface EmbeddingsRequest {
  input: EmbeddingsInput;
  /** Requested vector size; undefined means the endpoint's native size. */
  dimensions?: number;
  /** Hint such as `search_query` or `search_document`; adapters map it to their own vocabulary. */
  inputType?: string;
}

export interface EmbeddingsResult {
  /** One float vector per input item, in input order. The route encodes them (float or base64). */
  vectors: number[][];
  /** Input tokens billed by the upstream (estimated by the adapter when the upstream does not say). */
  promptTokens: number;
}

// ---------- speech ----------

export interface SpeechRequest {
  input: string;
  voice: string;
  format: "mp3" | "pcm";
  /** Only set when the endpoint supports speed. */
  speed?: number;
  /** Stateless voice cloning reference; only routed to endpoints with `voice_cloning`. */
  reference?: { audioDataUrl: string; transcript?: string };
  /** Provider passthrough configuration from the request, forwarded as the adapter sees fit. */
  passthrough?: Record<string, unknown>;
}

/**
 * Speech answers with the upstream Response itself: the route streams its body straight to the client
 * (never buffered). The adapter must only resolve once the upstream answered 2xx with a body; failures
 * are thrown as UpstreamError so the router can fail over before the first byte.
 */
export type SpeechResult = Response;

// ---------- video ----------

export interface VideoSubmitRequest {
  prompt?: string;
  aspectRatio?: string;
  resolution?: string;
  /** `WIDTHxHEIGHT`, when the caller gave an exact size. */
  size?: string;
  durationSeconds?: number;
  frameImages?: Array<{ frameType: "first_frame" | "last_frame"; url: string }>;
  references?: Array<{ type: "image" | "audio" | "video"; url: string }>;
  generateAudio?: boolean;
  seed?: number;
  passthrough?: Record<string, unknown>;
}

export interface VideoSubmitResult {
  /** The upstream's job/operation id; the gateway keeps it to poll and fetch content. */
  upstreamJobId: string;
}

export type UpstreamVideoStatus = "pending" | "in_progress" | "completed" | "failed";

export interface VideoPollResult {
  status: UpstreamVideoStatus;
  /** 0..100 when the upstream reports it. */
  progress?: number;
  /** Public failure reason when status is failed. */
  error?: string;
  /** Seconds of video produced (for billing), when completed. */
  durationSeconds?: number;
  /** Number of content items available (index 0..count-1), when completed. */
  contentCount?: number;
}

export interface VideoAdapter {
  submit(request: VideoSubmitRequest, call: CallContext): Promise<VideoSubmitResult>;
  poll(upstreamJobId: string, call: CallContext): Promise<VideoPollResult>;
  /** The finished video (MP4) as the upstream Response, streamed through, never buffered. */
  content(upstreamJobId: string, index: number, call: CallContext): Promise<Response>;
}

// ---------- chat ----------
// The gateway's normal form of chat is the OpenAI chat completions shape (what clients send and what
// `openai` and `@openrouter/sdk` parse). Adapters translate it to their wire format, and their answer
// (always requested streamed) back into OpenAI-shaped chunks.

/**
 * One message as clients send it (system/developer/user/assistant/tool; text and media parts). A tool
 * message may also carry `is_error` and `cache_control` (from Anthropic tool_result blocks).
 */
/**
 * One message of the chat normal form (OpenAI's shape plus OpenRouter's `reasoning` / `reasoning_details`).
 * An assistant turn that came from a Messages client with thinking interleaved among its text and tool use
 * also carries `block_order`: the kinds of its blocks ("thinking" | "text" | "tool_use") as they stood, so
 * the Anthropic adapter replays them in that order (Anthropic verifies a turn's thinking where it stood).
 * Other adapters drop it.
 */
export type ChatMessage = Record<string, unknown> & { role: string };

export interface ChatRequest {
  messages: ChatMessage[];
  /** Upper bound on completion tokens (the route resolves max_tokens / max_completion_tokens). */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  repetitionPenalty?: number;
  seed?: number;
  stop?: string[];
  logitBias?: Record<string, number>;
  logprobs?: boolean;
  topLogprobs?: number;
  /** OpenAI function tools as sent. */
  tools?: Array<Record<string, unknown>>;
  toolChoice?: unknown;
  parallelToolCalls?: boolean;
  /** `{type:"json_object"}` or `{type:"json_schema", json_schema:{...}}`. */
  responseFormat?: Record<string, unknown>;
  reasoning?: {
    effort?: string;
    max_tokens?: number;
    exclude?: boolean;
    enabled?: boolean;
    /** Reasoning summaries asked for (`auto`, `concise`, `detailed`), for upstreams that write them. */
    summary?: string;
  };
  user?: string;
  /** OpenAI's prompt cache routing key (`prompt_cache_key`), sent by the adapters whose upstream takes it. */
  promptCacheKey?: string;
  /** Prompt caching of the whole request (`cache_control` at the top level: Anthropic's automatic caching). */
  cacheControl?: Record<string, unknown>;
  /**
   * The Anthropic API headers a Messages client sent (`anthropic-version`, `anthropic-beta`), and its
   * `output_config.effort`, passed on by adapters that speak the Anthropic wire format and ignored by the
   * others (which read the effort from `reasoning` when thinking is on).
   */
  anthropic?: { version?: string; beta?: string; effort?: string };
  /**
   * The wire format the client speaks, when an upstream may speak it too: an adapter that can answer in it
   * does (its ChatStream then names that `wire`), so the client gets the upstream's own events.
   */
  clientWire?: UpstreamWire;
  /** Provider passthrough options for this endpoint's provider (`provider.options[<slug>]`). */
  passthrough?: Record<string, unknown>;
}

export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

export interface ChatDelta {
  role?: "assistant";
  content?: string;
  reasoning?: string;
  /** Provider reasoning blocks kept verbatim (e.g. signed thinking), replayed by clients unchanged. */
  reasoning_details?: Array<Record<string, unknown>>;
  refusal?: string;
  tool_calls?: ChatToolCallDelta[];
}

export type ChatFinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "error";

export interface ChatChoiceDelta {
  index: number;
  delta: ChatDelta;
  /** Normalised; null until the choice ends. */
  finish_reason: ChatFinishReason | null;
  /** The provider's own value. */
  native_finish_reason?: string | null;
  /** Which of the request's stop sequences ended the answer, where the provider says (Messages' `stop_sequence`). */
  stop_sequence?: string;
  logprobs?: unknown;
}

/** Token counts as the upstream reported them (input excludes nothing: cached and cache-write are parts of it). */
export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
  cacheWriteTokens?: number;
  /** Of cacheWriteTokens, those written to be kept an hour (Anthropic's `ttl: "1h"`), priced higher. */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
}

/** One server-sent event of an upstream stream. */
export interface SseEvent {
  /** The `event:` name, when the upstream set one (Anthropic does; OpenAI-style streams do not). */
  event?: string;
  /** The `data:` lines of the event joined with `\n`. */
  data: string;
}

/** One normalized event of an upstream chat stream. */
export interface ChatChunk {
  choices: ChatChoiceDelta[];
  /** On the last chunk(s): the upstream's final usage. */
  usage?: ChatUsage;
  /**
   * The prompt's tokens as the upstream counted them before the answer ended (Anthropic's message_start),
   * on one early chunk: what a stream cut before its final usage is billed for its prompt.
   */
  promptUsage?: ChatUsage;
  /**
   * Characters of reasoning taken out of this chunk (`reasoning.exclude`): never shown, still output the
   * bill counts when usage must be estimated.
   */
  hiddenReasoning?: number;
  /** The upstream's model id when it reports one. */
  model?: string;
  /** The upstream's id for its answer (OpenAI's `chatcmpl-...`, Anthropic's `msg_...`), when it reports one. */
  upstreamId?: string;
  /**
   * The upstream's own events this chunk was read from, in order (streams that name their `wire` only):
   * a client speaking that wire format gets them instead of a re-encoding. A chunk may carry events and
   * no choices (an event with nothing to translate, such as `content_block_stop` or `ping`).
   */
  raw?: SseEvent[];
}

/** An upstream wire format a client format can speak too (Anthropic Messages events, OpenAI Responses events). */
export type UpstreamWire = "anthropic-messages" | "openai-responses";

/**
 * An upstream chat stream, already answered 2xx: iterate it for chunks. An error thrown while
 * iterating is an UpstreamError (mid-stream failure); stopping the iteration early (`return()`)
 * cancels the upstream body, and the call's signal aborts the request.
 */
export interface ChatStream extends AsyncIterable<ChatChunk> {
  /** The upstream's wire format, when every chunk carries its `raw` events (same-format passthrough). */
  readonly wire?: UpstreamWire;
}

// ---------- the adapter ----------

export interface ProviderAdapter {
  /** Adapter name as catalog endpoints reference it (`adapter` field). */
  readonly name: string;
  /** False for adapters that need no key (the offline sandbox); the router then skips key lookup. */
  readonly requiresApiKey: boolean;
  embeddings?(request: EmbeddingsRequest, call: CallContext): Promise<EmbeddingsResult>;
  speech?(request: SpeechRequest, call: CallContext): Promise<SpeechResult>;
  videos?: VideoAdapter;
  /**
   * Streams a chat completion (always streamed upstream; the route aggregates for non-streaming
   * clients). Resolves once the upstream answered 2xx; failures before that are thrown as
   * UpstreamError so the router can fail over.
   */
  chat?(request: ChatRequest, call: CallContext): Promise<ChatStream>;
  /**
   * The prompt tokens of a chat request as the upstream counts them, without generating (Anthropic's
   * count_tokens). Adapters whose upstream has no such count leave it out and the gateway estimates.
   */
  countTokens?(request: ChatRequest, call: CallContext): Promise<number>;
  /**
   * Whether a chat prompt holds media whose tokens the gateway cannot bound before the call as this
   * adapter sends it, besides a file given by URL (never bounded: prompt-estimate.ts, hasFileByUrl).
   * Admission then reserves the model's whole context window.
   */
  unboundedMedia?(messages: ChatMessage[]): boolean;
}

export type Capability = "embeddings" | "speech" | "videos" | "chat";
