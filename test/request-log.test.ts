// Request ids, Server-Timing and the one JSON log line per request: its fields for management, inference,
// streamed and refused requests, and never a key, a BYOK secret, a prompt or an output in any log line.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/lib/hash";
import { addByok, createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";
import { post } from "./helpers/media";
import { json, mockUpstream } from "./helpers/upstream";

let lines: string[] = [];
beforeEach(() => {
  lines = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
  }
});
afterEach(() => vi.restoreAllMocks());

type LogLine = Record<string, unknown>;

/** The request lines written for one request id (there must be exactly one). */
function requestLines(requestId: string): LogLine[] {
  return lines
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => l.message === "request" && l.request_id === requestId);
}

function lineOf(res: Response): LogLine {
  const id = res.headers.get("X-Request-Id");
  expect(id).toBeTruthy();
  const found = requestLines(id!);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe("X-Request-Id", () => {
  it("keeps a caller's well-formed id and replaces a malformed one", async () => {
    const given = `req-${crypto.randomUUID()}`;
    const kept = await call("/key", { headers: { "X-Request-Id": given } });
    expect(kept.headers.get("X-Request-Id")).toBe(given);
    const replaced = await call("/key", { headers: { "X-Request-Id": "bad id with spaces" } });
    expect(replaced.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("is on streamed answers (chat SSE and speech) with Server-Timing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const chat = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      stream: true,
      messages: [{ role: "user", content: "hello" }],
    });
    expect(chat.res.status).toBe(200);
    expect(chat.res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    expect(chat.res.headers.get("X-Request-Id")).toBeTruthy();
    expect(chat.res.headers.get("Server-Timing")).toMatch(/^gateway;dur=\d+, upstream;dur=\d+$/);
    await chat.res.text();
    await chat.settled();

    const speech = await post("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "alloy",
      input: "hello",
    });
    expect(speech.res.status).toBe(200);
    expect(speech.res.headers.get("X-Request-Id")).toBeTruthy();
    expect(speech.res.headers.get("Server-Timing")).toMatch(/^gateway;dur=\d+, upstream;dur=\d+$/);
    await speech.res.arrayBuffer();
    await speech.settled();
  });
});

describe("the request log line", () => {
  it("a management request: route pattern, region, key hash prefix, account, status, timings", async () => {
    const acct = await createAccount();
    const res = await call(`/keys/${acct.apiKeyHash}`, { key: acct.managementKey, region: "europe" });
    expect(res.status).toBe(200);
    const line = lineOf(res);
    expect(line).toMatchObject({
      level: "info",
      region: "europe",
      method: "GET",
      route: "/api/v1/keys/:hash",
      status: 200,
      key_hash: (await sha256Hex(acct.managementKey)).slice(0, 12),
      account: acct.accountId,
    });
    expect(line.gateway_ms).toEqual(expect.any(Number));
    expect(line.duration_ms).toEqual(expect.any(Number));
    expect(line.error_type).toBeUndefined();
    expect(line.model).toBeUndefined();
  });

  it("an inference request: model, provider, BYOK, upstream and gateway time, cost; Server-Timing agrees", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small", input: "hello" },
    });
    expect(res.status).toBe(200);
    const line = lineOf(res);
    expect(line).toMatchObject({
      route: "/api/v1/embeddings",
      status: 200,
      model: "sandbox/embed-small",
      provider: "sandbox",
      byok: false,
    });
    expect(line.cost_usd).toBeGreaterThan(0);
    const timing = /^gateway;dur=(\d+), upstream;dur=(\d+)$/.exec(res.headers.get("Server-Timing") ?? "");
    expect(timing).not.toBeNull();
    expect(line.upstream_ms).toBe(Number(timing![2]));
    expect(line.gateway_ms).toBe(Number(timing![1]));
  });

  it("a BYOK request says so", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", `sk-test-${crypto.randomUUID()}`);
    const upstream = mockUpstream({
      "POST api.openai.com/v1/embeddings": () =>
        json({
          object: "list",
          data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
          model: "text-embedding-3-small",
          usage: { prompt_tokens: 1, total_tokens: 1 },
        }),
    });
    try {
      const res = await call("/embeddings", {
        method: "POST",
        key: acct.apiKey,
        body: { model: "openai/text-embedding-3-small", input: "a" },
      });
      expect(res.status).toBe(200);
      expect(lineOf(res)).toMatchObject({ provider: "openai", byok: true });
    } finally {
      upstream.restore();
    }
  });

  it("a streamed request is logged once, when the stream ends, with its cost", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const chat = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      stream: true,
      messages: [{ role: "user", content: "count the words here" }],
    });
    const id = chat.res.headers.get("X-Request-Id")!;
    await chat.res.text();
    await chat.settled();
    const found = requestLines(id);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ status: 200, model: "sandbox/chat-echo", provider: "sandbox" });
    expect(found[0]!.cost_usd).toBeGreaterThan(0);
    expect(found[0]!.duration_ms as number).toBeGreaterThanOrEqual(found[0]!.gateway_ms as number);
  });

  it("refusals carry the error type; a failed upstream is an error line with its model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    expect(lineOf(await call("/key"))).toMatchObject({
      status: 401,
      error_type: "unauthorized",
      route: "/api/v1/key",
    });
    expect(lineOf(await call("/nowhere", { key: acct.apiKey }))).toMatchObject({
      status: 404,
      error_type: "not_found",
      route: null,
    });
    expect(lineOf(await call("/key", { method: "POST", key: acct.apiKey }))).toMatchObject({
      status: 405,
      error_type: "method_not_allowed",
    });
    const failed = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-always-503", input: "x" },
    });
    expect(failed.status).toBe(503);
    expect(lineOf(failed)).toMatchObject({
      level: "error",
      status: 503,
      error_type: "unavailable",
      model: "sandbox/embed-always-503",
      provider: "sandbox",
    });
    expect(failed.headers.get("Server-Timing")).toMatch(/^gateway;dur=\d+, upstream;dur=\d+$/);
  });
});

describe("log canaries", () => {
  it("no key, BYOK secret, prompt or output text in any log line of a full run", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const byokSecret = `sk-canary-${crypto.randomUUID().replaceAll("-", "")}`;
    const promptCanary = `prompt-canary-${crypto.randomUUID()}`;
    const created = await call("/byok", {
      method: "POST",
      key: acct.managementKey,
      body: { provider: "openai", key: byokSecret, name: "canary" },
    });
    expect(created.status).toBe(201);
    const newKey = await call("/keys", { method: "POST", key: acct.managementKey, body: { name: "canary" } });
    const { key } = (await newKey.json()) as { key: string };

    // The echo model answers with the prompt: the canary is in the output too.
    const plain = await call("/chat/completions", {
      method: "POST",
      key,
      body: { model: "sandbox/chat-echo", messages: [{ role: "user", content: promptCanary }] },
    });
    expect(await plain.text()).toContain(promptCanary);
    const stream = await post("/chat/completions", key, {
      model: "sandbox/chat-echo",
      stream: true,
      messages: [{ role: "user", content: promptCanary }],
    });
    expect(await stream.res.text()).toContain(promptCanary.slice(0, 12));
    await stream.settled();
    // The provider echoes the BYOK key it was sent in its error text, as many do.
    const upstream = mockUpstream({
      "POST api.openai.com/v1/embeddings": (req) =>
        json({ error: { message: `Incorrect API key provided: ${req.headers.authorization}` } }, 401),
    });
    try {
      for (const res of [
        await call("/embeddings", {
          method: "POST",
          key,
          body: { model: "sandbox/embed-small", input: promptCanary },
        }),
        await call("/embeddings", {
          method: "POST",
          key,
          body: { model: "openai/text-embedding-3-small", input: promptCanary },
        }),
        await call("/key", { key }),
        await call("/byok", { key: acct.managementKey }),
        await call("/key", { key: `${key}x` }),
      ]) {
        expect(res.status).toBeLessThan(600);
        await res.arrayBuffer();
      }
      expect(upstream.requests[0]?.headers.authorization).toBe(`Bearer ${byokSecret}`);
      // Speech streams: its background work ends only once the body is read.
      const speech = await post("/audio/speech", key, {
        model: "sandbox/tts-mini",
        voice: "alloy",
        input: promptCanary,
      });
      expect(speech.res.status).toBe(200);
      await speech.res.arrayBuffer();
      await speech.settled();
    } finally {
      upstream.restore();
    }

    const all = lines.join("\n");
    expect(lines.filter((l) => l.includes('"message":"request"')).length).toBeGreaterThanOrEqual(10);
    for (const secret of [
      key,
      acct.apiKey,
      acct.managementKey,
      byokSecret,
      promptCanary,
      promptCanary.slice(14),
    ]) {
      expect(all).not.toContain(secret);
    }
  });
});
