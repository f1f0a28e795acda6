// Server-sent events from an upstream body, read incrementally (the framing of every streamed chat answer),
// and the ChatStream wrapper the chat adapters return.
import { createParser } from "eventsource-parser";
import { UpstreamError, upstreamErrorFromResponse } from "./errors";
import type { CallContext, ChatChunk, ChatStream } from "./types";

export interface SseEvent {
  /** The `event:` name, when the upstream set one (Anthropic does; OpenAI-style streams do not). */
  event?: string;
  /** The `data:` lines of the event joined with `\n`. */
  data: string;
}

/**
 * Yields the events of an SSE body as they arrive. Bytes are decoded by one streaming TextDecoder and
 * fed to eventsource-parser (line splitting by indexOf, `\n`/`\r\n`/`\r`, comments, chunk boundaries
 * anywhere). An event the upstream ended without the closing blank line is still delivered: streams
 * cut by a proxy often end that way, and the last event carries the usage. Stopping the iteration
 * early (break, return, a throw in the consumer) cancels the body, which aborts the upstream request.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending: SseEvent[] = [];
  const parser = createParser({
    onEvent: (e) => {
      pending.push(e.event === undefined ? { data: e.data } : { event: e.event, data: e.data });
    },
  });
  let finished = false;
  try {
    while (!finished) {
      const { done, value } = await reader.read();
      if (done) {
        // Flush the decoder, then end any open line and event.
        parser.feed(`${decoder.decode()}\n\n`);
        finished = true;
      } else {
        parser.feed(decoder.decode(value, { stream: true }));
      }
      if (pending.length > 0) {
        const batch = pending;
        pending = [];
        for (const event of batch) yield event;
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/**
 * A failure while reading an upstream stream, as the chat contract wants it: an UpstreamError. An abort
 * (deadline, client gone) is returned untouched so the attempt runner can tell a timeout from a cut.
 */
export function midStreamFailure(err: unknown, call: CallContext): unknown {
  if (err instanceof UpstreamError || call.signal.aborted) return err;
  return new UpstreamError({
    kind: "connection",
    message: `The stream from provider ${call.endpoint.provider} broke off`,
  });
}

/** A ChatStream over an answered upstream: the chunk iterator plus the body that was sent. */
export function chatStream(
  upstreamBody: unknown,
  chunks: AsyncGenerator<ChatChunk, void, undefined>,
): ChatStream {
  return { upstreamBody, [Symbol.asyncIterator]: () => chunks };
}

/**
 * POSTs a chat body as JSON to an upstream that answers a stream: the 2xx answer with its body, or
 * the UpstreamError `toError` makes of any other (the default mapping unless the wire format has
 * its own error shape). Every chat adapter opens its stream through here.
 */
export async function postForStream(
  call: CallContext,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  toError: (res: Response, provider: string) => Promise<UpstreamError> = upstreamErrorFromResponse,
): Promise<Response & { body: ReadableStream<Uint8Array> }> {
  const res = await call.fetch(url, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok) throw await toError(res, call.endpoint.provider);
  if (!res.body) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} answered without a body`,
    });
  }
  return res as Response & { body: ReadableStream<Uint8Array> };
}
