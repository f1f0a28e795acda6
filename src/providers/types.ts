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

// ---------- the adapter ----------

export interface ProviderAdapter {
  /** Adapter name as catalog endpoints reference it (`adapter` field). */
  readonly name: string;
  /** False for adapters that need no key (the offline sandbox); the router then skips key lookup. */
  readonly requiresApiKey: boolean;
  embeddings?(request: EmbeddingsRequest, call: CallContext): Promise<EmbeddingsResult>;
  speech?(request: SpeechRequest, call: CallContext): Promise<SpeechResult>;
  videos?: VideoAdapter;
}

export type Capability = "embeddings" | "speech" | "videos";
