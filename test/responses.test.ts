// POST /responses through the real clients (openai's responses.create / responses.stream, @openrouter/sdk's
// responses.send) on the sandbox chat models and a mock OpenAI upstream: the response object and events
// the clients parse, tools and reasoning round trips, presets, failures, cancellation and billing.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import responsesText from "./fixtures/openai/responses-text.sse?raw";
import { addByok, createAccount } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";
import { post, type StreamedCall, streamed } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";
import { interleavedToolCalls, repeatedHeadToolCall } from "./helpers/tool-call-streams";
import { mockUpstream } from "./helpers/upstream";

let settleAll: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(settleAll.map((s) => s()));
  settleAll = [];
});

/** A fetch for clients that returns at once and remembers each call, so tests can await its waitUntil work. */
function tracked() {
  const calls: StreamedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const c = await streamed(new Request(input, init));
    calls.push(c);
    return c.res;
  };
  const settled = () => Promise.all(calls.map((c) => c.settled()));
  settleAll.push(settled);
  return { fetch, settled };
}

function openai(apiKey: string) {
  const t = tracked();
  return { client: new OpenAI({ apiKey, baseURL: BASE, fetch: t.fetch, maxRetries: 0 }), ...t };
}

async function send(key: string, body: Record<string, unknown>) {
  const sent = await post("/responses", key, body);
  settleAll.push(sent.settled);
  return sent;
}

type Event = Record<string, unknown> & { type: string; sequence_number: number };

/** The data payloads of a stream, parsed ([DONE] kept as the string). */
async function eventsOf(res: Response): Promise<Array<Event | "[DONE]">> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => (e === "data: [DONE]" ? "[DONE]" : (JSON.parse(e.slice(6)) as Event)));
}

const generation = async (id: string) =>
  (await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)))[0];

const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

const REQUIRED_KEYS = [
  "id",
  "object",
  "created_at",
  "completed_at",
  "model",
  "status",
  "output",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "error",
  "incomplete_details",
  "instructions",
  "metadata",
  "temperature",
  "top_p",
  "presence_penalty",
  "frequency_penalty",
  "usage",
];

describe("POST /responses with the openai client", () => {
  it("responses.create: the response object with every required key, usage and cost; billed and recorded as responses", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const { data, response } = await client.responses
      .create({ model: "sandbox/chat-echo", input: "Hello there gateway", instructions: "Be kind." })
      .withResponse();
    expect(response.headers.get("x-generation-id")).toBe(data.id);
    expect(data.object).toBe("response");
    expect(data.status).toBe("completed");
    expect(data.output_text).toContain("Hello there gateway");
    expect(data.instructions).toBe("Be kind.");
    for (const key of REQUIRED_KEYS) expect(data, key).toHaveProperty(key);
    const usage = data.usage as OpenAI.Responses.ResponseUsage & {
      cost: number;
      is_byok: boolean;
      cost_details: Record<string, number | null>;
    };
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 });
    expect(usage.output_tokens_details).toEqual({ reasoning_tokens: 0 });
    expect(usage.is_byok).toBe(false);
    expect(usage.cost).toBeGreaterThan(0);
    expect(usage.cost_details).toHaveProperty("upstream_inference_input_cost");
    expect(usage.cost_details).toHaveProperty("upstream_inference_output_cost");
    await settled();
    const gen = await generation(data.id);
    expect(gen).toMatchObject({ status: "completed", apiType: "responses", model: "sandbox/chat-echo" });
    expect(gen!.costMicros).toBe(Math.round(usage.cost * 1_000_000));
    const key = (await (await call("/key", { key: acct.apiKey })).json()) as { data: { usage: number } };
    expect(Math.round(key.data.usage * 1_000_000)).toBe(gen!.costMicros);
  });

  it("responses.stream with function tools: calls, then the tool outputs replayed answer in text", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const stream = client.responses.stream({
      model: "sandbox/chat-tools",
      input: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weather, { ...weather, name: "get_time", parameters: { type: "object", properties: {} } }],
    });
    const seen: string[] = [];
    let argDeltas = "";
    stream.on("event", (e) => seen.push(e.type));
    stream.on("response.function_call_arguments.delta", (e) => {
      argDeltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(final.status).toBe("completed");
    const calls = final.output.filter(
      (o) => o.type === "function_call",
    ) as OpenAI.Responses.ResponseFunctionToolCall[];
    expect(calls.map((c) => c.name)).toEqual(["get_weather", "get_time"]);
    expect(new Set(calls.map((c) => c.call_id)).size).toBe(2);
    expect(JSON.parse(calls[0]!.arguments)).toHaveProperty("city");
    expect(argDeltas).toBe(calls.map((c) => c.arguments).join(""));
    expect(seen.slice(0, 3)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
    ]);
    expect(seen.filter((t) => t === "response.function_call_arguments.done")).toHaveLength(2);
    expect(seen.at(-1)).toBe("response.completed");

    const next = await client.responses.create({
      model: "sandbox/chat-tools",
      tools: [weather],
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...calls,
        { type: "function_call_output", call_id: calls[0]!.call_id, output: "sunny" },
        { type: "function_call_output", call_id: calls[1]!.call_id, output: "noon" },
      ],
    });
    expect(next.output_text).toContain("The tool get_weather returned sunny.");
    expect(next.output_text).toContain("The tool get_time returned noon.");
  });

  it("responses.stream with reasoning: a reasoning item before the message, replayed unchanged as reasoning_details", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const stream = client.responses.stream({
      model: "sandbox/chat-reasoning",
      input: "Think about this",
      reasoning: { effort: "low" },
    });
    let reasoningDeltas = "";
    stream.on("response.reasoning_text.delta", (e) => {
      reasoningDeltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    const reasoning = final.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.content?.[0]?.text).toBe(reasoningDeltas);
    expect(reasoningDeltas).toContain("The user wrote 3 words");
    expect(final.output_text).toContain("Think about this");
    expect(
      (final.usage as OpenAI.Responses.ResponseUsage).output_tokens_details.reasoning_tokens,
    ).toBeGreaterThan(0);

    // The reasoning item sent back reaches the provider as the assistant turn's reasoning_details.
    const sent = await send(acct.apiKey, {
      model: "sandbox/chat-echo",
      stream: true,
      debug: { echo_upstream_body: true },
      input: [
        { role: "user", content: "Think about this" },
        ...final.output,
        { role: "user", content: "Again" },
      ],
    });
    const events = await eventsOf(sent.res);
    const debug = events[0] as Event & {
      debug: { echo_upstream_body: { messages: Array<Record<string, unknown>> } };
    };
    expect(debug.type).toBe("response.debug");
    const assistant = debug.debug.echo_upstream_body.messages.find((m) => m.role === "assistant")!;
    expect(assistant.content).toBe(final.output_text);
    expect(assistant.reasoning_details).toEqual([
      { type: "reasoning.text", text: reasoningDeltas, format: "unknown", index: 0 },
    ]);
  });

  it("the raw stream: created, in_progress, item/part/delta/done order, logprobs, strictly increasing sequence numbers, [DONE]", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await send(acct.apiKey, { model: "sandbox/chat-echo", input: "one two", stream: true });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = await eventsOf(res);
    expect(events.at(-1)).toBe("[DONE]");
    const data = events.slice(0, -1) as Event[];
    expect(data.map((e) => e.sequence_number)).toEqual(data.map((_, i) => i));
    const types = data.map((e) => e.type);
    const deltas = types.filter((t) => t === "response.output_text.delta").length;
    expect(deltas).toBeGreaterThan(3);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...Array(deltas).fill("response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    for (const e of data.filter((d) => d.type === "response.output_text.delta"))
      expect(e.logprobs).toEqual([]);
    const completed = data.at(-1) as Event & { response: Record<string, unknown> };
    for (const key of REQUIRED_KEYS) expect(completed.response, key).toHaveProperty(key);
    expect(completed.response.usage).toMatchObject({ cost: expect.any(Number), is_byok: false });
  });

  it("responses.create with stream: true iterates the same events", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = openai(acct.apiKey);
    const stream = await client.responses.create({
      model: "sandbox/chat-echo",
      input: "hi there",
      stream: true,
    });
    let text = "";
    let last = "";
    for await (const e of stream) {
      if (e.type === "response.output_text.delta") text += e.delta;
      last = e.type;
    }
    expect(text).toContain("hi there");
    expect(last).toBe("response.completed");
  });
});

describe("POST /responses with @openrouter/sdk", () => {
  it("responses.send parses, not streamed and streamed (tools and reasoning)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const t = tracked();
    const client = sdkFor(acct.apiKey, undefined, t.fetch);
    const result = (await client.responses.send({
      responsesRequest: {
        model: "sandbox/chat-tools",
        input: "Weather?",
        tools: [{ type: "function", name: "get_weather", parameters: weather.parameters }],
      },
    })) as unknown as {
      status: string;
      output: Array<{ type: string; callId?: string }>;
      usage: { cost: number };
    };
    expect(result.status).toBe("completed");
    expect(result.output[0]).toMatchObject({ type: "function_call", callId: "call_0" });
    expect(result.usage.cost).toBeGreaterThan(0);

    const stream = (await client.responses.send({
      responsesRequest: { model: "sandbox/chat-reasoning", input: "Hello sdk", stream: true },
    })) as unknown as AsyncIterable<{ type: string; delta?: string }>;
    const types = new Set<string>();
    let text = "";
    for await (const e of stream) {
      types.add(e.type);
      if (e.type === "response.output_text.delta") text += e.delta;
    }
    expect(types).toContain("response.reasoning_text.delta");
    expect(types).toContain("response.completed");
    expect(text).toContain("Hello sdk");
  });
});

describe("tool calls from chat completions hosts", () => {
  const GROQ = "POST api.groq.com/openai/v1/chat/completions";
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "llama", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const time = { ...weather, name: "get_time", parameters: { type: "object", properties: {} } };

  /** The model's calls through responses.stream: the arguments.done events, and the final response's calls. */
  async function calls(acct: { apiKey: string }, upstreamSse: string) {
    const upstream = mockUpstream({
      [GROQ]: () => new Response(upstreamSse, { headers: { "Content-Type": "text/event-stream" } }),
    });
    try {
      const body: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, "stream"> & {
        provider: { only: string[] };
      } = {
        model: "meta-llama/llama-3.3-70b-instruct",
        provider: { only: ["groq"] },
        input: "Weather and time in Paris?",
        tools: [weather, time],
      };
      const { client } = openai(acct.apiKey);
      const whole = await client.responses.create({ ...body, stream: false });
      const stream = client.responses.stream(body);
      const done: string[] = [];
      stream.on("response.function_call_arguments.done", (e) => done.push(e.arguments));
      stream.on("response.output_item.done", (e) => {
        if (e.item.type === "function_call") done.push(`${e.item.name} ${e.item.arguments}`);
      });
      const final = await stream.finalResponse();
      const callsOf = (r: OpenAI.Responses.Response) =>
        r.output.map((o) => (o.type === "function_call" ? [o.call_id, o.name, o.arguments] : o.type));
      return { whole: callsOf(whole), streamed: callsOf(final), done };
    } finally {
      upstream.restore();
    }
  }

  it("a host that repeats the call's id and name on every chunk: one name, streamed and not", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "groq", "gsk-user-key");
    const sse = repeatedHeadToolCall(chunk);
    const got = await calls(acct, sse);
    const expected = [["call_a", "get_weather", '{"city":"Paris"}']];
    expect(got.whole).toEqual(expected);
    expect(got.streamed).toEqual(expected);
    expect(got.done).toEqual(['{"city":"Paris"}', 'get_weather {"city":"Paris"}']);
  });

  it("calls whose heads come first, then each one's arguments: one item per call, its .done events with all its arguments", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "groq", "gsk-user-key");
    const sse = interleavedToolCalls(chunk);
    const got = await calls(acct, sse);
    const expected = [
      ["call_a", "get_weather", '{"city":"Paris"}'],
      ["call_b", "get_time", '{"tz":"UTC"}'],
    ];
    expect(got.whole).toEqual(expected);
    expect(got.streamed).toEqual(expected);
    expect(got.done).toEqual([
      '{"city":"Paris"}',
      'get_weather {"city":"Paris"}',
      '{"tz":"UTC"}',
      'get_time {"tz":"UTC"}',
    ]);
  });
});

describe("failures and limits", () => {
  it("an error after the first byte: response.failed with error and error_type, then [DONE]; the openai client sees a failed response", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await send(acct.apiKey, {
      model: "sandbox/chat-error-after-3",
      input: "one two three four five",
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const events = await eventsOf(res);
    expect(events.at(-1)).toBe("[DONE]");
    const failed = events.at(-2) as Event & {
      response: {
        status: string;
        error: { code: string; message: string };
        error_type: string;
        output: unknown[];
      };
    };
    expect(failed.type).toBe("response.failed");
    expect(failed.response.status).toBe("failed");
    expect(failed.response.error.code).toBe("server_error");
    expect(failed.response.error.message).toContain("mid-stream");
    expect(failed.response.error_type).toBe("server");
    expect(failed.response.output).toHaveLength(1);
    await settleAll.pop()!();
    expect(await generation(id)).toMatchObject({ status: "failed", apiType: "responses" });

    const { client } = openai(acct.apiKey);
    const stream = client.responses.stream({
      model: "sandbox/chat-error-after-3",
      input: "one two three four",
    });
    let failedEvent: OpenAI.Responses.ResponseFailedEvent | undefined;
    stream.on("response.failed", (e) => {
      failedEvent = e;
    });
    const final = await stream.finalResponse();
    expect(final.status).toBe("failed");
    expect(final.error).toMatchObject({ code: "server_error" });
    expect(failedEvent?.response.error?.message).toContain("mid-stream");
  });

  it("fails over before the first byte; the attempt log shows both attempts", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const res = await client.responses.create({ model: "sandbox/chat-failover", input: "hello" });
    expect(res.status).toBe("completed");
    await settled();
    const attempts = (await generation(res.id))!.attempts as Array<{ outcome: string }>;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.outcome).not.toBe("ok");
    expect(attempts[1]!.outcome).toBe("ok");
  });

  it("a length stop is an incomplete response (JSON and stream), billed for what was produced", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = { model: "sandbox/chat-echo", input: "many words to echo back here", max_output_tokens: 3 };
    const { client, settled } = openai(acct.apiKey);
    const json = await client.responses.create(body);
    expect(json.status).toBe("incomplete");
    expect(json.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(json.completed_at).toBeNull();
    expect(json.usage!.output_tokens).toBe(3);
    const { res } = await send(acct.apiKey, { ...body, stream: true });
    const events = (await eventsOf(res)).slice(0, -1) as Array<Event & { item?: { status: string } }>;
    expect(events.at(-1)!.type).toBe("response.incomplete");
    expect(events.find((e) => e.type === "response.output_item.done")!.item!.status).toBe("incomplete");
    await settled();
    expect((await generation(json.id))!.costMicros).toBeGreaterThan(0);
  });

  it("a client that leaves mid-stream: the generation is cancelled and billed for what was produced", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await send(acct.apiKey, {
      model: "sandbox/chat-echo",
      input: "word ".repeat(200),
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
    expect(gen).toMatchObject({ status: "cancelled", apiType: "responses" });
    expect(gen!.costMicros).toBeGreaterThan(0);
  });

  it("takes null where the openai client's types allow it (store, stream) and every includable it knows", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/responses", {
      key: acct.apiKey,
      method: "POST",
      body: {
        model: "sandbox/chat-echo",
        input: "hi",
        store: null,
        stream: null,
        include: [
          "message.output_text.logprobs",
          "web_search_call.results",
          "web_search_call.action.sources",
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("completed");
  });

  it("refuses what a stateless gateway cannot do with a 400, recording nothing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ store: true }, "store"],
      [{ previous_response_id: "resp_1" }, "previous_response_id"],
      [{ conversation: "conv_1" }, "conversation"],
      [{ background: true }, "background"],
      [{ tools: [{ type: "web_search" }] }, "tools[0]"],
      [{ input: [{ type: "item_reference", id: "msg_1" }] }, "item_reference"],
      [{ input: undefined }, "input"],
      [{ text: { format: { type: "json_schema" } } }, "text.format"],
      [{ tool_choice: { type: "file_search" } }, "tool_choice"],
      [{ reasoning: { effort: "huge" } }, "reasoning.effort"],
    ];
    for (const [extra, named] of cases) {
      const res = await call("/responses", {
        key: acct.apiKey,
        method: "POST",
        body: { model: "sandbox/chat-echo", input: "hi", ...extra },
      });
      expect(res.status, named).toBe(400);
      expect((await errorOf(res)).message, named).toContain(named);
    }
    const records = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.keyHash, acct.apiKeyHash));
    expect(records).toEqual([]);
  });
});

describe("errors before the first byte and the document", () => {
  it("503 from every provider, and 402 without credits, answer the error envelope; the SDK streams a failed response", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const down = await call("/responses", {
      key: acct.apiKey,
      method: "POST",
      body: { model: "sandbox/chat-503", input: "hi" },
    });
    expect(down.status).toBe(503);
    await errorOf(down);
    const broke = await createAccount();
    const poor = await call("/responses", {
      key: broke.apiKey,
      method: "POST",
      body: { model: "sandbox/chat-echo", input: "hi", stream: true },
    });
    expect(poor.status).toBe(402);
    await errorOf(poor);

    const t = tracked();
    const stream = (await sdkFor(acct.apiKey, undefined, t.fetch).responses.send({
      responsesRequest: { model: "sandbox/chat-error-after-3", input: "one two three four", stream: true },
    })) as unknown as AsyncIterable<{ type: string; response?: { status: string; errorType?: string } }>;
    let last: { type: string; response?: { status: string; errorType?: string } } | undefined;
    for await (const e of stream) last = e;
    expect(last).toMatchObject({
      type: "response.failed",
      response: { status: "failed", errorType: "server" },
    });
  });

  it("is createResponses in the document, with the very request schema of POST /presets/{slug}/responses", async () => {
    type Op = { operationId?: string; requestBody: { content: { "application/json": { schema: unknown } } } };
    const doc = (await (await call("/openapi.json")).json()) as { paths: Record<string, { post: Op }> };
    const own = doc.paths["/api/v1/responses"]!.post;
    const preset = doc.paths["/api/v1/presets/{slug}/responses"]!.post;
    expect(own.operationId).toBe("createResponses");
    expect(own.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/ResponsesRequest",
    });
    expect(preset.requestBody.content["application/json"].schema).toEqual(
      own.requestBody.content["application/json"].schema,
    );
  });
});

describe("presets on POST /responses", () => {
  // OpenAI's endpoints serve the Responses API: a responses client's request goes to /v1/responses, whose
  // response objects echo the request's settings (passed through to the client).
  const sse = (sent: unknown) => {
    const { temperature, instructions } = sent as { temperature: number; instructions: string };
    return responsesText
      .replaceAll('"temperature":1.0', `"temperature":${temperature}`)
      .replaceAll('"instructions":null', `"instructions":${JSON.stringify(instructions)}`);
  };

  it("a preset made with POST /presets/{slug}/responses: its model, temperature and instructions reach the provider, by `preset` and by @preset/slug; the request wins", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const slug = `resp-${crypto.randomUUID().slice(0, 8)}`;
    const made = await call(`/presets/${slug}/responses`, {
      key: acct.managementKey,
      method: "POST",
      body: { model: "openai/gpt-4.1-mini", temperature: 0.3, instructions: "Answer like a pirate." },
    });
    expect(made.status).toBe(200);
    const upstream = mockUpstream({
      "POST api.openai.com/v1/responses": (req) =>
        new Response(sse(req.body), { headers: { "Content-Type": "text/event-stream" } }),
    });
    try {
      const { client, settled } = openai(acct.apiKey);
      const byField = await client.responses.create({ input: "Ahoy", preset: slug } as never);
      const byModel = await client.responses.create({ model: `@preset/${slug}`, input: "Ahoy" });
      const overridden = await client.responses.create({
        model: `@preset/${slug}`,
        input: "Ahoy",
        temperature: 0.9,
        instructions: "Plainly.",
      });
      await settled();
      for (const r of [byField, byModel]) {
        expect(r.model).toBe("openai/gpt-4.1-mini");
        expect(r.output_text).toBe("Le caf\u00e9 est ouvert.");
        expect(r.temperature).toBe(0.3);
        expect(r.instructions).toBe("Answer like a pirate.");
      }
      const bodies = upstream.requests.map(
        (r) =>
          r.body as {
            model: string;
            temperature: number;
            instructions: string;
            input: Array<{ role: string; content: unknown }>;
          },
      );
      expect(bodies).toHaveLength(3);
      for (const b of bodies.slice(0, 2)) {
        expect(b.model).toBe("gpt-4.1-mini");
        expect(b.temperature).toBe(0.3);
        expect(b.instructions).toBe("Answer like a pirate.");
        expect(b.input).toEqual([{ type: "message", role: "user", content: "Ahoy" }]);
      }
      expect(bodies[2]!.temperature).toBe(0.9);
      expect(bodies[2]!.instructions).toBe("Plainly.");
      expect(overridden.temperature).toBe(0.9);
      expect((await generation(byField.id))!.apiType).toBe("responses");
    } finally {
      upstream.restore();
    }
  });

  it("a preset made from a chat body: its system prompt and chat-only max_tokens reach the provider", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `chat-${crypto.randomUUID().slice(0, 8)}`;
    const made = await call(`/presets/${slug}/chat/completions`, {
      key: acct.managementKey,
      method: "POST",
      body: { model: "sandbox/chat-echo", max_tokens: 4, messages: [{ role: "system", content: "Sys" }] },
    });
    expect(made.status).toBe(200);
    const { res } = await send(acct.apiKey, {
      preset: slug,
      input: "Hello there gateway",
      stream: true,
      debug: { echo_upstream_body: true },
    });
    const events = (await eventsOf(res)).slice(0, -1) as Event[];
    const echo = (events[0] as Event & { debug: { echo_upstream_body: Record<string, unknown> } }).debug
      .echo_upstream_body;
    expect(echo).toMatchObject({ model: "chat-echo", max_tokens: 4 });
    expect((echo.messages as unknown[])[0]).toEqual({ role: "system", content: "Sys" });
    expect(events.at(-1)!.type).toBe("response.incomplete");
  });

  it("naming two presets is a 400; an unknown preset a 404", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const two = await call("/responses", {
      key: acct.apiKey,
      method: "POST",
      body: { model: "@preset/a", preset: "b", input: "hi" },
    });
    expect(two.status).toBe(400);
    await errorOf(two);
    const unknown = await call("/responses", {
      key: acct.apiKey,
      method: "POST",
      body: { preset: "does-not-exist", input: "hi" },
    });
    expect(unknown.status).toBe(404);
  });
});
