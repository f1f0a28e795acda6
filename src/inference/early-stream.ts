// A streamed answer committed before any attempt has its first token: 200 SSE headers at once,
// keep-alive comments while the attempts run on, then the served answer's bytes in the same stream, or
// the format's error frames when every attempt failed (as OpenRouter reports a late failure in-stream).
import { KEEPALIVE, KEEPALIVE_MS, SSE_HEADERS } from "./chat-stream";

/**
 * How long a streamed request waits for a first token before it commits. Short enough that no proxy
 * or client gives up on the silence; long enough that a quick refusal or failover (a 429, a 503)
 * still answers with its real HTTP status.
 */
export const FIRST_BYTE_GRACE_MS = 2_000;

/** The byte pipe of an answer already committed (its headers sent): the served answer writes into it. */
export interface CommittedStream {
  writable: WritableStream<Uint8Array>;
  /** The answer the client already has. */
  response: Response;
}

export interface EarlyStream {
  response: Response;
  /** Aborted when the client leaves while the attempts still run. */
  left: AbortSignal;
  /** Stops the keep-alives and hands the pipe over, once the last of them is written. */
  handOver(): Promise<CommittedStream>;
  /** Ends the stream with these frames (the format's error frames). */
  end(frames: string): void;
}

const encoder = new TextEncoder();

/** Opens the stream: a keep-alive at once, then one every KEEPALIVE_MS until `handOver` or `end`. */
export function earlyStream(): EarlyStream {
  const { readable, writable } = new IdentityTransformStream();
  let writer: WritableStreamDefaultWriter<Uint8Array> | null = writable.getWriter();
  const left = new AbortController();
  let waiting = true;
  // A write resolves once the client took its bytes, rejects once it left (`closed` says so too, but
  // only when a write finds the pipe gone: the request's signal is the quicker word).
  let written: Promise<unknown> = Promise.resolve();
  const write = (text: string) => {
    if (writer) written = writer.write(encoder.encode(text)).catch(() => {});
  };
  writer.closed.catch((reason: unknown) => {
    if (waiting) left.abort(reason);
  });
  write(KEEPALIVE);
  const ticker = setInterval(() => write(KEEPALIVE), KEEPALIVE_MS);
  const stop = () => {
    waiting = false;
    clearInterval(ticker);
  };
  const response = new Response(readable, { status: 200, headers: SSE_HEADERS });
  return {
    response,
    left: left.signal,
    async handOver() {
      stop();
      await written;
      writer?.releaseLock();
      writer = null;
      return { writable, response };
    },
    end(frames) {
      stop();
      try {
        writer ??= writable.getWriter();
      } catch {
        return; // The served answer holds the pipe: it ends it.
      }
      if (frames) write(frames);
      void writer.close().catch(() => {});
    },
  };
}
