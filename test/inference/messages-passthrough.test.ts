// The Messages passthrough format on the chat answer's clocks: keep-alives and the idle deadline while an
// Anthropic upstream is silent, a stream cut without message_stop closed by the gateway, and the JSON
// message of such a stream; the chunks carry their raw events as the Anthropic adapter hands them over.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type ChatMeta,
  jsonAnswer,
  KEEPALIVE_MS,
  type OpenedChat,
  sseAnswer,
} from "../../src/inference/chat-stream";
import { CHAT_IDLE_MS } from "../../src/inference/deadlines";
import {
  messagesPassthroughJson,
  messagesPassthroughStream,
} from "../../src/inference/formats/messages-passthrough";
import { AnthropicStreamReader } from "../../src/providers/anthropic/stream";
import { END_OF_STREAM } from "../../src/providers/sse";
import type { ChatChunk, SseEvent } from "../../src/providers/types";

const meta: ChatMeta = {
  id: "gen-pass",
  created: 1,
  model: "anthropic/claude-sonnet-4",
  provider: "anthropic",
  isByok: false,
  promptEstimate: 7,
  price: (u) => ({ prompt: u.promptTokens, completion: u.completionTokens }),
};

const ev = (data: Record<string, unknown>): SseEvent => ({
  event: data.type as string,
  data: JSON.stringify(data),
});
const START = ev({
  type: "message_start",
  message: {
    id: "msg_up",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [],
    usage: { input_tokens: 5, output_tokens: 1 },
  },
});
const TEXT_START = ev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
const delta = (text: string) =>
  ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });

/** Chunks as the adapter makes them: the reader's translation, with the events it was read from. */
function chunks(...groups: SseEvent[][]): ChatChunk[] {
  const reader = new AnthropicStreamReader("anthropic");
  return groups.map((events) => {
    let chunk: ChatChunk = { choices: [] };
    for (const e of events) {
      const out = reader.read(e);
      if (out && out !== END_OF_STREAM) chunk = out;
    }
    return { ...chunk, raw: events };
  });
}

/** An upstream that hands over `given` chunks, then waits for `end()` (or forever). */
function upstream(given: ChatChunk[]) {
  let release: (r: IteratorResult<ChatChunk>) => void = () => {};
  const rest = given.slice(1);
  const opened: OpenedChat = {
    first: { done: false, value: given[0]! },
    abort: new AbortController(),
    provider: "anthropic",
    wire: "anthropic-messages",
    iterator: {
      next: () =>
        rest.length > 0
          ? Promise.resolve({ done: false, value: rest.shift()! })
          : new Promise((resolve) => {
              release = resolve;
            }),
      return: async () => ({ done: true, value: undefined }),
    },
  };
  return { opened, end: () => release({ done: true, value: undefined }) };
}

function reader(response: Response) {
  const r = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const pump = (async () => {
    for (;;) {
      const { done, value } = await r.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
    }
  })();
  return { text: () => text, pump };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the passthrough stream on the answer's clocks", () => {
  it("pings while the upstream is silent, then cuts it at the idle deadline with a timeout_error event", async () => {
    const up = upstream(chunks([START, TEXT_START, delta("Hi")]));
    const answer = sseAnswer(up.opened, meta, messagesPassthroughStream(meta));
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(10);
    expect(out.text()).toBe(
      `event: message_start\ndata: ${JSON.stringify({
        type: "message_start",
        message: { ...JSON.parse(START.data).message, id: "gen-pass", model: "anthropic/claude-sonnet-4" },
      })}\n\nevent: content_block_start\ndata: ${TEXT_START.data}\n\nevent: content_block_delta\ndata: ${delta("Hi").data}\n\n`,
    );
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS);
    expect(out.text().endsWith('event: ping\ndata: {"type":"ping"}\n\n')).toBe(true);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS);
    await out.pump;
    expect(out.text().split("\n\n").filter(Boolean).at(-1)).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"timeout_error","message":"The provider stopped sending the answer"}}',
    );
    expect(up.opened.abort.signal.aborted).toBe(true);
    const final = await answer.done;
    expect(final.status).toBe("failed");
    expect(final.costMicros).toBeGreaterThan(0);
  });

  it("fails a stream cut before its message_delta (no stop reason, no usage): usage billed as produced, then the error", async () => {
    const up = upstream(chunks([START, TEXT_START, delta("Hello")], [delta(" there")]));
    const answer = sseAnswer(up.opened, meta, messagesPassthroughStream(meta));
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(10);
    up.end();
    await vi.advanceTimersByTimeAsync(10);
    await out.pump;
    const frames = out.text().split("\n\n").filter(Boolean);
    expect(frames.slice(-2).map((f) => f.split("\n")[0])).toEqual(["event: message_delta", "event: error"]);
    const messageDelta = JSON.parse(frames.at(-2)!.split("\n")[1]!.slice(6));
    const error = JSON.parse(frames.at(-1)!.split("\n")[1]!.slice(6));
    expect(error).toMatchObject({
      type: "error",
      error: { message: expect.stringContaining("(no finish reason)") },
    });
    const final = await answer.done;
    expect(final).toMatchObject({ status: "failed", usage: { estimated: 1 } });
    // What the client is told it costs is what is charged (price here: one micro-dollar a token).
    expect(messageDelta).toMatchObject({
      delta: { stop_reason: null },
      usage: { output_tokens: final.usage.completion_tokens, cost: final.costMicros / 1e6 },
    });
    expect(final.costMicros).toBeGreaterThan(0);
  });
});

describe("the passthrough JSON message", () => {
  it("of a cut stream: the upstream's blocks, the gateway's stop reason and billed usage", async () => {
    const up = upstream(chunks([START, TEXT_START, delta("Hello")], [delta(" there")]));
    const pending = jsonAnswer(up.opened, meta, (body) => Response.json(body), messagesPassthroughJson(meta));
    await vi.advanceTimersByTimeAsync(10);
    up.end();
    const answer = await pending;
    if (!("response" in answer)) throw new Error("expected an answer");
    const body = (await answer.response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: "gen-pass",
      model: "anthropic/claude-sonnet-4",
      provider: "anthropic",
      content: [{ type: "text", text: "Hello there" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 5, output_tokens: answer.final.usage.completion_tokens },
    });
  });
});
