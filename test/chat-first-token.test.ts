// A streamed chat request whose first token is slow (a reasoning model thinking): the answer commits after
// FIRST_BYTE_GRACE_MS with 200 and keep-alives, fails over behind them, and reports a late failure as the
// format's error frame; a quick failure keeps its HTTP status. Through the openai and anthropic clients.
import type Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { KEEPALIVE } from "../src/inference/chat-stream";
import { FIRST_BYTE_GRACE_MS } from "../src/inference/early-stream";
import { createAccount } from "./helpers/accounts";
import { gatewayHarness, generation } from "./helpers/anthropic-gateway";
import { BASE, call } from "./helpers/http";
import type { StreamedCall } from "./helpers/media";

const { upstream, send, anthropic } = gatewayHarness();

/** Past the grace, so the answer commits before the first token. */
const SLOW_MS = FIRST_BYTE_GRACE_MS + 1_000;
const slow = { sandbox: { first_token_ms: SLOW_MS } };
const hi = [{ role: "user" as const, content: "Hello there gateway" }];
const OPENAI_CHAT = "POST api.openai.com/v1/chat/completions";

/** An OpenAI upstream that says nothing until past the grace, then answers 503 (chat and responses alike). */
const lateFailure = () => {
  const respond = async () => {
    await new Promise((r) => setTimeout(r, SLOW_MS));
    return new Response(JSON.stringify({ error: { message: "overloaded, try later" } }), {
      status: 503,
      headers: { "Content-Type": "application/json" },
    });
  };
  return { [OPENAI_CHAT]: respond, "POST api.openai.com/v1/responses": respond };
};

const post = (path: string, key: string, body: unknown) =>
  send(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
  );

function openai(apiKey: string) {
  const calls: StreamedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const made = await send(new Request(input, init));
    calls.push(made);
    return made.res;
  };
  const client = new OpenAI({ apiKey, baseURL: BASE, fetch, maxRetries: 0 });
  return { client, settled: () => Promise.all(calls.map((c) => c.settled())) };
}

async function usageMicros(apiKey: string): Promise<number> {
  const key = (await (await call("/key", { key: apiKey })).json()) as { data: { usage: number } };
  return Math.round(key.data.usage * 1_000_000);
}

/** The first bytes of a body, then the rest of it. */
async function firstAndRest(res: Response): Promise<{ first: string; rest: string }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const first = decoder.decode((await reader.read()).value);
  let rest = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += decoder.decode(r.value);
  return { first, rest };
}

describe("a streamed chat whose first token is slow", () => {
  it("commits after the grace: 200 headers and a keep-alive before the first token, then the whole answer", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const started = Date.now();
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-slow-first-token",
      messages: hi,
      stream: true,
      provider: { options: slow },
    });
    const headersAfter = Date.now() - started;
    expect(res.status).toBe(200);
    expect(headersAfter).toBeGreaterThanOrEqual(FIRST_BYTE_GRACE_MS - 50);
    expect(headersAfter).toBeLessThan(SLOW_MS);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-generation-id")).toMatch(/^gen-/);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    const { first, rest } = await firstAndRest(res);
    expect(first).toBe(KEEPALIVE);
    // The answer as sseAnswer writes it: the echo's chunks, the finish reason, the usage, [DONE].
    const data = rest.split("\n\n").filter((f) => f.startsWith("data: {"));
    const chunks = data.map((f) => JSON.parse(f.slice(6)) as OpenAI.ChatCompletionChunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toContain("Hello there gateway");
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.at(-1)!.usage).toBeTruthy();
    expect(rest.trimEnd().endsWith("data: [DONE]")).toBe(true);
    await settled();
    const gen = await generation(res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "completed", streamed: true });
    expect(gen.costMicros).toBeGreaterThan(0);
    expect(await usageMicros(acct.apiKey)).toBe(gen.costMicros);
  });

  it("the openai client's stream reads the committed answer as any other", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = openai(acct.apiKey);
    const { data: stream, response } = await client.chat.completions
      .create({
        model: "sandbox/chat-slow-first-token",
        messages: hi,
        stream: true,
        stream_options: { include_usage: true },
        provider: { options: slow },
      } as OpenAI.ChatCompletionCreateParamsStreaming)
      .withResponse();
    let content = "";
    let usage: (OpenAI.CompletionUsage & { cost?: number }) | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(content).toContain("Hello there gateway");
    expect(finish).toBe("stop");
    await settled();
    const gen = await generation(response.headers.get("x-generation-id")!);
    expect(usage?.cost).toBeCloseTo(gen.costMicros / 1_000_000, 9);
  });

  it("fails over behind the keep-alives: an attempt failing after the grace, then another model serves", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream(lateFailure());
    const { client, settled } = openai(acct.apiKey);
    const { data: stream, response } = await client.chat.completions
      .create({
        models: ["openai/gpt-4.1-mini", "sandbox/chat-echo"],
        messages: hi,
        stream: true,
      } as unknown as OpenAI.ChatCompletionCreateParamsStreaming)
      .withResponse();
    let content = "";
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? "";
    expect(content).toContain("Hello there gateway");
    await settled();
    const gen = await generation(response.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "completed", model: "sandbox/chat-echo", provider: "sandbox" });
    const attempts = gen.attempts as Array<{ provider: string; outcome: string; status?: number }>;
    expect(attempts[0]).toMatchObject({ provider: "openai", outcome: "http", status: 503 });
    expect(attempts.at(-1)).toMatchObject({ provider: "sandbox", outcome: "ok" });
    expect(await usageMicros(acct.apiKey)).toBe(gen.costMicros);
  });

  it("every attempt failing after the grace: the stream ends with the error chunk; failed, nothing charged", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream(lateFailure());
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      stream: true,
    });
    expect(res.status).toBe(200);
    const { first, rest } = await firstAndRest(res);
    expect(first).toBe(KEEPALIVE);
    const frames = rest.split("\n\n").filter((f) => f.startsWith("data: "));
    expect(frames).toHaveLength(1);
    const chunk = JSON.parse(frames[0]!.slice(6)) as {
      choices: Array<{ finish_reason: string }>;
      error: { code: number; message: string; metadata: { error_type: string } };
      usage: { cost: number };
    };
    expect(chunk.choices[0]!.finish_reason).toBe("error");
    expect(chunk.error).toMatchObject({ code: 503, metadata: { error_type: "provider_unavailable" } });
    expect(chunk.error.message).toContain("No provider is available");
    expect(chunk.usage.cost).toBe(0);
    await settled();
    const gen = await generation(res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "failed", costMicros: 0 });
    expect(gen.error).toMatch(/^503: /);
    expect(await usageMicros(acct.apiKey)).toBe(0);
  });

  it("the openai client reports the late failure as an error", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream(lateFailure());
    const { client, settled } = openai(acct.apiKey);
    const stream = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: hi,
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow(/No provider is available/);
    await settled();
  });

  it("a failure before the grace keeps its HTTP status", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    for (const [model, status] of [
      ["sandbox/chat-503", 503],
      ["sandbox/chat-429", 429],
    ] as const) {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model,
        messages: hi,
        stream: true,
      });
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toContain("application/json");
      await settled();
    }
  });

  it("a client that leaves during the wait: the attempt stops, cancelled, nothing charged", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const client = new AbortController();
    const { res, settled } = await send(
      new Request(`${BASE}/chat/completions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          model: "sandbox/chat-slow-first-token",
          messages: hi,
          stream: true,
          provider: { options: { sandbox: { first_token_ms: 20_000 } } },
        }),
        signal: client.signal,
      }),
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe(KEEPALIVE);
    const left = Date.now();
    // As the runtime does when the client disconnects (enable_request_signal), the body cancelled too.
    client.abort();
    await reader.cancel();
    await settled();
    // Recorded when the client left, not once the slow first token came.
    expect(Date.now() - left).toBeLessThan(5_000);
    const gen = await generation(res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "cancelled", costMicros: 0, error: "client disconnected" });
    expect(await usageMicros(acct.apiKey)).toBe(0);
  });
});

describe("responses and messages commit the same way", () => {
  it("responses: a keep-alive, then the response's events; a late failure is response.failed", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const ok = await post("/responses", acct.apiKey, {
      model: "sandbox/chat-slow-first-token",
      input: "Hello there gateway",
      stream: true,
      provider: { options: slow },
    });
    expect(ok.res.status).toBe(200);
    const served = await firstAndRest(ok.res);
    expect(served.first).toBe(KEEPALIVE);
    expect(served.rest.startsWith('data: {"type":"response.created"')).toBe(true);
    expect(served.rest).toContain('"type":"response.completed"');

    upstream(lateFailure());
    const { res, settled } = await post("/responses", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "Hello there gateway",
      stream: true,
    });
    expect(res.status).toBe(200);
    const failed = await firstAndRest(res);
    expect(failed.first).toBe(KEEPALIVE);
    const events = failed.rest
      .split("\n\n")
      .filter((f) => f.startsWith("data: {"))
      .map((f) => JSON.parse(f.slice(6)) as { type: string });
    expect(events.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.failed",
    ]);
    expect(events.at(-1)).toMatchObject({
      type: "response.failed",
      response: {
        status: "failed",
        error: { code: "server_error", message: expect.stringContaining("No provider is available") },
        error_type: "provider_unavailable",
      },
    });
    await settled();
    const gen = await generation(res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "failed", costMicros: 0, apiType: "responses" });
    await ok.settled();
  });

  it("messages: the anthropic client reads the committed answer, and a late failure as its error event", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = anthropic(acct.apiKey);
    const message = await client.messages
      .stream({
        model: "sandbox/chat-slow-first-token",
        max_tokens: 100,
        messages: hi,
        provider: { options: slow },
      } as Anthropic.MessageStreamParams)
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: "text" });
    expect((message.content[0] as Anthropic.TextBlock).text).toContain("Hello there gateway");

    upstream(lateFailure());
    const { res } = await post("/messages", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      max_tokens: 100,
      messages: hi,
      stream: true,
    });
    expect(res.status).toBe(200);
    const failed = await firstAndRest(res);
    expect(failed.first).toBe(KEEPALIVE);
    expect(failed.rest).toContain("event: message_start");
    const error = failed.rest.split("\n\n").find((f) => f.startsWith("event: error"))!;
    expect(JSON.parse(error.split("\n")[1]!.slice(6))).toMatchObject({
      type: "error",
      error: { type: "overloaded_error" },
    });
    await settled();
  });
});
