// POST /chat/completions through the real clients (openai, @openrouter/sdk), streamed and not, on the
// sandbox chat models: shapes the clients parse, failover, mid-stream errors, cancellation and billing.
import { env } from "cloudflare:test";
import { exports as workerExports } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { getCatalog } from "../src/catalog/cache";
import { findModel } from "../src/catalog/types";
import { getDb, tables } from "../src/db/client";
import { chatPrice } from "../src/inference/chat";
import {
  estimatePromptTokens,
  IMAGE_PROMPT_TOKENS,
  promptTokenCeiling,
} from "../src/inference/prompt-estimate";
import { addByok, createAccount, createKey } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";
import { post, type StreamedCall, streamed } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";
import { repeatedHeadToolCall } from "./helpers/tool-call-streams";
import { mockUpstream } from "./helpers/upstream";

/** A fetch for clients that returns at once and remembers each call, so tests can await its waitUntil work. */
function tracked() {
  const calls: StreamedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const call = await streamed(new Request(input, init));
    calls.push(call);
    return call.res;
  };
  return { fetch, settled: () => Promise.all(calls.map((c) => c.settled())), calls };
}

let settleAll: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(settleAll.map((s) => s()));
  settleAll = [];
});

function openai(apiKey: string) {
  const t = tracked();
  settleAll.push(t.settled);
  return { client: new OpenAI({ apiKey, baseURL: BASE, fetch: t.fetch, maxRetries: 0 }), ...t };
}

function sdk(apiKey: string) {
  const t = tracked();
  settleAll.push(t.settled);
  return { client: sdkFor(apiKey, undefined, t.fetch), ...t };
}

const generation = async (id: string) =>
  (await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)))[0];

const hi = [{ role: "user" as const, content: "Hello there gateway" }];

/** Raw SSE events of a streamed answer (data payloads, comments dropped). */
async function events(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice(6));
}

describe("POST /chat/completions with the openai client", () => {
  it("answers a chat.completion with usage, cost, the generation id and the served model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const res = await client.chat.completions
      .create({ model: "sandbox/chat-echo", messages: hi })
      .withResponse();
    const completion = res.data;
    expect(res.response.headers.get("x-generation-id")).toBe(completion.id);
    expect(res.response.headers.get("x-request-id")).toBeTruthy();
    expect(completion.object).toBe("chat.completion");
    expect(completion.model).toBe("sandbox/chat-echo");
    expect(completion.choices[0]!.message.content).toContain("Hello there gateway");
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    const usage = completion.usage as OpenAI.CompletionUsage & { cost: number; is_byok: boolean };
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.cost).toBeGreaterThan(0);
    expect(usage.is_byok).toBe(false);
    await settled();
    const gen = await generation(completion.id);
    expect(gen).toMatchObject({ status: "completed", model: "sandbox/chat-echo", modality: "chat" });
    expect(gen!.costMicros).toBe(Math.round(usage.cost * 1_000_000));
  });

  it("streams chunks whose text equals the non-streamed answer, then one usage chunk", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const whole = await client.chat.completions.create({ model: "sandbox/chat-echo", messages: hi });
    const stream = await client.chat.completions.create({
      model: "sandbox/chat-echo",
      messages: hi,
      stream: true,
    });
    let text = "";
    const usageChunks: unknown[] = [];
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) usageChunks.push(chunk.usage);
      for (const c of chunk.choices) {
        text += c.delta.content ?? "";
        finish = c.finish_reason ?? finish;
      }
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe("stop");
    expect(usageChunks).toHaveLength(1);
    expect(usageChunks[0]).toMatchObject({ completion_tokens: whole.usage!.completion_tokens });
  });

  it("tool calls: arguments reassemble to JSON, finish_reason tool_calls", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const tools = [
      {
        type: "function" as const,
        function: {
          name: "get_weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      },
    ];
    const res = await client.chat.completions.create({ model: "sandbox/chat-tools", messages: hi, tools });
    const call = res.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(res.choices[0]!.finish_reason).toBe("tool_calls");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toHaveProperty("city");
    const stream = await client.chat.completions.create({
      model: "sandbox/chat-tools",
      messages: hi,
      tools,
      stream: true,
    });
    let args = "";
    for await (const chunk of stream)
      for (const c of chunk.choices) args += c.delta.tool_calls?.[0]?.function?.arguments ?? "";
    expect(JSON.parse(args)).toEqual(JSON.parse(call.function.arguments));
  });

  it("a host that repeats the tool call's id and name on every chunk: one name, streamed and not", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const sse = repeatedHeadToolCall(chunk);
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": () =>
        new Response(sse, { headers: { "Content-Type": "text/event-stream" } }),
    });
    try {
      const { client } = openai(acct.apiKey);
      const body = { model: "openai/gpt-4.1-mini", messages: hi };
      const whole = await client.chat.completions.create(body);
      expect(whole.choices[0]!.message.tool_calls).toEqual([
        { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      ]);
      // Streamed, the chunks are deltas: a client that joins every name it is sent still reads one.
      const stream = await client.chat.completions.create({ ...body, stream: true });
      let names = "";
      let ids = "";
      for await (const c of stream) {
        for (const call of c.choices[0]?.delta.tool_calls ?? []) {
          names += call.function?.name ?? "";
          ids += call.id ?? "";
        }
      }
      expect([names, ids]).toEqual(["get_weather", "call_a"]);
    } finally {
      upstream.restore();
    }
  });

  it("response_format: the sandbox answers JSON that fits the schema, streamed byte for byte", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const schema = {
      type: "object",
      properties: {
        city: { type: "string" },
        days: { type: "integer", minimum: 3 },
        when: { type: "string", format: "date" },
        tags: { type: "array", items: { type: "string", enum: ["sunny", "rainy"] }, minItems: 2 },
      },
      required: ["city", "days", "when", "tags"],
    };
    const response_format = {
      type: "json_schema" as const,
      json_schema: { name: "forecast", schema, strict: true },
    };
    const res = await client.chat.completions.create({
      model: "sandbox/chat-echo",
      messages: hi,
      response_format,
    });
    const answer = JSON.parse(res.choices[0]!.message.content!) as Record<string, unknown>;
    expect(answer).toEqual({ city: "sandbox-city", days: 4, when: "2026-01-01", tags: ["sunny", "sunny"] });
    const stream = await client.chat.completions.create({
      model: "sandbox/chat-echo",
      messages: hi,
      response_format,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) for (const c of chunk.choices) text += c.delta.content ?? "";
    expect(text).toBe(res.choices[0]!.message.content);

    const object = await client.chat.completions.create({
      model: "sandbox/chat-echo",
      messages: hi,
      response_format: { type: "json_object" },
    });
    expect(JSON.parse(object.choices[0]!.message.content!)).toEqual({ you_said: "Hello there gateway" });
  });

  it("null where the openai client's types allow it is taken as not given; include_reasoning false hides reasoning", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/chat/completions", {
      method: "POST",
      key: acct.apiKey,
      body: {
        model: "sandbox/chat-echo",
        messages: hi,
        stream: null,
        prompt_cache_key: null,
        metadata: null,
        modalities: null,
      },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe("chat.completion");

    const { client } = openai(acct.apiKey);
    const reasoning = (include_reasoning?: boolean) =>
      client.chat.completions.create({
        model: "sandbox/chat-reasoning",
        messages: hi,
        ...(include_reasoning === undefined ? {} : { include_reasoning }),
      } as OpenAI.ChatCompletionCreateParamsNonStreaming) as Promise<
        OpenAI.ChatCompletion & {
          choices: Array<{ message: { reasoning?: string } }>;
          usage: { completion_tokens_details: { reasoning_tokens: number } };
        }
      >;
    const shown = await reasoning();
    expect(shown.choices[0]!.message.reasoning).toMatch(/The user wrote/);
    const hidden = await reasoning(false);
    expect(hidden.choices[0]!.message.reasoning).toBeUndefined();
    // Reasoned all the same, and billed: only the text is held back.
    expect(hidden.usage.completion_tokens_details.reasoning_tokens).toBe(
      shown.usage.completion_tokens_details.reasoning_tokens,
    );
    expect(hidden.choices[0]!.message.content).toBe(shown.choices[0]!.message.content);
  });

  it("reasoning effort max, as the openai client and responses type it, is accepted", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const chat = await client.chat.completions.create({
      model: "sandbox/chat-reasoning",
      messages: hi,
      reasoning_effort: "max",
    });
    expect(chat.choices[0]!.message.content).toBeTruthy();
    const response = await client.responses.create({
      model: "sandbox/chat-reasoning",
      input: "hi",
      reasoning: { effort: "max" },
    });
    expect(response.status).toBe("completed");
    const unknown = await call("/chat/completions", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/chat-reasoning", messages: hi, reasoning_effort: "maximum" },
    });
    expect(unknown.status).toBe(400);
  });

  it("tool_choice allowed_tools: only the tools named are offered, in its mode; an unknown name is a 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const tool = (name: string) => ({
      type: "function" as const,
      function: { name, parameters: { type: "object", properties: { q: { type: "string" } } } },
    });
    const tools = [tool("search"), tool("weather"), tool("clock")];
    const allowed = (names: string[]) => ({
      type: "allowed_tools" as const,
      allowed_tools: {
        mode: "required" as const,
        tools: names.map((name) => ({ type: "function" as const, function: { name } })),
      },
    });
    const res = await client.chat.completions.create({
      model: "sandbox/chat-tools",
      messages: hi,
      tools,
      tool_choice: allowed(["clock", "weather"]),
    });
    // The sandbox calls the first two tools it is offered: the ones allowed, in the request's order.
    const called = res.choices[0]!.message.tool_calls!.map(
      (t) => (t as OpenAI.ChatCompletionMessageFunctionToolCall).function.name,
    );
    expect(called).toEqual(["weather", "clock"]);

    const answer = await client.responses.create({
      model: "sandbox/chat-tools",
      input: "Hello there gateway",
      tools: tools.map((t) => ({ type: "function" as const, ...t.function, strict: false })),
      tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "search" }] },
    });
    expect(answer.output.map((o) => (o.type === "function_call" ? o.name : o.type))).toEqual(["search"]);

    const bad = await call("/chat/completions", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/chat-tools", messages: hi, tools, tool_choice: allowed(["search", "stocks"]) },
    });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).message).toContain("stocks");
  });
});

describe("POST /chat/completions with @openrouter/sdk", () => {
  it("chat.send, not streamed and streamed, parses", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = sdk(acct.apiKey);
    type Sent = {
      choices: Array<{ message: { content?: string | null } }>;
      usage?: { cost?: number | null };
    };
    type Chunk = { choices: Array<{ delta: { content?: string | null; reasoning?: string | null } }> };
    const result = (await client.chat.send({
      chatRequest: { model: "sandbox/chat-echo", messages: hi },
    })) as unknown as Sent;
    expect(result.choices[0]!.message.content).toContain("Hello there gateway");
    expect(result.usage?.cost).toBeGreaterThan(0);
    const stream = (await client.chat.send({
      chatRequest: { model: "sandbox/chat-reasoning", messages: hi, stream: true },
    })) as unknown as AsyncIterable<Chunk>;
    let text = "";
    let reasoning = "";
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? "";
        reasoning += c.delta.reasoning ?? "";
      }
    }
    expect(reasoning.length).toBeGreaterThan(0);
    expect(text).toContain("Hello there gateway");
  });
});

describe("failures", () => {
  it("503 before the first byte answers the error envelope", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/chat/completions", acct.apiKey, { model: "sandbox/chat-503", messages: hi });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { code: number } };
    expect(body.error.code).toBe(503);
  });

  it("fails over to the next provider before the first byte, and the attempt log shows it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-failover",
      messages: hi,
      stream: true,
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-generation-id")!;
    const data = await events(res);
    expect(data.at(-1)).toBe("[DONE]");
    await settled();
    const gen = await generation(id);
    const attempts = gen!.attempts as Array<{ outcome: string }>;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.outcome).not.toBe("ok");
    expect(attempts[1]!.outcome).toBe("ok");
  });

  it.each([true, false])(
    "an upstream stream that ends with nothing fails over (streamed: %s), and the attempt log shows it",
    async (stream) => {
      const acct = await createAccount({ creditsUsd: 5 });
      // chat-truncated ends without a finish reason or usage; a stop sequence on its first word leaves nothing.
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "sandbox/chat-truncated",
        models: ["sandbox/chat-echo"],
        messages: [{ role: "user", content: "Tell me" }],
        stop: ["You"],
        stream,
      });
      expect(res.status).toBe(200);
      const id = res.headers.get("x-generation-id")!;
      await res.text();
      await settled();
      const gen = await generation(id);
      expect(gen!.model).toBe("sandbox/chat-echo");
      const attempts = gen!.attempts as Array<{ model: string; outcome: string }>;
      expect(attempts.map((a) => [a.model, a.outcome === "ok"])).toEqual([
        ["sandbox/chat-truncated", false],
        ["sandbox/chat-echo", true],
      ]);
    },
  );

  it("an upstream stream that ends with nothing and no fallback: 502, nothing charged", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-truncated",
      messages: [{ role: "user", content: "Tell me" }],
      stop: ["You"],
    });
    expect(res.status).toBe(502);
    const id = res.headers.get("x-generation-id")!;
    await settled();
    const gen = await generation(id);
    // The record names the provider whose failure the answer reports, as the error does.
    expect(gen).toMatchObject({ status: "failed", costMicros: 0, provider: "sandbox" });
  });

  it("an error after the first chunks arrives as one error chunk with finish_reason error", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-error-after-3",
      messages: hi,
      stream: true,
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-generation-id")!;
    const data = await events(res);
    const last = JSON.parse(data.at(-1)!) as {
      error: { code: number; message: string; metadata: { error_type: string } };
      choices: Array<{ finish_reason: string }>;
      usage: { completion_tokens: number; cost: number };
    };
    expect(last.choices[0]!.finish_reason).toBe("error");
    expect(Number.isInteger(last.error.code)).toBe(true);
    expect(last.error.metadata.error_type).toBeTruthy();
    expect(data).not.toContain("[DONE]");
    const contentChunks = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: unknown[] });
    expect(contentChunks.length).toBe(3);
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "failed" });
    // Output was produced before the failure: it is billed, on estimated usage, and the error chunk
    // says what was charged.
    expect(gen!.costMicros).toBeGreaterThan(0);
    expect(gen!.usage).toMatchObject({ estimated: 1 });
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
    expect(Math.round(last.usage.cost * 1_000_000)).toBe(gen!.costMicros);
  });

  it("not streamed, an upstream that fails mid-answer fails over to the next model: nothing was sent yet", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      models: ["sandbox/chat-error-after-3", "sandbox/chat-echo"],
      messages: hi,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      model: string;
      choices: Array<{ message: { content: string }; finish_reason: string }>;
      usage: { cost: number };
    };
    expect(body.model).toBe("sandbox/chat-echo");
    expect(body.choices[0]!.finish_reason).toBe("stop");
    await settled();
    const gen = await generation(res.headers.get("x-generation-id")!);
    const attempts = gen!.attempts as Array<{ model: string; outcome: string; status?: number }>;
    expect(attempts.map((a) => [a.model, a.outcome])).toEqual([
      ["sandbox/chat-error-after-3", "http"],
      ["sandbox/chat-echo", "ok"],
    ]);
    expect(attempts[0]!.status).toBe(500);
    // Only the answer that was sent is charged.
    expect(gen).toMatchObject({ status: "completed", model: "sandbox/chat-echo" });
    expect(gen!.costMicros).toBe(Math.round(body.usage.cost * 1_000_000));
    expect(await usageMicros(acct.apiKey)).toBe(gen!.costMicros);
  });

  it("not streamed, a mid-answer failure with no fallback is a 502 envelope and costs nothing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-error-after-3",
      messages: hi,
    });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(502);
    await settled();
    const gen = await generation(res.headers.get("x-generation-id")!);
    // The record names the provider whose failure the answer reports, as the error does.
    expect(gen).toMatchObject({ status: "failed", costMicros: 0, provider: "sandbox" });
    expect((gen!.attempts as Array<{ outcome: string }>).map((a) => a.outcome)).toEqual(["http"]);
    expect(await usageMicros(acct.apiKey)).toBe(0);
  });

  it("a rate limit hit after streaming started arrives as an error chunk: 429, rate_limit_exceeded", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const sse =
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n' +
      'data: {"error":{"code":429,"message":"Rate limit reached for requests"}}\n\n';
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": () =>
        new Response(sse, { headers: { "Content-Type": "text/event-stream" } }),
    });
    try {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        stream: true,
      });
      expect(res.status).toBe(200);
      const data = await events(res);
      const last = JSON.parse(data.at(-1)!) as {
        error: { code: number; metadata: { error_type: string } };
        choices: Array<{ finish_reason: string }>;
      };
      expect(last.error.code).toBe(429);
      expect(last.error.metadata.error_type).toBe("rate_limit_exceeded");
      expect(last.choices[0]!.finish_reason).toBe("error");
      expect(upstream.requests[0]!.headers.authorization).toBe("Bearer sk-user-openai-key");
      await settled();
    } finally {
      upstream.restore();
    }
  });

  it("a stream cut without a finish reason (or usage) ends with the error event, billed for what it produced, estimated", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-truncated",
      messages: hi,
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const data = await events(res);
    expect(data).not.toContain("[DONE]");
    const last = JSON.parse(data.at(-1)!) as {
      choices: Array<{ finish_reason: string }>;
      error: { code: number; message: string };
      usage: { completion_tokens: number; cost: number };
    };
    expect(last.choices[0]!.finish_reason).toBe("error");
    expect(last.error).toMatchObject({ code: 502, message: expect.stringContaining("(no finish reason)") });
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
    expect(last.usage.cost).toBeGreaterThan(0);
    // No chunk before it claimed the answer had finished.
    for (const frame of data.slice(0, -1)) {
      const chunk = JSON.parse(frame) as { choices: Array<{ finish_reason: string | null }> };
      expect(chunk.choices.every((c) => c.finish_reason === null)).toBe(true);
    }
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "failed", error: expect.stringContaining("no finish reason") });
    expect(gen!.usage).toMatchObject({ estimated: 1 });
    expect(gen!.costMicros).toBe(Math.round(last.usage.cost * 1_000_000));
  });

  it("an estimate never bills more output than max_tokens allowed (short tokens: a run of one letter)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-truncated",
      messages: [{ role: "user", content: `${"x".repeat(400)} ${"x".repeat(400)}` }],
      max_tokens: 3,
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const data = await events(res);
    const usage = JSON.parse(data.at(-1)!) as { usage: { completion_tokens: number; cost: number } };
    expect(usage.usage.completion_tokens).toBe(3);
    await settled();
    expect((await generation(id))!.usage).toMatchObject({ completion_tokens: 3, estimated: 1 });
  });

  it("a stream cut without a finish reason is an error to openai's stream helper, not a finished answer", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const stream = client.chat.completions.stream({ model: "sandbox/chat-truncated", messages: hi });
    let text = "";
    stream.on("content", (delta) => {
      text += delta;
    });
    await expect(stream.finalChatCompletion()).rejects.toThrow(/no finish reason/);
    expect(text).toContain("Hello");
    await settled();
  });

  it.each([false, true])(
    "a JSON answer cut without a finish reason fails over (fallback given: %s), or is a 502 charged nothing",
    async (fallback) => {
      const acct = await createAccount({ creditsUsd: 5 });
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "sandbox/chat-truncated",
        ...(fallback ? { models: ["sandbox/chat-echo"] } : {}),
        messages: hi,
      });
      const id = res.headers.get("x-generation-id")!;
      expect(res.status).toBe(fallback ? 200 : 502);
      await res.text();
      await settled();
      const gen = await generation(id);
      const attempts = gen!.attempts as Array<{ model: string; outcome: string }>;
      expect(attempts[0]!.model).toBe("sandbox/chat-truncated");
      expect(attempts[0]!.outcome).not.toBe("ok");
      if (fallback) expect(gen).toMatchObject({ status: "completed", model: "sandbox/chat-echo" });
      else expect(gen).toMatchObject({ status: "failed", costMicros: 0 });
    },
  );

  it("an empty answer (a stop sequence met at once) still opens with role assistant: openai's stream helper completes", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const stream = client.chat.completions.stream({
      model: "sandbox/chat-echo",
      messages: hi,
      stop: ["You"],
    });
    const completion = await stream.finalChatCompletion();
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    expect(completion.choices[0]!.message).toMatchObject({ role: "assistant", content: null });
    await settled();
  });

  it("a client that leaves mid-stream: the generation is cancelled and billed once for what was produced", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content: "word ".repeat(200) }],
      stream: true,
      provider: { options: { sandbox: { pace_ms: 5 } } },
    });
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled" });
    expect(gen!.costMicros).toBeGreaterThan(0);
    const key = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.hash, acct.apiKeyHash));
    expect(key).toHaveLength(1);
  });
});

/** What GET /key says the key spent, in micro-USD. */
async function usageMicros(apiKey: string): Promise<number> {
  const key = (await (await call("/key", { key: apiKey })).json()) as { data: { usage: number } };
  return Math.round(key.data.usage * 1_000_000);
}

/** A chat request through the app whose client can leave (abort) while it waits for the answer. */
function leaving(apiKey: string, body: unknown) {
  const client = new AbortController();
  const call = streamed(
    new Request(`${BASE}/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: client.signal,
    }),
  );
  return { client, call };
}

describe("a client that leaves before its answer is complete", () => {
  it("non-streamed: the upstream stops, the generation is cancelled and billed for what was produced", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const words = 60;
    const { client, call } = leaving(acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content: "word ".repeat(words) }],
      provider: { options: { sandbox: { pace_ms: 20 } } },
    });
    await new Promise((r) => setTimeout(r, 300));
    client.abort();
    const { res, settled } = await call;
    expect(res.status).toBe(499);
    const id = res.headers.get("x-generation-id")!;
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled", error: "client disconnected" });
    // The sandbox was stopped part-way: fewer words than the whole echo were produced, and those are billed.
    const completion = (gen!.usage as { completion_tokens: number }).completion_tokens;
    expect(completion).toBeGreaterThan(0);
    expect(completion).toBeLessThan(words);
    expect(gen!.costMicros).toBeGreaterThan(0);
    expect(await usageMicros(acct.apiKey)).toBe(gen!.costMicros);
  });

  it("before the first token: the attempt stops, the generation is cancelled and nothing is charged", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, call } = leaving(acct.apiKey, {
      model: "sandbox/chat-slow-first-token",
      stream: true,
      messages: hi,
      provider: { options: { sandbox: { first_token_ms: 5_000 } } },
    });
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 100));
    client.abort();
    const { res, settled } = await call;
    // Answered as soon as the client left, not once the slow first token came.
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(res.status).toBe(499);
    const id = res.headers.get("x-generation-id")!;
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled", costMicros: 0, error: "client disconnected" });
    expect(await usageMicros(acct.apiKey)).toBe(0);
  });
});

describe("a client that leaves, through the Worker's own entrypoint", () => {
  it("the runtime aborts the request's signal (enable_request_signal): the generation is cancelled", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const session = `leaves-${crypto.randomUUID()}`;
    // A service-binding call into src/index.ts, as Cloudflare's front line makes it: its abort reaches
    // the Worker as the incoming request's signal only with the compatibility flag.
    const call = (workerExports as unknown as { default: Fetcher }).default.fetch(
      `${BASE}/chat/completions`,
      {
        method: "POST",
        headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          model: "sandbox/chat-slow-first-token",
          messages: hi,
          session_id: session,
          provider: { options: { sandbox: { first_token_ms: 3_000 } } },
        }),
        signal: AbortSignal.timeout(200),
      },
    );
    await expect(call).rejects.toThrow();
    let gen: typeof tables.generations.$inferSelect | undefined;
    for (let i = 0; i < 50 && !gen; i++) {
      await new Promise((r) => setTimeout(r, 100));
      [gen] = await getDb(env.DB)
        .select()
        .from(tables.generations)
        .where(eq(tables.generations.sessionId, session));
    }
    // Recorded well before the slow first token would have come, as cancelled and free.
    expect(gen).toMatchObject({ status: "cancelled", costMicros: 0, error: "client disconnected" });
  });
});

describe("streaming hygiene", () => {
  it("text/event-stream, no-cache, generation and request ids, and events sent as they arrive", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const started = Date.now();
    const call = await streamed(
      new Request(`${BASE}/chat/completions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          model: "sandbox/chat-echo",
          messages: [{ role: "user", content: "one two three four five six seven eight" }],
          stream: true,
          provider: { options: { sandbox: { pace_ms: 40 } } },
        }),
      }),
    );
    settleAll.push(call.settled);
    const { res } = call;
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-generation-id")).toMatch(/^gen-/);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    const reader = res.body!.getReader();
    await reader.read();
    const firstByte = Date.now() - started;
    while (!(await reader.read()).done) {}
    const lastByte = Date.now() - started;
    // Paced at 40 ms a word: buffering would deliver the first byte only with the last.
    expect(lastByte - firstByte).toBeGreaterThan(200);
  });

  it("debug.echo_upstream_body: the first chunk carries the upstream body", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: hi,
      stream: true,
      debug: { echo_upstream_body: true },
    });
    const data = await events(res);
    const first = JSON.parse(data[0]!) as { choices: unknown[]; debug: { echo_upstream_body: unknown } };
    expect(first.choices).toEqual([]);
    expect(first.debug.echo_upstream_body).toMatchObject({ model: "chat-echo", messages: hi });
    // One per attempted provider: one attempt, one echo.
    expect(data.filter((d) => d.includes('"echo_upstream_body"'))).toHaveLength(1);
  });

  it("debug.echo_upstream_body: one chunk per attempted provider, the failed attempt's first", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/chat/completions", acct.apiKey, {
      models: ["sandbox/chat-503", "sandbox/chat-echo"],
      messages: hi,
      stream: true,
      debug: { echo_upstream_body: true },
    });
    expect(res.status).toBe(200);
    const data = await events(res);
    const echoes = data
      .filter((d) => d.includes('"echo_upstream_body"'))
      .map((d) => (JSON.parse(d) as { debug: { echo_upstream_body: { model: string } } }).debug);
    expect(echoes.map((e) => e.echo_upstream_body.model)).toEqual(["chat-always-503", "chat-echo"]);
    // The echoes come first, before any choice.
    const withChoices = data.map(
      (d) => d !== "[DONE]" && (JSON.parse(d) as { choices: unknown[] }).choices.length > 0,
    );
    expect(withChoices.indexOf(true)).toBe(2);
  });

  it("optional fields are omitted, never null, in streamed deltas", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: hi,
      stream: true,
    });
    for (const d of (await events(res)).filter((e) => e !== "[DONE]")) {
      const chunk = JSON.parse(d) as {
        choices: Array<{ delta: Record<string, unknown>; finish_reason: unknown }>;
      };
      for (const c of chunk.choices) {
        expect(c).toHaveProperty("finish_reason");
        for (const v of Object.values(c.delta)) expect(v).not.toBeNull();
      }
    }
  });
});

describe("money", () => {
  it("200 concurrent streamed chats on a capped key admit exactly floor(C/R); spend reconciles", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    // Paced, so every stream is still open when the last request is admitted: a stream that ended and
    // settled below its reservation would rightly make room for an eleventh.
    const body = {
      model: "sandbox/chat-echo",
      messages: hi,
      max_tokens: 16,
      stream: true,
      provider: { options: { sandbox: { pace_ms: 25 } } },
    };
    // R: the worst case admission reserves for this body on the model's endpoint.
    const model = findModel(await getCatalog(env.DB), "sandbox/chat-echo")!;
    const endpoint = model.endpoints[0]!;
    const { prompt, completion } = chatPrice(endpoint)({
      promptTokens: promptTokenCeiling(hi),
      completionTokens: 16,
    });
    const r = Math.ceil(prompt + completion);
    const capped = await createKey(acct, { limitUsd: (r * 10.5) / 1_000_000 });
    const calls = await Promise.all(
      Array.from({ length: 200 }, () => post("/chat/completions", capped.key, body)),
    );
    const statuses = calls.map((c) => c.res.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
    const costs = await Promise.all(
      calls
        .filter((c) => c.res.status === 200)
        .map(async (c) => {
          const data = await events(c.res);
          return (JSON.parse(data.at(-2)!) as { usage: { cost: number } }).usage.cost;
        }),
    );
    await Promise.all(calls.map((c) => c.settled()));
    const records = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.keyHash, capped.hash));
    const reported = Math.round(costs.reduce((s, c) => s + c, 0) * 1_000_000);
    expect(records).toHaveLength(10);
    expect(records.reduce((s, g) => s + g.costMicros, 0)).toBe(reported);
    const key = (await (await call("/key", { key: capped.key })).json()) as { data: { usage: number } };
    expect(Math.round(key.data.usage * 1_000_000)).toBe(reported);
  });
});

describe("money: one request after another", () => {
  it("a request sent when the previous answer ended finds its room back, though the settlement is still on its way", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = { model: "sandbox/chat-echo", messages: hi, max_tokens: 1000 };
    const model = findModel(await getCatalog(env.DB), "sandbox/chat-echo")!;
    const { prompt, completion } = chatPrice(model.endpoints[0]!)({
      promptTokens: promptTokenCeiling(hi),
      completionTokens: 1000,
    });
    // Room for one reservation at a time: the next fits only once the previous one is settled.
    const capped = await createKey(acct, { limitUsd: (1.4 * Math.ceil(prompt + completion)) / 1_000_000 });
    const statuses: number[] = [];
    const sent: StreamedCall[] = [];
    for (let i = 0; i < 12; i++) {
      // As a client does: the next request goes as soon as this answer is read, not once its
      // background work (the record, the settlement) is done.
      const one = await post("/chat/completions", capped.key, { ...body, stream: i % 2 === 0 });
      sent.push(one);
      statuses.push(one.res.status);
      await one.res.arrayBuffer();
    }
    await Promise.all(sent.map((s) => s.settled()));
    expect(statuses).toEqual(Array(12).fill(200));
  });
});

describe("money: what the reservation counts", () => {
  it("tool definitions and the response format's schema are reserved as prompt, so a cap below them refuses before the call", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const model = findModel(await getCatalog(env.DB), "sandbox/chat-tools")!;
    const { prompt, completion } = chatPrice(model.endpoints[0]!)({
      promptTokens: promptTokenCeiling(hi),
      completionTokens: 16,
    });
    // Room for three requests of the short message alone.
    const capped = await createKey(acct, { limitUsd: (3 * Math.ceil(prompt + completion)) / 1_000_000 });
    const description = "a long description of what this tool does ".repeat(200);
    const tools = Array.from({ length: 20 }, (_, i) => ({
      type: "function" as const,
      function: { name: `tool_${i}`, description, parameters: { type: "object", properties: {} } },
    }));
    const schema = { type: "object", description, properties: { answer: { type: "string", description } } };
    const base = { model: "sandbox/chat-tools", messages: hi, max_tokens: 16 };
    for (const body of [
      { ...base, tools },
      { ...base, response_format: { type: "json_schema", json_schema: { name: "answer", schema } } },
    ]) {
      const res = await call("/chat/completions", { method: "POST", key: capped.key, body });
      expect(res.status).toBe(402);
      await res.arrayBuffer();
    }
    expect(await usageMicros(capped.key)).toBe(0);
    // The same message without them fits.
    const res = await call("/chat/completions", { method: "POST", key: capped.key, body: base });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});

describe("images and long contexts", () => {
  /** A user message with a base64 "photo" of `bytes` bytes. */
  const photo = (bytes: number) => [
    {
      role: "user" as const,
      content: [
        { type: "text" as const, text: "What is in this photo?" },
        {
          type: "image_url" as const,
          image_url: { url: `data:image/jpeg;base64,${"A".repeat(Math.ceil(bytes / 3) * 4)}` },
        },
      ],
    },
  ];

  it("a 3 MB photo is estimated as an image, not as a million tokens of base64", () => {
    const text = estimatePromptTokens([{ role: "user", content: "What is in this photo?" }]);
    const image = estimatePromptTokens(photo(3_000_000));
    expect(image - text).toBeGreaterThanOrEqual(IMAGE_PROMPT_TOKENS);
    expect(image - text).toBeLessThan(IMAGE_PROMPT_TOKENS + 50);
  });

  it("a chat carrying a 3 MB photo is served on a few cents of credit (over 1 MiB, under 16 MiB)", async () => {
    // Reserving its base64 as text would hold about $0.50 here (a million tokens at $0.50 per million).
    const acct = await createAccount({ creditsUsd: 0.05 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: photo(3_000_000),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(answer.choices[0]!.message.content).toContain("What is in this photo?");
    await settled();
  });

  it("a body over 16 MiB is refused with 413 before anything else", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: photo(13 * 1024 * 1024),
    });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toContain("16 MiB");
  });
});

describe("streams the format writes nothing for", () => {
  it("a usage-only upstream chunk (choices: []) does not stall the stream: usage and [DONE] follow", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const sse =
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n' +
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' +
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\n' +
      "data: [DONE]\n\n";
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": () =>
        new Response(sse, { headers: { "Content-Type": "text/event-stream" } }),
    });
    try {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        stream: true,
      });
      const data = await events(res);
      expect(data.at(-1)).toBe("[DONE]");
      expect(JSON.parse(data.at(-2)!)).toMatchObject({ usage: { prompt_tokens: 9, completion_tokens: 1 } });
      await settled();
    } finally {
      upstream.restore();
    }
  });
});
