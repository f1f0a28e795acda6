// The sandbox chat models called directly: the chunks of each behaviour, usage, cuts, failure modes, aborts.
import { describe, expect, it } from "vitest";
import catalogJson from "../../catalog/catalog.json";
import { CatalogSchema } from "../../src/catalog/schema";
import { Folded } from "../../src/inference/chat-stream";
import { UpstreamError } from "../../src/providers/errors";
import { supports } from "../../src/providers/registry";
import { sandboxAdapter } from "../../src/providers/sandbox";
import type { CallContext, ChatChunk, ChatRequest, ChatStream } from "../../src/providers/types";

function ctx(upstreamModel: string, signal = new AbortController().signal, maxOutput?: number): CallContext {
  return {
    endpoint: {
      id: `sandbox/${upstreamModel}@sandbox`,
      provider: "sandbox",
      upstreamModel,
      baseUrl: "sandbox://local",
      capabilities: maxOutput ? { max_output_tokens: maxOutput } : {},
    },
    credential: { source: "platform", apiKey: "" },
    signal,
    fetch: async () => {
      throw new Error("the sandbox never fetches");
    },
  };
}

const say = (text: string, more: Partial<ChatRequest> = {}): ChatRequest => ({
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: text },
  ],
  ...more,
});

const chat = (request: ChatRequest, call: CallContext) => sandboxAdapter.chat!(request, call);

async function collect(stream: ChatStream): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const deltas = (chunks: ChatChunk[]) => chunks.map((c) => c.choices[0]?.delta ?? {});
const contentOf = (chunks: ChatChunk[]) =>
  deltas(chunks)
    .map((d) => d.content ?? "")
    .join("");
const last = (chunks: ChatChunk[]) => chunks[chunks.length - 1]!;

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a failure");
}

/** The text after UTF-8 and back: a lone surrogate (half an emoji) comes back as U+FFFD. */
const utf8RoundTrip = (text: string) => new TextDecoder().decode(new TextEncoder().encode(text));

/** Whether `p` is still pending after `ms`. */
async function pendingAfter(p: Promise<unknown>, ms: number): Promise<boolean> {
  const marker = Symbol("pending");
  const settled = await Promise.race([
    p.then(
      () => "settled",
      () => "settled",
    ),
    new Promise((r) => setTimeout(() => r(marker), ms)),
  ]);
  return settled === marker;
}

describe("sandbox/chat-echo", () => {
  it("streams the echo word by word, role first, then one chunk with finish_reason stop and usage", async () => {
    const chunks = await collect(await chat(say("Hello there   gateway"), ctx("chat-echo")));
    const words = ["You", "said:", '"Hello', "there", 'gateway".', "The", "sandbox", "echoes", "it", "back."];
    expect(deltas(chunks).slice(0, -1)).toEqual(
      words.map((w, i) => (i === 0 ? { role: "assistant", content: w } : { content: ` ${w}` })),
    );
    expect(contentOf(chunks)).toBe('You said: "Hello there gateway". The sandbox echoes it back.');
    expect(last(chunks)).toEqual({
      choices: [{ index: 0, delta: {}, finish_reason: "stop", native_finish_reason: "stop" }],
      // Prompt: ceil(9/4) + ceil(21/4) = 3 + 6; completion: one token a word.
      usage: { promptTokens: 9, completionTokens: words.length },
      model: "chat-echo",
      upstreamId: chunks[0]!.upstreamId,
    });
    // One id for the answer, on every chunk, as a provider's response id.
    expect(chunks[0]!.upstreamId).toMatch(/^sandbox-/);
    expect(new Set(chunks.map((c) => c.upstreamId)).size).toBe(1);
    expect(
      chunks.slice(0, -1).every((c) => c.usage === undefined && c.choices[0]!.finish_reason === null),
    ).toBe(true);
  });

  it("answers the same chunks every time, each answer under its own id", async () => {
    const a = await collect(await chat(say("same words"), ctx("chat-echo")));
    const b = await collect(await chat(say("same words"), ctx("chat-echo")));
    const withoutId = (chunks: typeof a) => chunks.map(({ upstreamId: _, ...chunk }) => chunk);
    expect(withoutId(a)).toEqual(withoutId(b));
    expect(a[0]!.upstreamId).not.toBe(b[0]!.upstreamId);
  });

  it("stops at maxTokens with finish_reason length and counts only what it sent", async () => {
    const chunks = await collect(await chat(say("one two three four", { maxTokens: 3 }), ctx("chat-echo")));
    expect(contentOf(chunks)).toBe('You said: "one');
    expect(last(chunks).choices[0]).toMatchObject({
      finish_reason: "length",
      native_finish_reason: "length",
    });
    expect(last(chunks).usage!.completionTokens).toBe(3);
  });

  it("without maxTokens, the endpoint's max_output_tokens bounds the answer", async () => {
    const chunks = await collect(await chat(say("one two three"), ctx("chat-echo", undefined, 2)));
    expect(contentOf(chunks)).toBe("You said:");
    expect(last(chunks).choices[0]!.finish_reason).toBe("length");
  });

  it("ends at the first stop sequence with finish_reason stop", async () => {
    const chunks = await collect(
      await chat(say("alpha beta gamma", { stop: ["gamma", "zeta"] }), ctx("chat-echo")),
    );
    expect(contentOf(chunks)).toBe('You said: "alpha beta');
    expect(last(chunks).choices[0]!.finish_reason).toBe("stop");
    expect(last(chunks).usage!.completionTokens).toBe(4);
  });

  it("paces chunks by provider.options.sandbox.pace_ms", async () => {
    const started = Date.now();
    const chunks = await collect(
      await chat(say("a b c", { passthrough: { pace_ms: 25 } }), ctx("chat-echo")),
    );
    // 10 word chunks and the final chunk: 10 waits of 25 ms.
    expect(chunks).toHaveLength(11);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it("counts media parts and tools into the prompt", async () => {
    const plain = await collect(await chat(say("abcd"), ctx("chat-echo")));
    const withImage = await collect(
      await chat(
        {
          messages: [
            { role: "system", content: "Be brief." },
            {
              role: "user",
              content: [
                { type: "text", text: "abcd" },
                { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
              ],
            },
          ],
        },
        ctx("chat-echo"),
      ),
    );
    expect(last(withImage).usage!.promptTokens).toBe(last(plain).usage!.promptTokens + 85);
  });

  it("streams JSON in pieces that never split an emoji (each piece survives UTF-8 on its own)", async () => {
    const text = "😀".repeat(40);
    const chunks = await collect(
      await chat(say(text, { responseFormat: { type: "json_object" } }), ctx("chat-echo")),
    );
    const pieces = deltas(chunks).flatMap((d) => (d.content ? [d.content] : []));
    expect(pieces.length).toBeGreaterThan(1);
    // Counted, not compared: a failure message holding half an emoji breaks the test runner's own channel.
    expect(pieces.filter((p) => utf8RoundTrip(p) !== p).length).toBe(0);
    expect(JSON.parse(pieces.join(""))).toEqual({ you_said: text });
  });
});

describe("sandbox/chat-tools", () => {
  const weather = {
    type: "function",
    function: {
      name: "get_weather",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
          days: { type: "integer", minimum: 3, maximum: 7 },
          when: { type: "string", format: "date" },
          tags: { type: "array", items: { type: "string" }, minItems: 2 },
          exact: { type: ["boolean", "null"] },
        },
        required: ["city"],
        additionalProperties: false,
      },
    },
  };
  const time = { type: "function", function: { name: "get_time" } };
  const search = { type: "function", function: { name: "search", parameters: { type: "object" } } };

  /** Tool-call deltas folded by index, as clients assemble them. */
  function assemble(chunks: ChatChunk[]) {
    const calls: Array<{ id?: string; name?: string; args: string; pieces: number }> = [];
    for (const d of deltas(chunks)) {
      for (const t of d.tool_calls ?? []) {
        calls[t.index] ??= { args: "", pieces: 0 };
        const c = calls[t.index]!;
        if (t.id) c.id = t.id;
        if (t.function?.name) c.name = t.function.name;
        if (t.function?.arguments) {
          c.args += t.function.arguments;
          c.pieces++;
        }
      }
    }
    return calls;
  }

  it("cuts a sampled string to its maxLength in code points, never inside an emoji", async () => {
    const tool = {
      type: "function",
      function: {
        name: "g",
        parameters: { type: "object", properties: { "😀😀": { type: "string", maxLength: 9 } } },
      },
    };
    const calls = assemble(await collect(await chat(say("x", { tools: [tool] }), ctx("chat-tools"))));
    const args = calls[0]!.args;
    expect(utf8RoundTrip(args) === args).toBe(true);
    // "sandbox-" and the first emoji of the key: 9 code points, 10 UTF-16 units.
    expect(JSON.parse(args)).toEqual({ "😀😀": "sandbox-😀" });
  });

  it("calls up to two tools with schema-built JSON arguments in 2+ pieces, finish tool_calls", async () => {
    const chunks = await collect(
      await chat(say("weather?", { tools: [weather, time, search] }), ctx("chat-tools")),
    );
    const calls = assemble(chunks);
    expect(calls.map((c) => [c.id, c.name])).toEqual([
      ["call_0", "get_weather"],
      ["call_1", "get_time"],
    ]);
    expect(JSON.parse(calls[0]!.args)).toEqual({
      city: "sandbox-city",
      unit: "celsius",
      days: 4,
      when: "2026-01-01",
      tags: ["sandbox-tags", "sandbox-tags"],
      exact: true,
    });
    expect(JSON.parse(calls[1]!.args)).toEqual({});
    expect(calls.every((c) => c.pieces >= 2)).toBe(true);
    expect(contentOf(chunks)).toBe("");
    expect(deltas(chunks)[0]!.role).toBe("assistant");
    expect(last(chunks).choices[0]!.finish_reason).toBe("tool_calls");
    expect(last(chunks).usage!.completionTokens).toBeGreaterThan(0);
  });

  it("keeps the arguments of a schema of nested arrays within about 64 KB (10 items a level would be 10^7 strings)", async () => {
    let nested: Record<string, unknown> = { type: "string", minLength: 200 };
    for (let i = 0; i < 7; i++) nested = { type: "array", minItems: 10, items: nested };
    const explosive = {
      type: "function",
      function: { name: "f", parameters: { type: "object", properties: { x: nested } } },
    };
    const calls = assemble(
      await collect(await chat(say("x", { tools: [explosive], maxTokens: 100_000 }), ctx("chat-tools"))),
    );
    expect(calls.map((c) => c.name)).toEqual(["f"]);
    expect(calls[0]!.args.length).toBeGreaterThan(32 * 1024);
    expect(calls[0]!.args.length).toBeLessThan(80 * 1024);
    // Still JSON of the schema's shape: arrays of arrays down to the strings, cut where the budget ended.
    let value = (JSON.parse(calls[0]!.args) as { x: unknown }).x;
    for (let i = 0; i < 7; i++) {
      expect(Array.isArray(value)).toBe(true);
      value = (value as unknown[])[0];
    }
    expect(value).toBe(`sandbox-x${"x".repeat(191)}`);

    // Past the nesting limit the items are nulls, and a caller's default is counted at its size: both bounded.
    const arrays = (leaf: unknown, levels: number) => {
      let schema = leaf;
      for (let i = 0; i < levels; i++) schema = { type: "array", minItems: 10, items: schema };
      return { type: "object", properties: { x: schema } };
    };
    for (const parameters of [arrays({ type: "string" }, 8), arrays({ default: "d".repeat(10_000) }, 7)]) {
      const [call] = assemble(
        await collect(
          await chat(
            say("x", {
              tools: [{ type: "function", function: { name: "g", parameters } }],
              maxTokens: 100_000,
            }),
            ctx("chat-tools"),
          ),
        ),
      );
      expect(call!.args.length).toBeLessThan(80 * 1024);
      expect(() => JSON.parse(call!.args)).not.toThrow();
    }
  });

  it("honours a named tool_choice, parallel_tool_calls false and tool_choice none", async () => {
    const named = assemble(
      await collect(
        await chat(
          say("x", {
            tools: [weather, search],
            toolChoice: { type: "function", function: { name: "search" } },
          }),
          ctx("chat-tools"),
        ),
      ),
    );
    expect(named.map((c) => c.name)).toEqual(["search"]);
    const single = assemble(
      await collect(
        await chat(say("x", { tools: [weather, search], parallelToolCalls: false }), ctx("chat-tools")),
      ),
    );
    expect(single.map((c) => c.name)).toEqual(["get_weather"]);
    const none = await collect(
      await chat(say("x", { tools: [weather], toolChoice: "none" }), ctx("chat-tools")),
    );
    expect(contentOf(none)).toContain("You said");
    expect(last(none).choices[0]!.finish_reason).toBe("stop");
  });

  it("after tool results, answers text about them; new call ids continue after earlier ones", async () => {
    const messages = [
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "get_weather", arguments: "{}" } },
          { id: "call_1", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_0", content: '{"temp":21}' },
      { role: "tool", tool_call_id: "call_1", content: "noon" },
    ];
    const answer = await collect(await chat({ messages, tools: [weather, time] }, ctx("chat-tools")));
    expect(contentOf(answer)).toBe(
      'The tool get_weather returned {"temp":21}. The tool get_time returned noon. That is all the sandbox knows.',
    );
    expect(last(answer).choices[0]!.finish_reason).toBe("stop");
    const again = await collect(
      await chat(
        {
          messages: [...messages, { role: "assistant", content: "ok" }, { role: "user", content: "again" }],
          tools: [weather],
        },
        ctx("chat-tools"),
      ),
    );
    expect(assemble(again)[0]!.id).toBe("call_2");
  });
});

describe("sandbox/chat-reasoning", () => {
  it("streams reasoning, each delta also a fragment of one reasoning_details entry, then the answer; reasoning tokens in usage", async () => {
    const chunks = await collect(await chat(say("think about this"), ctx("chat-reasoning")));
    const ds = deltas(chunks);
    const firstContent = ds.findIndex((d) => d.content !== undefined);
    const reasoningAt = ds.flatMap((d, i) => (d.reasoning !== undefined ? [i] : []));
    expect(reasoningAt[0]).toBe(0);
    expect(reasoningAt.at(-1)!).toBeLessThan(firstContent);
    const reasoning = ds.map((d) => d.reasoning ?? "").join("");
    expect(reasoning).toBe(
      'The user wrote 3 words. The sandbox answers by echoing them, so the reply starts with "You said".',
    );
    // Every reasoning delta carries the same text as a detail fragment (clients read one or the other,
    // never both), and the fragments fold into one entry.
    for (const d of ds.filter((d) => d.reasoning !== undefined)) {
      expect(d.reasoning_details).toEqual([
        { type: "reasoning.text", text: d.reasoning, format: "unknown", index: 0 },
      ]);
    }
    expect(ds.filter((d) => d.reasoning_details && d.reasoning === undefined)).toEqual([]);
    const folded = new Folded();
    for (const chunk of chunks) folded.add(chunk);
    expect(folded.reasoningDetails).toEqual([
      { type: "reasoning.text", text: reasoning, format: "unknown", index: 0 },
    ]);
    const reasoningWords = reasoning.split(" ").length;
    const answerWords = contentOf(chunks).split(" ").length;
    expect(last(chunks).usage).toEqual({
      promptTokens: 7,
      completionTokens: reasoningWords + answerWords,
      reasoningTokens: reasoningWords,
    });
  });

  it("reasoning.max_tokens cuts the reasoning; exclude bills it unseen; enabled false skips it", async () => {
    const capped = await collect(
      await chat(say("x", { reasoning: { max_tokens: 2 } }), ctx("chat-reasoning")),
    );
    expect(
      deltas(capped)
        .map((d) => d.reasoning ?? "")
        .join(""),
    ).toBe("The user");
    expect(last(capped).usage!.reasoningTokens).toBe(2);
    const hidden = await collect(
      await chat(say("x", { reasoning: { exclude: true } }), ctx("chat-reasoning")),
    );
    expect(deltas(hidden).some((d) => d.reasoning !== undefined || d.reasoning_details !== undefined)).toBe(
      false,
    );
    expect(last(hidden).usage!.reasoningTokens).toBeGreaterThan(0);
    const off = await collect(await chat(say("x", { reasoning: { enabled: false } }), ctx("chat-reasoning")));
    expect(last(off).usage!.reasoningTokens).toBe(0);
  });

  it("maxTokens counts reasoning: a tight bound ends in the reasoning with finish length", async () => {
    const chunks = await collect(await chat(say("x", { maxTokens: 4 }), ctx("chat-reasoning")));
    expect(contentOf(chunks)).toBe("");
    expect(last(chunks).choices[0]!.finish_reason).toBe("length");
    expect(last(chunks).usage).toMatchObject({ completionTokens: 4, reasoningTokens: 4 });
  });
});

describe("sandbox chat failure modes", () => {
  it("chat-always-503 and chat-rate-limited-429 throw before the first byte", async () => {
    const unavailable = await failure(chat(say("x"), ctx("chat-always-503")));
    expect(unavailable).toBeInstanceOf(UpstreamError);
    expect(unavailable).toMatchObject({ kind: "http", status: 503, retryable: true });
    const limited = await failure(chat(say("x"), ctx("chat-rate-limited-429")));
    expect(limited).toMatchObject({ kind: "http", status: 429, retryAfterSeconds: 7, retryable: true });
  });

  it("chat-error-after-3 sends exactly three content chunks, then an UpstreamError", async () => {
    const stream = await chat(say("one two three four five"), ctx("chat-error-after-3"));
    const got: ChatChunk[] = [];
    const err = await failure(
      (async () => {
        for await (const c of stream) got.push(c);
      })(),
    );
    expect(got).toHaveLength(3);
    expect(contentOf(got)).toBe('You said: "one');
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: "http", status: 500, providerCode: "server_error" });
  });

  it("chat-truncated ends after its content with no finish_reason and no usage", async () => {
    const chunks = await collect(await chat(say("cut me"), ctx("chat-truncated")));
    expect(contentOf(chunks)).toBe('You said: "cut me". The sandbox echoes it back.');
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
    expect(chunks.every((c) => c.choices[0]!.finish_reason === null)).toBe(true);
  });

  it("chat-slow-first-token answers at once and holds the first chunk for first_token_ms", async () => {
    const started = Date.now();
    const stream = await chat(
      say("x", { passthrough: { first_token_ms: 150 } }),
      ctx("chat-slow-first-token"),
    );
    expect(Date.now() - started).toBeLessThan(100);
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(first.value).toMatchObject({ choices: [{ delta: { role: "assistant", content: "You" } }] });
  });

  it("an abort stops the slow stream while it waits for the first token", async () => {
    const controller = new AbortController();
    const stream = await chat(say("x"), ctx("chat-slow-first-token", controller.signal));
    const started = Date.now();
    const next = stream[Symbol.asyncIterator]().next();
    setTimeout(() => controller.abort(new Error("deadline")), 20);
    const err = await failure(next);
    expect((err as Error).message).toBe("deadline");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("chat-never-answers never resolves, and rejects once aborted", async () => {
    const controller = new AbortController();
    const pending = chat(say("x"), ctx("chat-never-answers", controller.signal));
    expect(await pendingAfter(pending, 50)).toBe(true);
    controller.abort(new Error("deadline"));
    expect(((await failure(pending)) as Error).message).toBe("deadline");
    const already = await failure(chat(say("x"), ctx("chat-echo", AbortSignal.abort(new Error("gone")))));
    expect((already as Error).message).toBe("gone");
  });

  it("an abort mid-stream stops a paced echo between chunks", async () => {
    const controller = new AbortController();
    const stream = await chat(
      say("many words here", { passthrough: { pace_ms: 1_000 } }),
      ctx("chat-echo", controller.signal),
    );
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const second = it.next();
    setTimeout(() => controller.abort(new Error("client left")), 20);
    expect(((await failure(second)) as Error).message).toBe("client left");
  });
});

describe("sandbox chat catalog", () => {
  const catalog = CatalogSchema.parse(catalogJson);
  const chatModels = catalog.models.filter((m) => m.modality === "chat" && m.slug.startsWith("sandbox/"));

  it("lists every sandbox chat model on the sandbox adapter, priced except :free, with output caps", () => {
    expect(chatModels.map((m) => m.slug).sort()).toEqual(
      [
        "chat-429",
        "chat-503",
        "chat-echo",
        "chat-echo:free",
        "chat-error-after-3",
        "chat-failover",
        "chat-never-answers",
        "chat-reasoning",
        "chat-slow-first-token",
        "chat-tools",
        "chat-truncated",
      ].map((s) => `sandbox/${s}`),
    );
    expect(supports("sandbox", "chat")).toBe(true);
    for (const m of chatModels) {
      expect(m.context_length).toBeGreaterThan(0);
      for (const e of m.endpoints) {
        expect(e.adapter).toBe("sandbox");
        expect(e.capabilities.max_output_tokens).toBeGreaterThan(0);
        expect(e.capabilities.parameters).toContain("max_tokens");
        expect(Boolean(e.pricing.output_token)).toBe(!m.slug.endsWith(":free"));
      }
    }
  });

  it("chat-failover: the first endpoint fails before the first byte, the second answers like the echo", async () => {
    const failover = chatModels.find((m) => m.slug === "sandbox/chat-failover")!;
    const [flaky, good] = failover.endpoints;
    expect(await failure(chat(say("x"), ctx(flaky!.upstream_model)))).toMatchObject({ status: 503 });
    const answer = await collect(await chat(say("x"), ctx(good!.upstream_model)));
    expect(contentOf(answer)).toBe('You said: "x". The sandbox echoes it back.');
  });
});
