// Upstream deadlines per modality (milliseconds); a catalog endpoint's `timeouts` override the per-attempt ones.
import type { CatalogEndpointEntry, Modality } from "../catalog/types";

export interface Deadlines {
  /**
   * Per attempt: until the adapter has an answer (headers for streamed speech/video, the whole body for
   * embeddings). Workers' fetch does not expose connection set-up on its own, so connecting counts
   * against this deadline too; a refused or reset connection fails over at once.
   */
  firstByteMs: number;
  /** For the whole request, across all attempts. No attempt starts once it has passed. */
  totalMs: number;
}

export const DEFAULT_DEADLINES: Record<Modality, Deadlines> = {
  embeddings: { firstByteMs: 20_000, totalMs: 45_000 },
  speech: { firstByteMs: 30_000, totalMs: 60_000 },
  video: { firstByteMs: 30_000, totalMs: 60_000 },
  // Chat: until the first upstream event (time to first token); between events, CHAT_IDLE_MS. Reasoning
  // models (gpt-5 in chat completions, Gemini 2.5 Pro thinking) stream nothing while they think, often
  // past a minute; a streamed request is kept alive meanwhile (see early-stream.ts).
  chat: { firstByteMs: 180_000, totalMs: 240_000 },
};

/** Chat: longest silence between two upstream events once streaming, before the attempt is cut. */
export const CHAT_IDLE_MS = 60_000;
/** Chat: longest whole answer, first byte to last. */
export const CHAT_TOTAL_MS = 15 * 60_000;
/** Speech: longest streamed audio, first byte to last (the pipe is cut there). */
export const SPEECH_STREAM_MS = 15 * 60_000;

/**
 * The longest a request holding a reservation with the default lease can run, admission to
 * settlement: every attempt within its modality's total, then the longest answer. The ledger's
 * LEASE_MS must exceed it (a test checks), or a reservation could be reclaimed under a request still
 * running, its room taken by another, and the late charge push a limit past what it allows.
 */
export const LONGEST_REQUEST_MS = Math.max(
  DEFAULT_DEADLINES.embeddings.totalMs,
  DEFAULT_DEADLINES.speech.totalMs + SPEECH_STREAM_MS,
  DEFAULT_DEADLINES.chat.totalMs + CHAT_TOTAL_MS,
);

export function attemptDeadlineMs(modality: Modality, endpoint: CatalogEndpointEntry): number {
  return endpoint.timeouts.first_byte_ms ?? DEFAULT_DEADLINES[modality].firstByteMs;
}
