// Same-format passthrough: a responses client served by an OpenAI Responses upstream (POST /v1/responses) gets
// the upstream's own events (only the response id, the model and the gateway's cost rewritten), billed and
// recorded as on the re-encoding path, failed over, cancelled and failed as there. Other clients of the same
// endpoint keep /chat/completions.
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { openAiResponsesBody, wantsResponsesApi } from "../src/providers/openai-compatible/responses";
import failedStream from "./fixtures/openai/responses-failed.sse?raw";
import reasoningTools from "./fixtures/openai/responses-reasoning-tools.sse?raw";
import textStream from "./fixtures/openai/responses-text.sse?raw";
import { createAccount } from "./helpers/accounts";
import { gatewayHarness, generation, sse } from "./helpers/anthropic-gateway";
import { BASE } from "./helpers/http";
import type { StreamedCall } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";

const RESPONSES = "POST api.openai.com/v1/responses";
const CHAT = "POST api.openai.com/v1/chat/completions";

const { upstream, send } = gatewayHarness();

const post = (key: string, body: unknown) =>
  send(
    new Request(`${BASE}/responses`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
  );

/** A fetch for SDK clients through the harness (platform keys), remembering each call to await its records. */
function clientFetch() {
  const calls: StreamedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const call = await send(new Request(input, init));
    calls.push(call);
    return call.res;
  };
  return { fetch, calls, settled: () => Promise.all(calls.map((c) => c.settled())) };
}

function openai(apiKey: string) {
  const f = clientFetch();
  return { client: new OpenAI({ apiKey, baseURL: BASE, fetch: f.fetch, maxRetries: 0 }), ...f };
}

/** responses-text.sse on gpt-4.1-mini: 500 plain input x 0.4 + 500 cached x 0.1 + 10 output x 1.6 micro-USD. */
const TEXT_MICROS = 200 + 50 + 16;
/** responses-reasoning-tools.sse on gpt-5: 200 input x 1.25 + 300 output x 10 micro-USD. */
const TOOLS_MICROS = 250 + 3000;

type Json = Record<string, unknown>;

/**
 * What the client must receive for an upstream stream, as framesOf splits it: every frame as sent, but the
 * response objects' id, model and (on the last) the usage's cost.
 */
/** What @openrouter/sdk requires of a response, null when OpenAI leaves it out. */
const withRequiredNulls = (response: Json): Json => ({
  ...Object.fromEntries(
    [
      "completed_at",
      "error",
      "incomplete_details",
      "instructions",
      "metadata",
      "temperature",
      "top_p",
      "frequency_penalty",
      "presence_penalty",
    ].map((field) => [field, null]),
  ),
  ...response,
});

function rewritten(upstreamText: string, id: string, model: string, micros: number) {
  return upstreamText
    .split("\n\n")
    .filter(Boolean)
    .map((f) => {
      const [head, line] = f.split("\n") as [string, string];
      const payload = JSON.parse(line.slice(6));
      if (!payload.response) return `${f}\n\n`;
      payload.response = { ...withRequiredNulls(payload.response), id, model };
      if (payload.response.usage) {
        payload.response.usage = {
          ...payload.response.usage,
          cost: micros / 1e6,
          is_byok: false,
          cost_details: {
            upstream_inference_cost: null,
            upstream_inference_input_cost: expect.any(Number),
            upstream_inference_output_cost: expect.any(Number),
          },
        };
      }
      return { head, payload };
    });
}

/** Splits a client stream into frames: strings kept for verbatim ones, parsed for rewritten ones. */
function framesOf(text: string) {
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  return text
    .slice(0, -"data: [DONE]\n\n".length)
    .split("\n\n")
    .filter(Boolean)
    .map((f) => {
      const [head, line] = f.split("\n") as [string, string];
      const payload = JSON.parse(line.slice(6));
      return payload.response ? { head, payload } : `${f}\n\n`;
    });
}

const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

describe("an OpenAI Responses upstream's stream passed through to a responses client", () => {
  it("byte for byte but id, model and cost; sent to /v1/responses; the record and the ledger charge match its usage", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [RESPONSES]: sse(textStream) });
    const { res, settled } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      instructions: "Be brief.",
      input: "Is the café open?",
      temperature: 0.2,
      stream: true,
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-generation-id")!;
    const text = await res.text();
    // Escapes as the upstream wrote them: the frames were not decoded and re-encoded.
    expect(text).toContain('"delta":" caf\\u00e9"');
    const frames = framesOf(text);
    expect(frames).toEqual(rewritten(textStream, id, "openai/gpt-4.1-mini", TEXT_MICROS));
    const completed = frames.at(-1) as { payload: { response: Json } };
    expect(completed.payload.response).toMatchObject({
      id,
      model: "openai/gpt-4.1-mini",
      status: "completed",
      output: [{ type: "message", content: [{ text: "Le caf\u00e9 est ouvert." }] }],
      usage: {
        input_tokens: 1000,
        input_tokens_details: { cached_tokens: 500 },
        output_tokens: 10,
        total_tokens: 1010,
        cost: TEXT_MICROS / 1e6,
        is_byok: false,
        cost_details: { upstream_inference_cost: null },
      },
    });
    // Everything but the response object is the upstream's, lifecycle events included.
    const created = JSON.parse(textStream.split("\n")[1]!.slice(6));
    expect((frames[0] as { payload: Json }).payload).toEqual({
      ...created,
      response: { ...withRequiredNulls(created.response), id, model: "openai/gpt-4.1-mini" },
    });

    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]!.url).toBe("https://api.openai.com/v1/responses");
    expect(mock.requests[0]!.headers.authorization).toBe("Bearer sk-openai-platform");
    expect(mock.requests[0]!.body).toMatchObject({
      model: "gpt-4.1-mini",
      instructions: "Be brief.",
      input: [{ type: "message", role: "user", content: "Is the café open?" }],
      temperature: 0.2,
      stream: true,
      store: false,
    });
    await settled();
    expect(await generation(id)).toMatchObject({
      status: "completed",
      apiType: "responses",
      provider: "openai",
      model: "openai/gpt-4.1-mini",
      costMicros: TEXT_MICROS,
      usage: { prompt_tokens: 1000, completion_tokens: 10, cached_tokens: 500 },
    });
    const credits = await sdkFor(acct.managementKey).credits.getCredits();
    expect(credits.data.totalUsage).toBeCloseTo(TEXT_MICROS / 1e6, 9);
  });

  it("responses.stream and responses.create: reasoning summary and a function call; the replay reaches OpenAI with its encrypted reasoning", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [RESPONSES]: sse(reasoningTools) });
    const { client, settled } = openai(acct.apiKey);
    const params = {
      model: "openai/gpt-5",
      input: "Weather in Paris?",
      tools: [weather],
      reasoning: { effort: "medium" as const, summary: "auto" as const },
    };
    let summary = "";
    let args = "";
    const stream = client.responses.stream(params);
    stream.on("response.reasoning_summary_text.delta", (e) => {
      summary += e.delta;
    });
    stream.on("response.function_call_arguments.delta", (e) => {
      args += e.delta;
    });
    const streamed = await stream.finalResponse();
    expect(summary).toBe("**Checking the weather**\n\nThe user asks for Paris; I should call get_weather.");
    expect(args).toBe('{"city":"Paris"}');
    const { data: created, response } = await client.responses.create(params).withResponse();
    for (const r of [streamed, created]) {
      expect(r.model).toBe("openai/gpt-5");
      expect(r.id).toMatch(/^gen-/);
      expect(r.output).toMatchObject([
        {
          id: "rs_68c7a2b4d5e68190b2c3d4e5f6a7b8c9",
          type: "reasoning",
          encrypted_content: "gAAAAABox6K1Zk3vQ9mXb2Lr8Tn4Wc7Yp0Aa-encrypted-reasoning-of-the-first-turn==",
          summary: [{ type: "summary_text", text: summary }],
        },
        {
          id: "fc_68c7a2b6e7f88190c3d4e5f6a7b8c9d0",
          type: "function_call",
          status: "completed",
          arguments: '{"city":"Paris"}',
          call_id: "call_Qm8sT2vX4yZ6aB1cD3eF5gH7",
          name: "get_weather",
        },
      ]);
    }
    expect(created.id).toBe(response.headers.get("x-generation-id"));
    expect(created.usage).toMatchObject({
      output_tokens: 300,
      output_tokens_details: { reasoning_tokens: 256 },
      cost: TOOLS_MICROS / 1e6,
      is_byok: false,
    });
    expect(mock.requests[0]!.body).toMatchObject({
      model: "gpt-5",
      reasoning: { effort: "medium", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      tools: [{ type: "function", name: "get_weather", strict: false, parameters: weather.parameters }],
    });

    // The next turn replays the output as it came and answers the call.
    await client.responses.create({
      ...params,
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...(created.output as OpenAI.Responses.ResponseInputItem[]),
        { type: "function_call_output", call_id: "call_Qm8sT2vX4yZ6aB1cD3eF5gH7", output: "18C, sunny" },
      ],
    });
    expect((mock.requests[2]!.body as { input: unknown }).input).toEqual([
      { type: "message", role: "user", content: "Weather in Paris?" },
      {
        type: "reasoning",
        id: "rs_68c7a2b4d5e68190b2c3d4e5f6a7b8c9",
        summary: [{ type: "summary_text", text: summary }],
        encrypted_content: "gAAAAABox6K1Zk3vQ9mXb2Lr8Tn4Wc7Yp0Aa-encrypted-reasoning-of-the-first-turn==",
      },
      {
        type: "function_call",
        call_id: "call_Qm8sT2vX4yZ6aB1cD3eF5gH7",
        name: "get_weather",
        arguments: '{"city":"Paris"}',
      },
      { type: "function_call_output", call_id: "call_Qm8sT2vX4yZ6aB1cD3eF5gH7", output: "18C, sunny" },
    ]);
    await settled();
    const gen = await generation(created.id);
    expect(gen).toMatchObject({ status: "completed", apiType: "responses", costMicros: TOOLS_MICROS });
  });

  it("JSON: the response the upstream completed, with the gateway's id, model, provider and cost", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [RESPONSES]: sse(textStream) });
    const { res } = await post(acct.apiKey, { model: "openai/gpt-4.1-mini", input: "Is the café open?" });
    const body = (await res.json()) as Json;
    const lines = textStream.split("\n\n").filter(Boolean);
    const completed = JSON.parse(lines.at(-1)!.split("\n")[1]!.slice(6)).response;
    expect(body).toEqual({
      ...completed,
      id: res.headers.get("x-generation-id"),
      model: "openai/gpt-4.1-mini",
      provider: "openai",
      frequency_penalty: null,
      presence_penalty: null,
      usage: {
        ...completed.usage,
        cost: TEXT_MICROS / 1e6,
        is_byok: false,
        cost_details: {
          upstream_inference_cost: null,
          upstream_inference_input_cost: 250 / 1e6,
          upstream_inference_output_cost: 16 / 1e6,
        },
      },
    });
  });

  it("@openrouter/sdk responses.send parses the passed-through answer", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [RESPONSES]: sse(reasoningTools) });
    const f = clientFetch();
    const result = (await sdkFor(acct.apiKey, undefined, f.fetch).responses.send({
      responsesRequest: { model: "openai/gpt-5", input: "Weather?", tools: [weather] },
    })) as unknown as {
      id: string;
      model: string;
      status: string;
      output: Array<{ type: string; callId?: string }>;
      usage: { cost: number };
    };
    expect(result.status).toBe("completed");
    expect(result.model).toBe("openai/gpt-5");
    expect(result.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    expect(result.output[1]).toMatchObject({ callId: "call_Qm8sT2vX4yZ6aB1cD3eF5gH7" });
    expect(result.usage.cost).toBeCloseTo(TOOLS_MICROS / 1e6, 9);
    await f.settled();
  });

  it("@openrouter/sdk reads every passed-through event of a stream, a failed one's too", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const types = async (stream: string) => {
      upstream({ [RESPONSES]: sse(stream) });
      const f = clientFetch();
      const events = (await sdkFor(acct.apiKey, undefined, f.fetch).responses.send({
        responsesRequest: { model: "openai/gpt-5", input: "Weather?", tools: [weather], stream: true },
      })) as unknown as AsyncIterable<{ type: string }>;
      const seen: string[] = [];
      for await (const event of events) seen.push(event.type);
      await f.settled();
      return seen;
    };
    // An event the SDK's reader refuses comes out as UNKNOWN: every one must be read as its own type.
    const tools = await types(reasoningTools);
    expect(tools).not.toContain("UNKNOWN");
    expect(tools).toEqual(
      expect.arrayContaining([
        "response.created",
        "response.in_progress",
        "response.function_call_arguments.done",
        "response.completed",
      ]),
    );
    const failed = await types(failedStream);
    expect(failed).not.toContain("UNKNOWN");
    expect(failed.at(-1)).toBe("response.failed");
  });

  it("fails over before the first byte: the failed upstream's response.created never reaches the client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const head = textStream.split("\n\n").slice(0, 3).join("\n\n");
    let calls = 0;
    const mock = upstream({
      [RESPONSES]: () =>
        sse(
          calls++ === 0
            ? `${head}\n\nevent: error\ndata: {"type":"error","sequence_number":3,"code":"rate_limit_exceeded","message":"Slow down","param":null}\n\n`
            : textStream,
        )(),
    });
    const { res, settled } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      models: ["openai/gpt-5-mini"],
      input: "hello",
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const frames = framesOf(await res.text());
    expect(frames.filter((f) => typeof f !== "string" && f.head === "event: response.created")).toHaveLength(
      1,
    );
    expect((frames[0] as { payload: { response: Json } }).payload.response.model).toBe("openai/gpt-5-mini");
    await settled();
    expect(mock.requests.map((r) => (r.body as { model: string }).model)).toEqual([
      "gpt-4.1-mini",
      "gpt-5-mini",
    ]);
    const gen = await generation(id);
    expect(gen.status).toBe("completed");
    const attempts = gen.attempts as Array<{ model: string; outcome: string }>;
    expect(attempts.map((a) => a.model)).toEqual(["openai/gpt-4.1-mini", "openai/gpt-5-mini"]);
    expect(attempts[0]!.outcome).not.toBe("ok");
    expect(attempts[1]!.outcome).toBe("ok");
  });

  it("a client that leaves mid-stream: the upstream body is cancelled, the generation settled as cancelled", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const head = textStream.slice(0, textStream.indexOf("event: response.output_text.done"));
    let upstreamCancelled = false;
    upstream({
      [RESPONSES]: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(head));
            },
            cancel() {
              upstreamCancelled = true;
            },
          }),
          { headers: { "Content-Type": "text/event-stream" } },
        ),
    });
    const { res, settled } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "hi",
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    let seen = "";
    while (!seen.includes(" est ouvert.")) {
      const { done, value } = await reader.read();
      expect(done).toBe(false);
      seen += new TextDecoder().decode(value);
    }
    await reader.cancel();
    await settled();
    expect(upstreamCancelled).toBe(true);
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled", apiType: "responses", error: "client disconnected" });
    expect(gen.usage).toMatchObject({ estimated: 1 });
    expect(gen.costMicros).toBeGreaterThan(0);
  });

  it("response.failed mid-stream: the gateway's response.failed, numbered after the upstream's events; the openai client sees a failed response", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [RESPONSES]: sse(failedStream) });
    const { client, calls, settled } = openai(acct.apiKey);
    let text = "";
    const seqs: number[] = [];
    const stream = client.responses.stream({ model: "openai/gpt-4.1-mini", input: "A story" });
    stream.on("event", (e) => {
      seqs.push(e.sequence_number);
    });
    stream.on("response.output_text.delta", (e) => {
      text += e.delta;
    });
    const final = await stream.finalResponse();
    expect(text).toBe("Once upon a time");
    expect(final.status).toBe("failed");
    expect(final.error).toMatchObject({
      code: "server_error",
      message: expect.stringContaining("invalid content"),
    });
    expect(final.id).toBe(calls[0]!.res.headers.get("x-generation-id"));
    expect(seqs).toEqual([0, 1, 2, 3, 4, 5, 6]);
    await settled();
    const gen = await generation(final.id);
    expect(gen).toMatchObject({ status: "failed", apiType: "responses" });
    expect(gen.error).toMatch(/^502: /);
  });

  it("debug.echo_upstream_body: response.debug first, the upstream's events after it, numbers still rising by one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [RESPONSES]: sse(textStream) });
    const { res } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "hi",
      stream: true,
      debug: { echo_upstream_body: true },
    });
    const text = await res.text();
    const events = text
      .split("\n\n")
      .filter((f) => f.includes("data: {"))
      .map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as Json);
    expect(events[0]).toMatchObject({
      type: "response.debug",
      sequence_number: 0,
      debug: { echo_upstream_body: { model: "gpt-4.1-mini", stream: true, store: false } },
    });
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.slice(1).map((e) => e.type)).toEqual(
      textStream
        .split("\n\n")
        .filter(Boolean)
        .map((f) => f.split("\n")[0]!.slice(7)),
    );
  });

  it("a chat completions client of the same endpoint still gets /chat/completions", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const chunks =
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\ndata: [DONE]\n\n';
    const mock = upstream({
      [CHAT]: () => new Response(chunks, { headers: { "Content-Type": "text/event-stream" } }),
      [RESPONSES]: sse(textStream),
    });
    const { client, settled } = openai(acct.apiKey);
    const completion = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(completion.choices[0]!.message.content).toBe("Hi");
    // A responses request using a field the Responses API has no place for goes there too (re-encoded).
    // (`frequency_penalty`, which OpenAI's chat endpoint honours; one it does not list, `top_k`, is dropped
    // rather than sent, so it keeps nothing from /responses.)
    const response = await client.responses.create({
      model: "openai/gpt-4.1-mini",
      input: "hi",
      frequency_penalty: 0.5,
    } as never);
    expect(response.output_text).toBe("Hi");
    expect(mock.requests.map((r) => new URL(r.url).pathname)).toEqual([
      "/v1/chat/completions",
      "/v1/chat/completions",
    ]);
    await settled();
  });

  it("a responses client of a compatible host (Groq): /chat/completions, its developer input sent as system", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const chunks =
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\ndata: [DONE]\n\n';
    const mock = upstream({
      "POST api.groq.com/openai/v1/chat/completions": () =>
        new Response(chunks, { headers: { "Content-Type": "text/event-stream" } }),
    });
    const { client, settled } = openai(acct.apiKey);
    const response = await client.responses.create({
      model: "meta-llama/llama-3.3-70b-instruct",
      input: [
        { role: "developer", content: "Be terse." },
        { role: "user", content: "hi" },
      ],
      provider: { only: ["groq"] },
    } as never);
    expect(response.output_text).toBe("Hi");
    expect((mock.requests[0]!.body as { messages: unknown }).messages).toEqual([
      { role: "system", content: "Be terse." },
      { role: "user", content: "hi" },
    ]);
    await settled();
  });

  it("response.incomplete (max_output_tokens): passed through as sent, billed; JSON answers the incomplete response", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const frames = textStream.split("\n\n").filter(Boolean);
    const last = JSON.parse(frames.at(-1)!.split("\n")[1]!.slice(6));
    last.type = "response.incomplete";
    last.response = {
      ...last.response,
      status: "incomplete",
      completed_at: null,
      incomplete_details: { reason: "max_output_tokens" },
    };
    const incomplete = `${[...frames.slice(0, -1), `event: response.incomplete\ndata: ${JSON.stringify(last)}`].join("\n\n")}\n\n`;
    upstream({ [RESPONSES]: sse(incomplete) });
    const { client, settled } = openai(acct.apiKey);
    const streamed = await client.responses
      .stream({ model: "openai/gpt-4.1-mini", input: "hi", max_output_tokens: 10 })
      .finalResponse();
    const created = await client.responses.create({ model: "openai/gpt-4.1-mini", input: "hi" });
    for (const r of [streamed, created]) {
      expect(r.status).toBe("incomplete");
      expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
      expect(r.output_text).toBe("Le caf\u00e9 est ouvert.");
      expect(r.usage).toMatchObject({ output_tokens: 10, cost: TEXT_MICROS / 1e6 });
    }
    await settled();
    expect(await generation(created.id)).toMatchObject({ status: "completed", costMicros: TEXT_MICROS });
  });

  it("a stream cut before its terminal event (no finish, no usage) fails: response.failed, billed for the output seen, estimated", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const cut = textStream.slice(0, textStream.indexOf("event: response.completed"));
    upstream({ [RESPONSES]: sse(cut) });
    const { res, settled } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "hi",
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const text = await res.text();
    const frames = framesOf(text);
    // The upstream's events as they came (with the rewrites), then the gateway's failure event.
    expect(frames.slice(0, -1)).toEqual(rewritten(cut, id, "openai/gpt-4.1-mini", 0));
    const closing = frames.at(-1) as { head: string; payload: { sequence_number: number; response: Json } };
    expect(closing.head).toBe("event: response.failed");
    expect(closing.payload.sequence_number).toBe(10);
    expect(closing.payload.response).toMatchObject({
      id,
      status: "failed",
      error: { message: expect.stringContaining("(no finish reason)") },
      usage: { cost: expect.any(Number) },
    });
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "failed", apiType: "responses", usage: { estimated: 1 } });
    expect(gen!.costMicros).toBeGreaterThan(0);
    expect(gen!.costMicros).toBe(Math.round((closing.payload.response.usage as { cost: number }).cost * 1e6));
  });

  it("an `error` event mid-stream (rate limited): response.failed with rate_limit_exceeded; the record says 429", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const head = textStream.slice(0, textStream.indexOf("event: response.output_text.done"));
    upstream({
      [RESPONSES]: sse(
        `${head}event: error\ndata: {"type":"error","sequence_number":7,"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-4.1-mini","param":null}\n\n`,
      ),
    });
    const { res, settled } = await post(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "hi",
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const frames = framesOf(await res.text());
    // The upstream's events up to the error as sent, then the gateway's failure in place of its error event.
    expect(frames.slice(0, 7).map((f) => (typeof f === "string" ? f : f.head))).toEqual(
      head
        .split("\n\n")
        .filter(Boolean)
        .map((f, i) => (i < 2 ? f.split("\n")[0] : `${f}\n\n`)),
    );
    const failed = frames.at(-1) as { head: string; payload: { sequence_number: number; response: Json } };
    expect(failed.head).toBe("event: response.failed");
    expect(failed.payload.sequence_number).toBe(7);
    expect(failed.payload.response).toMatchObject({
      id,
      status: "failed",
      error: { code: "rate_limit_exceeded", message: expect.stringContaining("Rate limit reached") },
      error_type: "rate_limit_exceeded",
      output: [{ type: "message", status: "incomplete", content: [{ text: "Le caf\u00e9 est ouvert." }] }],
    });
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "failed", apiType: "responses" });
    expect(gen.error).toMatch(/^429: /);
  });
});

describe("the Responses body built from the chat normal form", () => {
  const base = { messages: [{ role: "user", content: "hi" }], clientWire: "openai-responses" as const };

  it("goes to /responses only for a responses client, and only when nothing would be lost there", () => {
    expect(wantsResponsesApi(base)).toBe(true);
    expect(wantsResponsesApi({ ...base, clientWire: undefined })).toBe(false);
    expect(wantsResponsesApi({ ...base, clientWire: "anthropic-messages" })).toBe(false);
    expect(wantsResponsesApi({ ...base, stop: ["\n"] })).toBe(false);
    expect(wantsResponsesApi({ ...base, seed: 1 })).toBe(false);
    expect(wantsResponsesApi({ ...base, presencePenalty: 0.5 })).toBe(false);
    expect(wantsResponsesApi({ ...base, logprobs: false })).toBe(true);
    expect(
      wantsResponsesApi({
        ...base,
        messages: [
          { role: "user", content: [{ type: "input_audio", input_audio: { data: "AA", format: "wav" } }] },
        ],
      }),
    ).toBe(false);
  });

  it("maps messages, parts, tools, tool choice, structured output, reasoning; passthrough options cannot turn streaming on or storing on", () => {
    const body = openAiResponsesBody(
      {
        messages: [
          { role: "system", content: "Sys" },
          {
            role: "user",
            content: [
              { type: "text", text: "Look" },
              { type: "image_url", image_url: { url: "https://x.test/a.png", detail: "low" } },
              { type: "file", file: { file_data: "data:application/pdf;base64,AA", filename: "a.pdf" } },
            ],
          },
          { role: "developer", content: "Dev" },
        ],
        maxTokens: 100,
        tools: [{ type: "function", function: { name: "f", parameters: { type: "object" }, strict: true } }],
        toolChoice: { type: "function", function: { name: "f" } },
        responseFormat: {
          type: "json_schema",
          json_schema: { name: "out", schema: { type: "object" }, strict: true },
        },
        reasoning: { effort: "high" },
        passthrough: { service_tier: "flex", stream: false, store: true },
      },
      "gpt-5",
    );
    expect(body).toEqual({
      model: "gpt-5",
      instructions: "Sys",
      input: [
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "Look" },
            { type: "input_image", image_url: "https://x.test/a.png", detail: "low" },
            { type: "input_file", file_data: "data:application/pdf;base64,AA", filename: "a.pdf" },
          ],
        },
        { type: "message", role: "developer", content: "Dev" },
      ],
      max_output_tokens: 100,
      tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
      reasoning: { effort: "high" },
      include: ["reasoning.encrypted_content"],
      service_tier: "flex",
      stream: true,
      store: false,
    });
  });

  it("reasoning.exclude: reasoning runs, but neither summaries nor encrypted content are asked for", () => {
    const body = openAiResponsesBody(
      { ...base, reasoning: { effort: "low", summary: "auto", exclude: true } },
      "gpt-5",
    );
    expect(body.reasoning).toEqual({ effort: "low" });
    expect(body).not.toHaveProperty("include");
  });

  it("replays an assistant turn's refusal as its text (an input message has no refusal part)", () => {
    const body = openAiResponsesBody(
      {
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: null, refusal: "I can't help with that." },
          { role: "user", content: "why?" },
        ],
      },
      "gpt-5",
    );
    expect(body.input).toEqual([
      { type: "message", role: "user", content: "q" },
      { type: "message", role: "assistant", content: "I can't help with that." },
      { type: "message", role: "user", content: "why?" },
    ]);
  });

  it("replays only OpenAI's own encrypted reasoning, with its item id", () => {
    const body = openAiResponsesBody(
      {
        messages: [
          { role: "user", content: "q" },
          {
            role: "assistant",
            content: "a",
            reasoning_details: [
              {
                type: "reasoning.text",
                text: "signed",
                signature: "sig",
                format: "anthropic-claude-v1",
                index: 0,
              },
              { type: "reasoning.summary", summary: "S", id: "rs_1", index: 1 },
              { type: "reasoning.encrypted", data: "ENC", id: "rs_1", index: 1 },
              { type: "reasoning.summary", summary: "no content", id: "rs_2", index: 2 },
            ],
          },
        ],
      },
      "gpt-5",
    );
    expect(body.input).toEqual([
      { type: "message", role: "user", content: "q" },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "S" }],
        encrypted_content: "ENC",
      },
      { type: "message", role: "assistant", content: "a" },
    ]);
  });
});
