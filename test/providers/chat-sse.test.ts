// The SSE reader: framing rules, chunk boundaries anywhere (down to single bytes), cancellation upstream.
import { describe, expect, it } from "vitest";
import { readSse } from "../../src/providers/sse";
import type { SseEvent } from "../../src/providers/types";

const encoder = new TextEncoder();

/** A body that hands out `bytes` in the given pieces, recording whether it was cancelled. */
function body(pieces: Uint8Array[]) {
  const state = { cancelled: false, pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = pieces[state.pulled++];
      if (next) controller.enqueue(next);
      else controller.close();
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

async function events(pieces: Uint8Array[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(body(pieces).stream)) out.push(e);
  return out;
}

const whole = (text: string) => [encoder.encode(text)];

describe("readSse", () => {
  it("reads data lines, event names, multi-line data and skips comments", async () => {
    const text =
      ": keep-alive\n\n" +
      'event: message_start\ndata: {"a":1}\n\n' +
      "data: line one\ndata: line two\n\n" +
      "data:no-space\n\n" +
      "id: 7\nretry: 100\ndata: after fields\n\n" +
      "data: [DONE]\n\n";
    expect(await events(whole(text))).toEqual([
      { event: "message_start", data: '{"a":1}' },
      { data: "line one\nline two" },
      { data: "no-space" },
      { data: "after fields" },
      { data: "[DONE]" },
    ]);
  });

  it("accepts CRLF and bare CR line ends", async () => {
    expect(await events(whole("event: ping\r\ndata: x\r\n\r\ndata: y\r\rdata: z\n\n"))).toEqual([
      { event: "ping", data: "x" },
      { data: "y" },
      { data: "z" },
    ]);
  });

  it("delivers a last event that has no closing blank line, or no line end at all", async () => {
    expect(await events(whole("data: a\n\ndata: b\n"))).toEqual([{ data: "a" }, { data: "b" }]);
    expect(await events(whole("data: a\n\nevent: e\ndata: b"))).toEqual([
      { data: "a" },
      { event: "e", data: "b" },
    ]);
    expect(await events(whole("data: a\r"))).toEqual([{ data: "a" }]);
  });

  it("gives the same events whether the stream comes whole, byte by byte, or cut in two anywhere", async () => {
    const text =
      ": comment\r\n\r\n" +
      'event: content_block_delta\r\ndata: {"delta":{"text":"héllo 🌍 wörld"}}\r\n\r\n' +
      "data: first\ndata: second\n\n" +
      'data: {"choices":[{"delta":{"content":"日本語"}}]}\n\n' +
      "data: tail-without-blank-line";
    const bytes = encoder.encode(text);
    const expected = await events([bytes]);
    expect(expected).toEqual([
      { event: "content_block_delta", data: '{"delta":{"text":"héllo 🌍 wörld"}}' },
      { data: "first\nsecond" },
      { data: '{"choices":[{"delta":{"content":"日本語"}}]}' },
      { data: "tail-without-blank-line" },
    ]);
    const single = Array.from(bytes, (b) => Uint8Array.of(b));
    expect(await events(single)).toEqual(expected);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(await events([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at byte ${cut}`).toEqual(
        expected,
      );
    }
  });

  it("cancels the body when the reader stops early, and not when it reads to the end", async () => {
    const early = body(whole("data: 1\n\ndata: 2\n\n"));
    for await (const e of readSse(early.stream)) {
      expect(e.data).toBe("1");
      break;
    }
    expect(early.state.cancelled).toBe(true);

    const full = body(whole("data: 1\n\n"));
    for await (const _ of readSse(full.stream)) {
      // read everything
    }
    expect(full.state.cancelled).toBe(false);
  });
});
