// The chat answer's clocks: keep-alive comments while the upstream is silent, the idle deadline between
// events, the total deadline however steadily events come, for the SSE answer and the JSON answer alike.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type ChatMeta,
  chatCompletionsStream,
  collectAnswer,
  Folded,
  FRAMES_IN_FLIGHT,
  jsonAnswer,
  KEEPALIVE_MS,
  type OpenedChat,
  type StreamFormat,
  sseAnswer,
  usageWire,
} from "../../src/inference/chat-stream";
import { CHAT_IDLE_MS, CHAT_TOTAL_MS, DEFAULT_DEADLINES } from "../../src/inference/deadlines";
import { messagesStream } from "../../src/inference/formats/messages";
import { responsesStream } from "../../src/inference/formats/responses";
import { UpstreamError } from "../../src/providers/errors";
import type { ChatChunk } from "../../src/providers/types";
import type { ResponsesRequest } from "../../src/schemas/responses-request";

const meta: ChatMeta = {
  id: "gen-test",
  created: 1,
  model: "sandbox/chat",
  provider: "sandbox",
  isByok: false,
  promptEstimate: 5,
  price: (u) => ({ prompt: u.promptTokens, completion: u.completionTokens }),
};

const chunk = (content: string): ChatChunk => ({
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

/** The chunk that ends an answer. */
const stop: ChatChunk = { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };

/** A host's opening chunk that carries none of the answer yet: only the role, with empty content. */
const roleOnly: ChatChunk = {
  choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
};

/** An upstream whose events arrive when the test says: `push` one, `end` it. */
function upstream(first: ChatChunk = chunk("first")) {
  const waiting: Array<(r: IteratorResult<ChatChunk>) => void> = [];
  const queued: Array<IteratorResult<ChatChunk>> = [];
  const iterator: AsyncIterator<ChatChunk> = {
    next: () =>
      new Promise((resolve) => {
        const ready = queued.shift();
        if (ready) resolve(ready);
        else waiting.push(resolve);
      }),
    return: async () => ({ done: true, value: undefined }),
  };
  const deliver = (r: IteratorResult<ChatChunk>) => {
    const resolve = waiting.shift();
    if (resolve) resolve(r);
    else queued.push(r);
  };
  const opened: OpenedChat = {
    iterator,
    first: { done: false, value: first },
    abort: new AbortController(),
    provider: "test",
  };
  return {
    opened,
    push: (content: string) => deliver({ done: false, value: chunk(content) }),
    /** The answer's last chunk (its finish reason), then the end. */
    end: () => {
      deliver({ done: false, value: stop });
      deliver({ done: true, value: undefined });
    },
  };
}

/** Everything the stream has written so far (reads until no byte comes within the test's clock step). */
function reader(response: Response) {
  const r = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let closed = false;
  const pump = (async () => {
    for (;;) {
      const { done, value } = await r.read();
      if (done) {
        closed = true;
        return;
      }
      text += decoder.decode(value, { stream: true });
    }
  })();
  return { text: () => text, closed: () => closed, pump };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("SSE answer clocks", () => {
  it("sends a keep-alive comment while the upstream is silent, then the events as they come", async () => {
    const up = upstream();
    const answer = sseAnswer(up.opened, meta);
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(10);
    expect(out.text()).toContain('"content":"first"');
    expect(out.text()).not.toContain(": OPENROUTER PROCESSING");
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS);
    expect(out.text()).toContain(": OPENROUTER PROCESSING\n\n");
    up.push("second");
    up.end();
    await vi.advanceTimersByTimeAsync(10);
    await out.pump;
    expect(out.text()).toContain('"content":"second"');
    expect(out.text().trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect((await answer.done).status).toBe("completed");
  });

  it("cuts an upstream silent for the idle deadline: an error chunk (408, as a JSON answer), the upstream aborted, billed as produced", async () => {
    const up = upstream();
    const answer = sseAnswer(up.opened, meta);
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS - KEEPALIVE_MS);
    expect(out.closed()).toBe(false);
    expect(up.opened.abort.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS + 10);
    await out.pump;
    const last = out
      .text()
      .split("\n\n")
      .filter((f) => f.startsWith("data: "))
      .at(-1)!;
    const frame = JSON.parse(last.slice(6));
    expect(frame.choices[0].finish_reason).toBe("error");
    expect(frame.error).toMatchObject({ code: 408, metadata: { error_type: "timeout" } });
    expect(up.opened.abort.signal.aborted).toBe(true);
    const final = await answer.done;
    expect(final.status).toBe("failed");
    // "first" was produced before the cut: the stream is charged for it (no zero-completion insurance).
    expect(final.costMicros).toBeGreaterThan(0);
  });

  it("gives a host that opened with an empty role chunk the first token's time to think, not the idle deadline", async () => {
    const up = upstream(roleOnly);
    const answer = sseAnswer(up.opened, meta);
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS + 2 * KEEPALIVE_MS);
    expect(out.closed()).toBe(false);
    expect(up.opened.abort.signal.aborted).toBe(false);
    up.push("thought it over");
    up.end();
    await vi.advanceTimersByTimeAsync(10);
    await out.pump;
    expect(out.text()).toContain('"content":"thought it over"');
    expect((await answer.done).status).toBe("completed");
  });

  it("reads the upstream only a few events ahead of a client that does not read", async () => {
    const up = upstream();
    let reads = 0;
    const next = up.opened.iterator.next.bind(up.opened.iterator);
    up.opened.iterator.next = () => {
      reads++;
      return next();
    };
    for (let i = 0; i < 200; i++) up.push(`event ${i} `);
    up.end();
    const answer = sseAnswer(up.opened, meta);
    await vi.advanceTimersByTimeAsync(100);
    // Nothing was read by the client: the answer stopped reading its upstream after a few frames.
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(FRAMES_IN_FLIGHT + 4);
    // The client reads everything: the rest is read and written, in order, to the end.
    const out = reader(answer.response);
    await vi.advanceTimersByTimeAsync(100);
    await out.pump;
    expect(reads).toBe(202);
    const text = out.text();
    expect(text.indexOf('"content":"event 199 "')).toBeGreaterThan(text.indexOf('"content":"event 0 "'));
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect((await answer.done).status).toBe("completed");
  });

  it("cuts an answer at the total deadline even while events keep coming", async () => {
    const up = upstream();
    const answer = sseAnswer(up.opened, meta);
    const out = reader(answer.response);
    for (let t = 0; t < CHAT_TOTAL_MS + 2 * KEEPALIVE_MS && !out.closed(); t += 5_000) {
      up.push(".");
      await vi.advanceTimersByTimeAsync(5_000);
    }
    expect(out.closed()).toBe(true);
    expect(out.text()).toContain('"finish_reason":"error"');
    expect((await answer.done).status).toBe("failed");
  });
});

describe("JSON answer clocks", () => {
  it("answers once the stream ends, however long the silences under the idle deadline", async () => {
    const up = upstream();
    const collecting = collectAnswer(up.opened);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS - 1_000);
    up.push(" second");
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS - 1_000);
    up.end();
    await vi.advanceTimersByTimeAsync(10);
    const answer = await jsonAnswer(await collecting, meta, (body) => Response.json(body));
    expect("response" in answer).toBe(true);
    if (!("response" in answer)) return;
    const body = (await answer.response.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe("first second");
  });

  it("waits past the idle deadline for a host that opened with an empty role chunk", async () => {
    const up = upstream(roleOnly);
    const collecting = collectAnswer(up.opened);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS + 2 * KEEPALIVE_MS);
    up.push("late but whole");
    up.end();
    await vi.advanceTimersByTimeAsync(10);
    const answer = await jsonAnswer(await collecting, meta, (body) => Response.json(body));
    if (!("response" in answer)) throw new Error("expected an answer");
    const body = (await answer.response.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe("late but whole");
  });

  it("gives up on an upstream silent for the idle deadline: a timeout (which fails over), the upstream stopped", async () => {
    const up = upstream();
    const collecting = collectAnswer(up.opened).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(CHAT_IDLE_MS + KEEPALIVE_MS);
    const err = await collecting;
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe("timeout");
    expect(up.opened.abort.signal.aborted).toBe(true);
  });
});

describe("the failure event of every client format", () => {
  /** What each format's failure event says the answer costs (USD). */
  const costs: Array<[string, (m: ChatMeta) => StreamFormat, (text: string) => number]> = [
    [
      "chat completions",
      (m) => chatCompletionsStream(m),
      (text) => dataOf(text).findLast((d) => d.error !== undefined)!.usage.cost,
    ],
    [
      "responses",
      (m) => responsesStream({ input: "hi" } as ResponsesRequest, m),
      (text) => dataOf(text).find((d) => d.type === "response.failed")!.response.usage.cost,
    ],
    [
      "messages",
      (m) => messagesStream(m),
      (text) => dataOf(text).findLast((d) => d.type === "message_delta")!.usage.cost,
    ],
  ];

  for (const [name, format, costIn] of costs) {
    it(`${name}: says what is charged, nothing when no output came (zero-completion insurance)`, async () => {
      const roleOnly: ChatChunk = {
        choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }],
      };
      for (const [first, produced] of [
        [chunk("first"), true],
        [roleOnly, false],
      ] as const) {
        const up = upstream();
        up.opened.first = { done: false, value: first };
        const answer = sseAnswer(up.opened, meta, format(meta));
        const out = reader(answer.response);
        // The upstream falls silent: cut at the idle deadline (before any of the answer came, at the
        // first token's).
        const silence = produced ? CHAT_IDLE_MS : DEFAULT_DEADLINES.chat.firstByteMs;
        await vi.advanceTimersByTimeAsync(silence + KEEPALIVE_MS + 10);
        await out.pump;
        const final = await answer.done;
        expect(final.status).toBe("failed");
        if (produced) expect(final.costMicros).toBeGreaterThan(0);
        else expect(final.costMicros).toBe(0);
        expect(costIn(out.text())).toBeCloseTo(final.costMicros / 1e6, 9);
      }
    });
  }
});

/** An upstream that sent these chunks and ended. */
const ended = (chunks: ChatChunk[]): OpenedChat => {
  const rest = chunks.slice(1);
  return {
    iterator: (async function* () {
      yield* rest;
    })(),
    first: chunks.length ? { done: false, value: chunks[0]! } : { done: true, value: undefined },
    abort: new AbortController(),
    provider: "test",
  };
};

describe("tool calls whose id and name come again on every chunk", () => {
  const call = (args: string): ChatChunk => ({
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [{ index: 0, id: "call_a", function: { name: "get_weather", arguments: args } }],
        },
        finish_reason: null,
      },
    ],
  });
  const chunks = [call(""), call('{"city":'), call('"Paris"}')];

  it("are one call with one name, in the chat answer and the responses stream", async () => {
    vi.useRealTimers();
    const answer = await jsonAnswer(ended([...chunks, stop]), meta, (body) => Response.json(body));
    if (!("response" in answer)) throw new Error("cancelled");
    const body = (await answer.response.json()) as {
      choices: Array<{ message: { tool_calls: unknown[] } }>;
    };
    expect(body.choices[0]!.message.tool_calls).toEqual([
      { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);
    const streamed = sseAnswer(
      ended([...chunks, stop]),
      meta,
      responsesStream({ input: "hi" } as ResponsesRequest, meta),
    );
    const done = dataOf(await streamed.response.text()).filter((d) => d.type === "response.output_item.done");
    expect(done.map((d) => [d.item.name, d.item.arguments])).toEqual([["get_weather", '{"city":"Paris"}']]);
  });
});

describe("an upstream stream that ends with nothing", () => {
  const roleOnly: ChatChunk = { choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }] };

  it("streamed: ends with the format's error, recorded failed and charged nothing", async () => {
    vi.useRealTimers();
    const answer = sseAnswer(ended([roleOnly]), meta);
    const frames = dataOf(await answer.response.text());
    const final = await answer.done;
    expect(frames.at(-1)).toMatchObject({ error: { code: 502 }, choices: [{ finish_reason: "error" }] });
    expect(final).toMatchObject({ status: "failed", costMicros: 0 });
    expect(final.error).toMatch(/ended its stream without an answer/);
  });

  it("not streamed: the attempt fails (so the next one is tried), whatever the role chunk said", async () => {
    vi.useRealTimers();
    await expect(collectAnswer(ended([roleOnly]))).rejects.toThrow(/ended its stream without an answer/);
    // An empty answer with a finish reason is an answer: a stop sequence met at once.
    const stopped: ChatChunk = { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };
    await expect(collectAnswer(ended([roleOnly, stopped]))).resolves.toBeDefined();
  });
});

describe("the chat completions stream's role", () => {
  /** Each choice's deltas, in the order the client sees them. */
  const deltas = (text: string) =>
    dataOf(text).flatMap((d) =>
      (d.choices as Array<{ index: number; delta: Record<string, unknown> }>).map((c) => [c.index, c.delta]),
    );

  it("the first delta of each choice says role assistant, even when the upstream's did not", async () => {
    vi.useRealTimers();
    const chunks: ChatChunk[] = [
      { choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] },
      { choices: [{ index: 1, delta: { role: "assistant", content: "Yo" }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    ];
    const answer = sseAnswer(ended(chunks), meta);
    expect(deltas(await answer.response.text())).toEqual([
      [0, { role: "assistant", content: "Hi" }],
      [1, { role: "assistant", content: "Yo" }],
      [0, {}],
    ]);
  });

  it("so does the finish chunk the gateway writes for an upstream that sent no choice, and the error chunk", async () => {
    vi.useRealTimers();
    const usageOnly: ChatChunk = { choices: [], usage: { promptTokens: 3, completionTokens: 0 } };
    const answer = sseAnswer(ended([usageOnly]), meta);
    expect(deltas(await answer.response.text())).toEqual([[0, { role: "assistant" }]]);
    const format = chatCompletionsStream(meta);
    const fail = format.fail(
      { code: 502, message: "gone", metadata: { error_type: "server" } },
      new Folded(),
    );
    expect(deltas(fail)).toEqual([[0, { role: "assistant", content: "" }]]);
  });
});

describe("the usage object's cost", () => {
  it("cost_details are whole micro-dollars like the cost, and add up to it", () => {
    // 3 tokens at 1.4 micro-dollars is 4.2000000000000004 in floating point.
    const priced: ChatMeta = {
      ...meta,
      price: (u) => ({ prompt: u.promptTokens * 1.4, completion: u.completionTokens * 0.45 }),
    };
    const wire = usageWire({ promptTokens: 3, completionTokens: 2 }, priced);
    expect(wire.cost).toBe(0.000006);
    expect(wire.cost_details).toEqual({
      upstream_inference_cost: null,
      upstream_inference_prompt_cost: 0.000005,
      upstream_inference_completions_cost: 0.000001,
    });
    expect(
      usageWire({ promptTokens: 3, completionTokens: 2 }, { ...priced, isByok: true }).cost_details,
    ).toMatchObject({ upstream_inference_cost: 0.000006 });
  });
});

/** The JSON payloads of an SSE text's `data:` lines (not `[DONE]`). */
// biome-ignore lint/suspicious/noExplicitAny: each format's events are read by the field the test names.
function dataOf(text: string): any[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)));
}
