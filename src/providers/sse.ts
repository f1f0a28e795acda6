// Server-sent events from an upstream body, read incrementally (the framing of every streamed chat answer),
// and the ChatStream wrapper the chat adapters return.
import { createParser, type EventSourceParser } from "eventsource-parser";
import { UpstreamError, upstreamErrorFromResponse } from "./errors";
import type { CallContext, ChatChunk, ChatStream, SseEvent, UpstreamWire } from "./types";

/** Returned by a mapper to end the stream there (OpenAI's `data: [DONE]`): the body is cancelled. */
export const END_OF_STREAM: unique symbol = Symbol("end of stream");

/**
 * The events of an SSE body, mapped as they arrive, as one async iterator. Bytes are decoded by one
 * streaming TextDecoder and fed to eventsource-parser (line splitting by indexOf, `\n`/`\r\n`/`\r`,
 * comments, chunk boundaries anywhere). An event the upstream ended without the closing blank line
 * is still delivered: streams cut by a proxy often end that way, and the last event carries the
 * usage. `map` returns undefined to skip an event and END_OF_STREAM to stop; an error it throws,
 * or a read that fails, is passed through `onError` and thrown from `next()`. Stopping early
 * (`return()`, END_OF_STREAM, an error) cancels the body, which aborts the upstream request.
 *
 * A plain iterator rather than async generators stacked per adapter: each generator layer cost a
 * promise round trip per event, the largest CPU cost of a streamed chat answer in the bench profile.
 */
export function mapSse<T>(
  body: ReadableStream<Uint8Array>,
  map: (event: SseEvent) => T | undefined | typeof END_OF_STREAM,
  onError: (err: unknown) => unknown = (err) => err,
): AsyncIterableIterator<T> {
  return new SseIterator(body, map, onError);
}

/** The events themselves (tests, and adapters that keep their own state machine). */
export function readSse(body: ReadableStream<Uint8Array>): AsyncIterableIterator<SseEvent> {
  return mapSse(body, (event) => event);
}

class SseIterator<T> implements AsyncIterableIterator<T> {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private events: SseEvent[] = [];
  private next_ = 0;
  /** The body has ended (read to its end, or cancelled). */
  private finished = false;
  private released = false;

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly map: (event: SseEvent) => T | undefined | typeof END_OF_STREAM,
    private readonly onError: (err: unknown) => unknown,
  ) {
    this.reader = body.getReader();
    this.parser = createParser({
      onEvent: (e) => {
        this.events.push(e.event === undefined ? { data: e.data } : { event: e.event, data: e.data });
      },
    });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<T>> {
    try {
      for (;;) {
        while (this.next_ < this.events.length) {
          const value = this.map(this.events[this.next_++]!);
          if (value === END_OF_STREAM) return this.return();
          if (value !== undefined) return { done: false, value };
        }
        this.events = [];
        this.next_ = 0;
        if (this.finished) return this.return();
        const { done, value } = await this.reader.read();
        if (done) {
          // Flush the decoder, then end any open line and event.
          this.finished = true;
          this.parser.feed(`${this.decoder.decode()}\n\n`);
        } else {
          this.parser.feed(this.decoder.decode(value, { stream: true }));
        }
      }
    } catch (err) {
      await this.return();
      throw this.onError(err);
    }
  }

  async return(): Promise<IteratorResult<T>> {
    if (!this.released) {
      this.released = true;
      this.events = [];
      if (!this.finished) {
        this.finished = true;
        await this.reader.cancel().catch(() => {});
      }
      this.reader.releaseLock();
    }
    return { done: true, value: undefined };
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

/** A ChatStream over an answered upstream: its chunk iterator, and its wire format when chunks carry raw events. */
export function chatStream(chunks: AsyncIterator<ChatChunk>, wire?: UpstreamWire): ChatStream {
  return { ...(wire ? { wire } : {}), [Symbol.asyncIterator]: () => chunks };
}

/**
 * Chat chunks read from an SSE body by `read` (one event at a time), each carrying the events it was read
 * from as `raw`, so a client of the upstream's own format can be sent them as they came. Until the first
 * chunk, events that translate to nothing wait for it (the first chunk is what commits an attempt, so an
 * upstream failing after its `message_start` can still be failed over); after it, each such event goes
 * out at once as a chunk without choices. END_OF_STREAM from `read` ends the stream after that event.
 */
export function rawChunks(
  body: ReadableStream<Uint8Array>,
  read: (event: SseEvent) => ChatChunk | undefined | typeof END_OF_STREAM,
  onError: (err: unknown) => unknown,
): AsyncIterableIterator<ChatChunk> {
  let pending: SseEvent[] = [];
  let given = false;
  let ended = false;
  const take = (chunk: ChatChunk): ChatChunk => {
    chunk.raw = pending;
    pending = [];
    given = true;
    return chunk;
  };
  const inner = new SseIterator<ChatChunk>(
    body,
    (event) => {
      pending.push(event);
      const out = read(event);
      if (out === END_OF_STREAM) {
        ended = true;
        return take({ choices: [] });
      }
      if (out) return take(out);
      return given ? take({ choices: [] }) : undefined;
    },
    onError,
  );
  // A body that ends before any chunk still hands over what it sent (only the first read can see that).
  const flush = (r: IteratorResult<ChatChunk>): IteratorResult<ChatChunk> =>
    r.done && pending.length > 0 ? { done: false, value: take({ choices: [] }) } : r;
  return {
    next: () => (ended ? inner.return() : given ? inner.next() : inner.next().then(flush)),
    return: () => inner.return(),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
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
  call.onUpstreamBody?.(body);
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

/** An upstream event's data as a JSON object, or undefined when it is not one. */
export function parseEventObject(data: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(data);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** An event written as it came: its `event:` line when it had a name, then each data line, byte for byte. */
export function rawFrame(name: string | undefined, data: string): string {
  const lines = data.includes("\n")
    ? data
        .split("\n")
        .map((l) => `data: ${l}\n`)
        .join("")
    : `data: ${data}\n`;
  return name === undefined ? `${lines}\n` : `event: ${name}\n${lines}\n`;
}
