// GET /generation through @openrouter/sdk after embeddings, speech and chat requests: what the record says,
// and who may read it.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import anthropicText from "./fixtures/anthropic/text.sse?raw";
import geminiText from "./fixtures/google-ai-studio/chat-text.sse?raw";
import openaiText from "./fixtures/openai/chat-text.sse?raw";
import responsesText from "./fixtures/openai/responses-text.sse?raw";
import { createAccount, createKey } from "./helpers/accounts";
import { gatewayHarness, sse } from "./helpers/anthropic-gateway";
import { BASE, call, errorOf } from "./helpers/http";
import { post } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";

const hi = [{ role: "user" as const, content: "Hello there gateway" }];

/** A non-streamed inference call whose waitUntil work (the record write) is done when it returns. */
async function inferred(path: string, key: string, body: unknown) {
  const { res, settled } = await post(path, key, body);
  const raw = res.headers.get("content-type")?.startsWith("application/json")
    ? await res.json()
    : await res.arrayBuffer();
  await settled();
  expect(res.status).toBe(200);
  return { id: res.headers.get("x-generation-id")!, body: raw as Record<string, unknown> };
}

/** The ids of an account's generation records. */
async function recordIdsOf(accountId: string) {
  const g = tables.generations;
  const rows = await getDb(env.DB).select({ id: g.id }).from(g).where(eq(g.accountId, accountId));
  return rows.map((r) => r.id);
}

describe("GET /generation", () => {
  it("reads an embeddings generation that failed over: tokens, cost as reported, one response per attempt", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { id, body } = await inferred("/embeddings", acct.apiKey, {
      model: "sandbox/embed-failover",
      input: "where is the nearest station",
      user: "end-user-7",
    });
    const usage = body.usage as { prompt_tokens: number; cost: number };

    const { data } = await sdkFor(acct.apiKey).generations.getGeneration({ id });
    expect(data).toMatchObject({
      id,
      model: "sandbox/embed-failover",
      providerName: "sandbox",
      isByok: false,
      apiType: "embeddings",
      streamed: false,
      cancelled: false,
      finishReason: null,
      tokensPrompt: usage.prompt_tokens,
      tokensCompletion: 0,
      nativeTokensPrompt: usage.prompt_tokens,
      totalCost: usage.cost,
      usage: usage.cost,
      upstreamInferenceCost: null,
      dataRegion: "global",
      workspaceId: acct.workspaceId,
      externalUser: "end-user-7",
    });
    expect(usage.cost).toBeGreaterThan(0);
    expect(data.providerResponses!.map((r) => [r.endpointId, r.providerName, r.status])).toEqual([
      ["sandbox/embed-failover@sandbox-flaky", "sandbox-flaky", 503],
      ["sandbox/embed-failover@sandbox", "sandbox", 200],
    ]);
    for (const r of data.providerResponses!) expect(r.latency).toBeGreaterThanOrEqual(0);
    expect(data.latency).toBe(data.providerResponses!.reduce((ms, r) => ms + r.latency!, 0));
    expect(Date.parse(data.createdAt)).not.toBeNaN();
  });

  it("created_at is when the request came, not when the record was written", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const before = Date.now();
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content: "what time is it" }],
    });
    await res.json();
    const answered = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await settled();
    const { data } = await sdkFor(acct.apiKey).generations.getGeneration({
      id: res.headers.get("x-generation-id")!,
    });
    const created = Date.parse(data.createdAt);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThanOrEqual(answered);
  });

  it("reads a speech generation: streamed, tts, characters priced, no tokens", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const input = "say this out loud";
    const { id } = await inferred("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "alloy",
      input,
      response_format: "mp3",
    });
    const { data } = await sdkFor(acct.apiKey).generations.getGeneration({ id });
    expect(data).toMatchObject({
      model: "sandbox/tts-mini",
      providerName: "sandbox",
      apiType: "tts",
      streamed: true,
      cancelled: false,
      tokensPrompt: null,
      tokensCompletion: null,
      // sandbox/tts-mini costs 15 micro-dollars a character.
      totalCost: (15 * input.length) / 1e6,
    });
    expect(data.providerResponses).toHaveLength(1);
    expect(data.providerResponses![0]!.status).toBe(200);
  });

  it("reads a chat generation that failed over, through the regular key and the management key", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { id, body } = await inferred("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-failover",
      messages: hi,
    });
    const usage = body.usage as {
      prompt_tokens: number;
      completion_tokens: number;
      cost: number;
    };
    for (const key of [acct.apiKey, acct.managementKey]) {
      const { data } = await sdkFor(key).generations.getGeneration({ id });
      expect(data).toMatchObject({
        id,
        model: "sandbox/chat-failover",
        providerName: "sandbox",
        apiType: "completions",
        cancelled: false,
        tokensPrompt: usage.prompt_tokens,
        tokensCompletion: usage.completion_tokens,
        nativeTokensReasoning: 0,
        nativeTokensCached: 0,
        totalCost: usage.cost,
      });
      expect(data.providerResponses!.map((r) => r.status)).toEqual([503, 200]);
      // Each attempt names its model by its permanent slug, as GET /activity does.
      expect(data.providerResponses!.map((r) => r.modelPermaslug)).toEqual([
        "sandbox/chat-failover-20260101",
        "sandbox/chat-failover-20260101",
      ]);
    }
    expect(usage.cost).toBeGreaterThan(0);
  });

  it("a failed generation is recorded with finish_reason error and no cost", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-503",
      messages: hi,
    });
    expect(res.status).toBe(503);
    await settled();
    // The error answer names its generation, the account's only record.
    const rows = await recordIdsOf(acct.accountId);
    expect(rows).toEqual([res.headers.get("x-generation-id")]);
    const { data } = await sdkFor(acct.apiKey).generations.getGeneration({ id: rows[0]! });
    expect(data).toMatchObject({ model: "sandbox/chat-503", finishReason: "error", totalCost: 0, usage: 0 });
    expect(data.providerResponses!.map((r) => r.status)).toEqual([503]);

    // The same on the Messages route, in its own envelope; a refusal before any attempt names nothing.
    const { res: anthropic, settled: anthropicSettled } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-503",
      max_tokens: 16,
      messages: hi,
    });
    expect(anthropic.status).toBe(503);
    expect(((await anthropic.json()) as { type: string }).type).toBe("error");
    await anthropicSettled();
    const named = anthropic.headers.get("x-generation-id")!;
    const { data: failed } = await sdkFor(acct.apiKey).generations.getGeneration({ id: named });
    expect(failed).toMatchObject({ apiType: "messages", finishReason: "error", streamed: false });
    const { res: unknown } = await post("/chat/completions", acct.apiKey, {
      model: "nobody/none",
      messages: hi,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("x-generation-id")).toBeNull();
  });

  it("a chat generation says how it ended, whether it streamed, how long it took and its session", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const sdk = sdkFor(acct.apiKey);

    // JSON, the session from the header; the record says what the client saw.
    const { res: json, settled: jsonSettled } = await post(
      "/chat/completions",
      acct.apiKey,
      { model: "sandbox/chat-echo", messages: hi },
      { "x-session-id": "sess-header" },
    );
    const answer = (await json.json()) as { choices: Array<{ finish_reason: string }> };
    await jsonSettled();
    const jsonId = json.headers.get("x-generation-id")!;
    expect(answer.choices[0]!.finish_reason).toBe("stop");
    const { data: plain } = await sdk.generations.getGeneration({ id: jsonId });
    expect(plain).toMatchObject({
      streamed: false,
      finishReason: "stop",
      nativeFinishReason: "stop",
      sessionId: "sess-header",
    });
    expect(plain.generationTime).toBeGreaterThanOrEqual(plain.latency!);

    // Streamed tool calls, the body's session_id winning over the header.
    const { res: sse, settled: sseSettled } = await post(
      "/chat/completions",
      acct.apiKey,
      {
        model: "sandbox/chat-tools",
        stream: true,
        session_id: "sess-body",
        messages: [{ role: "user", content: "weather in Paris" }],
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
      },
      { "x-session-id": "sess-header" },
    );
    expect(await sse.text()).toContain('"finish_reason":"tool_calls"');
    await sseSettled();
    const { data: tools } = await sdk.generations.getGeneration({ id: sse.headers.get("x-generation-id")! });
    expect(tools).toMatchObject({
      streamed: true,
      finishReason: "tool_calls",
      nativeFinishReason: "tool_calls",
      sessionId: "sess-body",
    });
    expect(tools.generationTime).toEqual(expect.any(Number));

    // Cut short by max_tokens, no session at all.
    const { id: cut } = await inferred("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 2,
      messages: hi,
    });
    const { data: length } = await sdk.generations.getGeneration({ id: cut });
    expect(length).toMatchObject({ streamed: false, finishReason: "length", sessionId: null });
  });

  it("a stream that fails mid-way is recorded as streamed, finish_reason error", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-error-after-3",
      stream: true,
      messages: hi,
    });
    expect(await res.text()).toContain('"finish_reason":"error"');
    await settled();
    const { data } = await sdkFor(acct.apiKey).generations.getGeneration({
      id: res.headers.get("x-generation-id")!,
    });
    expect(data).toMatchObject({ streamed: true, finishReason: "error", nativeFinishReason: null });
  });

  it("embeddings and speech records carry the session header; one too long is 400 and writes nothing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post(
      "/embeddings",
      acct.apiKey,
      { model: "sandbox/embed-small", input: "x" },
      { "x-session-id": "embed-session" },
    );
    await res.json();
    await settled();
    const sdk = sdkFor(acct.apiKey);
    const { data: embedded } = await sdk.generations.getGeneration({
      id: res.headers.get("x-generation-id")!,
    });
    expect(embedded).toMatchObject({ streamed: false, sessionId: "embed-session", finishReason: null });
    expect(embedded.generationTime).toEqual(expect.any(Number));

    const { id: spoken } = await inferred("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "alloy",
      input: "hello",
      response_format: "mp3",
      session_id: "speech-session",
    });
    const { data: speech } = await sdk.generations.getGeneration({ id: spoken });
    expect(speech).toMatchObject({ streamed: true, sessionId: "speech-session" });

    const before = await recordIdsOf(acct.accountId);
    for (const path of ["/chat/completions", "/embeddings"]) {
      const body =
        path === "/embeddings"
          ? { model: "sandbox/embed-small", input: "x" }
          : { model: "sandbox/chat-echo", messages: hi };
      const { res: bad, settled: badSettled } = await post(path, acct.apiKey, body, {
        "x-session-id": "s".repeat(257),
      });
      expect(bad.status).toBe(400);
      expect((await errorOf(bad)).message).toContain("x-session-id");
      await badSettled();
    }
    const after = await recordIdsOf(acct.accountId);
    expect(after).toHaveLength(before.length);
  });

  it("another account's generation and an unknown id are 404 in the envelope", async () => {
    const owner = await createAccount({ creditsUsd: 5 });
    const other = await createAccount();
    const { id } = await inferred("/embeddings", owner.apiKey, { model: "sandbox/embed-small", input: "x" });
    for (const [key, which] of [
      [other.apiKey, id],
      [other.managementKey, id],
      [owner.apiKey, `gen-0-${crypto.randomUUID()}`],
    ] as const) {
      const res = await call(`/generation?id=${encodeURIComponent(which)}`, { key });
      expect(res.status).toBe(404);
      expect((await errorOf(res)).message).toContain("not found");
    }
    await expect(sdkFor(other.apiKey).generations.getGeneration({ id })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it("another key of the same account reads it; a missing or empty id is 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const second = await createKey(acct, { name: "second" });
    const { id } = await inferred("/embeddings", acct.apiKey, { model: "sandbox/embed-small", input: "x" });
    const res = await call(`/generation?id=${id}`, { key: second.key });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { id: string } }).data.id).toBe(id);
    for (const query of ["", "?id="]) {
      const bad = await call(`/generation${query}`, { key: acct.apiKey });
      expect(bad.status).toBe(400);
      expect((await errorOf(bad)).message).toContain("id");
    }
    expect((await call(`/generation?id=${id}`)).status).toBe(401);
  });
});

describe("GET /generation: the provider's id for the answer, and who sent the request", () => {
  const gateway = gatewayHarness();
  const chatRequest = (key: string, model: string, headers: Record<string, string> = {}) =>
    gateway.send(
      new Request(`${BASE}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: JSON.stringify({ model, messages: hi, stream: true }),
      }),
    );

  it("upstream_id is each provider's own id, read from its stream whatever its wire format", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    gateway.upstream({
      "POST api.openai.com/v1/chat/completions": sse(openaiText),
      "POST api.anthropic.com/v1/messages": sse(anthropicText),
      "POST generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent":
        sse(geminiText),
    });
    const sdk = sdkFor(acct.apiKey);
    const cases: Array<[string, string]> = [
      ["openai/gpt-4.1-mini", "chatcmpl-CbT2xQ7vH1o9TnB3kP0aZrW4yE8sd"],
      ["anthropic/claude-sonnet-4", "msg_01XFDUDYJgAACzvnptvVoYEL"],
      ["google/gemini-2.5-flash", "mTtEaZ-dNqXZxs0PlKyk8QQ"],
    ];
    for (const [model, upstreamId] of cases) {
      const { res, settled } = await chatRequest(acct.apiKey, model);
      expect(res.status).toBe(200);
      await res.text();
      await settled();
      const { data } = await sdk.generations.getGeneration({ id: res.headers.get("x-generation-id")! });
      expect([model, data.upstreamId]).toEqual([model, upstreamId]);
    }

    // OpenAI's Responses API (a /responses request to OpenAI is passed through to it).
    gateway.upstream({ "POST api.openai.com/v1/responses": sse(responsesText) });
    const { res, settled } = await gateway.post("/responses", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "Hello",
    });
    expect(res.status).toBe(200);
    await res.json();
    await settled();
    const { data } = await sdk.generations.getGeneration({ id: res.headers.get("x-generation-id")! });
    expect(data.upstreamId).toBe("resp_68c7a1f0e5b08190b1c9a4d2e6f3a7c1");
  });

  it("counts the prompt's media parts on chat records: images and files, and audio apart", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const sdk = sdkFor(acct.apiKey);
    const image = { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } };
    const pdf = {
      type: "file",
      file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0=" },
    };
    const audio = { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } };
    const media = await inferred("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: [
        { role: "user", content: [{ type: "text", text: "Look" }, image, audio] },
        { role: "assistant", content: "Seen." },
        { role: "user", content: [image, pdf] },
      ],
    });
    const { data } = await sdk.generations.getGeneration({ id: media.id });
    expect(data).toMatchObject({ numMediaPrompt: 3, numInputAudioPrompt: 1 });
    // A text chat counts none; embeddings are not counted at all.
    const text = await inferred("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: hi,
    });
    expect((await sdk.generations.getGeneration({ id: text.id })).data).toMatchObject({
      numMediaPrompt: 0,
      numInputAudioPrompt: 0,
    });
    const vectors = await inferred("/embeddings", acct.apiKey, { model: "sandbox/embed-small", input: "x" });
    expect((await sdk.generations.getGeneration({ id: vectors.id })).data).toMatchObject({
      numMediaPrompt: null,
      numInputAudioPrompt: null,
    });
  });

  it("records HTTP-Referer and User-Agent (cut to their bounds), and the sandbox's own answer id", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const sdk = sdkFor(acct.apiKey);
    const { res, settled } = await chatRequest(acct.apiKey, "sandbox/chat-echo", {
      "HTTP-Referer": "https://app.example.com/chat",
      "User-Agent": "OpenAI/JS 6.9.1",
    });
    await res.text();
    await settled();
    const { data } = await sdk.generations.getGeneration({ id: res.headers.get("x-generation-id")! });
    expect(data).toMatchObject({ httpReferer: "https://app.example.com/chat", userAgent: "OpenAI/JS 6.9.1" });
    expect(data.upstreamId).toMatch(/^sandbox-[0-9a-f-]{36}$/);
    // The referer's origin, and the request id the gateway gave (the key to the request's log line).
    expect(data.origin).toBe("https://app.example.com");
    expect(data.requestId).toBe(res.headers.get("x-request-id"));
    expect(data.requestId).toMatch(/^[0-9a-f-]{36}$/);

    // A browser's Referer stands in for HTTP-Referer; values past the bounds are cut, not refused.
    const long = await chatRequest(acct.apiKey, "sandbox/chat-echo", {
      Referer: `https://app.example.com/${"p".repeat(600)}`,
      "User-Agent": "u".repeat(300),
      "X-Request-Id": "client-trace-0042",
    });
    expect(long.res.status).toBe(200);
    await long.res.text();
    await long.settled();
    const { data: cut } = await sdk.generations.getGeneration({
      id: long.res.headers.get("x-generation-id")!,
    });
    expect(cut.httpReferer).toHaveLength(512);
    expect(cut.httpReferer!.startsWith("https://app.example.com/ppp")).toBe(true);
    expect(cut.userAgent).toBe("u".repeat(256));
    // The caller's own X-Request-Id is the one recorded.
    expect(cut.requestId).toBe("client-trace-0042");

    // Embeddings answer with no id of their own; the attribution is recorded all the same.
    const embedded = await gateway.send(
      new Request(`${BASE}/embeddings`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${acct.apiKey}`,
          "content-type": "application/json",
          "HTTP-Referer": "https://search.example.com",
        },
        body: JSON.stringify({ model: "sandbox/embed-small", input: "x" }),
      }),
    );
    await embedded.res.json();
    await embedded.settled();
    const { data: vectors } = await sdk.generations.getGeneration({
      id: embedded.res.headers.get("x-generation-id")!,
    });
    expect(vectors).toMatchObject({
      httpReferer: "https://search.example.com",
      origin: "https://search.example.com",
      upstreamId: null,
      requestId: embedded.res.headers.get("x-request-id"),
    });
    // Without a referer there is no origin to give (the field is a string: empty).
    const plain = await chatRequest(acct.apiKey, "sandbox/chat-echo", { Referer: "not a url" });
    await plain.res.text();
    await plain.settled();
    const { data: none } = await sdk.generations.getGeneration({
      id: plain.res.headers.get("x-generation-id")!,
    });
    expect(none).toMatchObject({ httpReferer: "not a url", origin: "" });
  });
});

describe("OpenAPI document", () => {
  it("describes GET /generation with the id query and the Generation schema", async () => {
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      paths: Record<string, { get?: { parameters?: Array<{ name: string; in: string }> } }>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths["/api/v1/generation"]?.get?.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: "id", in: "query" })]),
    );
    expect(doc.components.schemas).toHaveProperty("Generation");
  });
});
