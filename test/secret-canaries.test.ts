// Secret canaries: a BYOK key echoed back by its upstream (as many providers do in 401 text) never
// reaches a caller, a log line, D1 or Durable Object storage, on every path that talks to an upstream.
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { REDACTED, redactKeyShapes, redactSecrets } from "../src/lib/redact";
import { amended, UpstreamError, withoutSecrets } from "../src/providers/errors";
import soraCompleted from "./fixtures/openai/video-completed.json";
import soraCreate from "./fixtures/openai/video-create.json";
import { addByok, createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";
import { post } from "./helpers/media";
import { json, mockUpstream } from "./helpers/upstream";
import { driveUntil, poll, stubOf, submitOk } from "./helpers/videos";

/** Not shaped like any provider key, so only the exact-credential scrub can catch it. */
const canary = () => `canary.${crypto.randomUUID().slice(0, 12)}.${crypto.randomUUID().slice(0, 12)}`;

/** What a careless upstream answers: the credential it was sent, in its error text. */
const echoAuth = (status: number) => (req: { headers: Record<string, string> }) =>
  json(
    {
      error: {
        code: "invalid_api_key",
        message: `Incorrect API key provided: ${req.headers.authorization}. Raw: ${req.headers.authorization?.replace(/^Bearer /, "")}`,
      },
    },
    status,
  );

let logs: string[] = [];
let restore: (() => void) | undefined;
beforeEach(() => {
  logs = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logs.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
  }
});
afterEach(() => {
  restore?.();
  restore = undefined;
  vi.restoreAllMocks();
});

/** Every row of every table, as text. */
async function d1Dump(): Promise<string> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
  ).all<{ name: string }>();
  const parts: string[] = [];
  for (const { name } of results) {
    const rows = await env.DB.prepare(`SELECT * FROM "${name}"`).all();
    parts.push(JSON.stringify(rows.results));
  }
  return parts.join("\n");
}

async function jobStorage(id: string): Promise<string> {
  return runInDurableObject(stubOf(id), async (_instance, state) =>
    JSON.stringify([...(await state.storage.list()).entries()]),
  );
}

async function expectNowhere(secret: string, bodies: string[]) {
  for (const body of bodies) expect(body).not.toContain(secret);
  expect(logs.join("\n")).not.toContain(secret);
  expect(await d1Dump()).not.toContain(secret);
}

describe("a BYOK key echoed in upstream error text", () => {
  it("embeddings: the 502 keeps the provider's code, not the key; the record has no key", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "openai", secret);
    const upstream = mockUpstream({ "POST api.openai.com/v1/embeddings": echoAuth(401) });
    restore = upstream.restore;
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "openai/text-embedding-3-small", input: "a" },
    });
    const body = await res.text();
    expect(upstream.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    expect(res.status).toBe(502);
    const error = (JSON.parse(body) as { error: { message: string; metadata: Record<string, unknown> } })
      .error;
    expect(error.metadata).toMatchObject({ provider_code: "invalid_api_key", provider_name: "openai" });
    expect(error.message).toContain("Incorrect API key provided");
    expect(error.message).toContain(REDACTED);
    await expectNowhere(secret, [body]);
  });

  it("speech: same for /audio/speech", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "openai", secret);
    const upstream = mockUpstream({ "POST api.openai.com/v1/audio/speech": echoAuth(401) });
    restore = upstream.restore;
    const { res, settled } = await post("/audio/speech", acct.apiKey, {
      model: "openai/gpt-4o-mini-tts",
      voice: "alloy",
      input: "hello",
    });
    await settled();
    const body = await res.text();
    expect(upstream.requests).toHaveLength(1);
    expect(res.status).toBe(502);
    expect(body).toContain(REDACTED);
    await expectNowhere(secret, [body]);
  });

  it("video: a refused submission, a failed poll and a failed download store and show no key", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "openai", secret);
    const job = "https://api.openai.com/v1/videos/video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5";
    const bodies: string[] = [];

    // 1. Every endpoint refuses the submission, echoing the key.
    let upstream = mockUpstream({ "POST api.openai.com/v1/videos": echoAuth(400) });
    restore = upstream.restore;
    const refused = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    const failed = await driveUntil(acct.apiKey, refused.id, "failed");
    expect(failed.error).toMatch(/^Submission failed: .*Incorrect API key provided/);
    bodies.push(JSON.stringify(failed), await jobStorage(refused.id));
    upstream.restore();

    // 2. Accepted, then the poll is refused (not retryable) with the key in the text.
    upstream = mockUpstream({
      "POST api.openai.com/v1/videos": () => json(soraCreate),
      [`GET ${new URL(job).host}${new URL(job).pathname}`]: echoAuth(400),
    });
    restore = upstream.restore;
    const polled = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    const pollFailed = await driveUntil(acct.apiKey, polled.id, "failed");
    expect(pollFailed.error).toContain(REDACTED);
    bodies.push(JSON.stringify(pollFailed), await jobStorage(polled.id));
    upstream.restore();

    // 3. Completed, then the download fails with the key in the text.
    upstream = mockUpstream({
      "POST api.openai.com/v1/videos": () => json(soraCreate),
      [`GET ${new URL(job).host}${new URL(job).pathname}`]: () => json(soraCompleted),
      [`GET ${new URL(job).host}${new URL(job).pathname}/content`]: echoAuth(500),
    });
    restore = upstream.restore;
    const done = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    await driveUntil(acct.apiKey, done.id, "completed");
    const content = await call(`/videos/${done.id}/content`, { key: acct.apiKey });
    expect(content.status).toBe(502);
    bodies.push(await content.text(), JSON.stringify(await poll(acct.apiKey, done.id)));
    expect(upstream.requests.some((r) => r.headers.authorization === `Bearer ${secret}`)).toBe(true);

    await expectNowhere(secret, bodies);
  });
});

describe("a BYOK key echoed by a chat upstream", () => {
  const firstChunk =
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n';

  it("chat completions: an error answer before the first byte (JSON and stream)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "openai", secret);
    const upstream = mockUpstream({ "POST api.openai.com/v1/chat/completions": echoAuth(401) });
    restore = upstream.restore;
    const bodies: string[] = [];
    for (const stream of [false, true]) {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      await settled();
      const body = await res.text();
      expect(res.status).toBe(502);
      expect(body).toContain("Incorrect API key provided");
      expect(body).toContain(REDACTED);
      bodies.push(body);
    }
    expect(upstream.requests.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${secret}`,
      `Bearer ${secret}`,
    ]);
    await expectNowhere(secret, bodies);
  });

  it("chat completions: an error event after the first byte names the key", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "openai", secret);
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": (req) =>
        new Response(
          `${firstChunk}data: {"error":{"code":"invalid_api_key","message":"Key ${req.headers.authorization?.replace(/^Bearer /, "")} was revoked"}}\n\n`,
          { headers: { "Content-Type": "text/event-stream" } },
        ),
    });
    restore = upstream.restore;
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    const body = await res.text();
    await settled();
    expect(res.status).toBe(200);
    expect(body).toContain('"finish_reason":"error"');
    expect(body).toContain(`Key ${REDACTED} was revoked`);
    await expectNowhere(secret, [body]);
  });

  it("a key shaped like a key with base64 characters in it, echoed anywhere in a long message, leaves no part", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const tail = `${crypto.randomUUID().slice(0, 8)}+${crypto.randomUUID().slice(0, 8)}==`;
    // The key's shape (sk-proj-...) ends at the `/`: redacting the shape first would leave the tail.
    const secret = `sk-proj-7Hq2LmN9pX4vR8tK/${tail}`;
    await addByok(acct, "openai", secret);
    const padding = "x ".repeat(245);
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": (req) =>
        json(
          {
            error: {
              code: "invalid_api_key",
              message: `${padding}Incorrect API key provided: ${req.headers.authorization?.replace(/^Bearer /, "")}`,
            },
          },
          401,
        ),
    });
    restore = upstream.restore;
    const bodies: string[] = [];
    for (const stream of [false, true]) {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      await settled();
      const body = await res.text();
      expect(res.status).toBe(502);
      expect(body).toContain(`Incorrect API key provided: ${REDACTED}`);
      bodies.push(body);
    }
    await expectNowhere(secret, bodies);
    await expectNowhere(tail, bodies);
    await expectNowhere(tail.slice(0, 8), bodies);
  });

  it("messages: an Anthropic upstream's error answer and its mid-stream error event", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = canary();
    await addByok(acct, "anthropic", secret);
    const keyOf = (req: { headers: Record<string, string> }) => req.headers["x-api-key"] ?? "";
    let broken = false;
    const upstream = mockUpstream({
      "POST api.anthropic.com/v1/messages": (req) =>
        broken
          ? new Response(
              'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n' +
                'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
                'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n' +
                `event: error\ndata: {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ${keyOf(req)}"}}\n\n`,
              { headers: { "Content-Type": "text/event-stream" } },
            )
          : json(
              {
                type: "error",
                error: { type: "authentication_error", message: `invalid x-api-key ${keyOf(req)}` },
              },
              401,
            ),
    });
    restore = upstream.restore;
    const bodies: string[] = [];
    for (const stream of [false, true]) {
      broken = stream;
      const { res, settled } = await post("/messages", acct.apiKey, {
        model: "anthropic/claude-sonnet-4",
        max_tokens: 64,
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      const body = await res.text();
      await settled();
      expect(body).toContain(`invalid x-api-key ${REDACTED}`);
      bodies.push(body);
    }
    expect(upstream.requests.every((r) => r.headers["x-api-key"] === secret)).toBe(true);
    await expectNowhere(secret, bodies);
  });
});

describe("keys with canary values through the management and inference paths", () => {
  it("a BYOK key is stored only as ciphertext and never shown, logged or echoed", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = `sk-canary-${crypto.randomUUID().replaceAll("-", "")}`;
    const bodies: string[] = [];
    const created = await call("/byok", {
      method: "POST",
      key: acct.managementKey,
      body: { provider: "openai", key: secret, name: "canary" },
    });
    expect(created.status).toBe(201);
    const text = await created.text();
    bodies.push(text);
    const id = (JSON.parse(text) as { data: { id: string } }).data.id;
    for (const res of [
      await call("/byok", { key: acct.managementKey }),
      await call(`/byok/${id}`, { key: acct.managementKey }),
      await call(`/byok/${id}`, { method: "PATCH", key: acct.managementKey, body: { name: "renamed" } }),
    ]) {
      expect(res.status).toBe(200);
      bodies.push(await res.text());
    }
    const upstream = mockUpstream({ "POST api.openai.com/v1/embeddings": echoAuth(401) });
    restore = upstream.restore;
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "openai/text-embedding-3-small", input: "a" },
    });
    expect(res.status).toBe(502);
    bodies.push(await res.text());
    expect(upstream.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    await expectNowhere(secret, bodies);
  });

  it("an API key is shown once at creation, then only as a hash or label", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const created = await call("/keys", {
      method: "POST",
      key: acct.managementKey,
      body: { name: "canary" },
    });
    expect(created.status).toBe(201);
    const { key, data } = (await created.json()) as { key: string; data: { hash: string } };
    const bodies: string[] = [];
    for (const res of [
      await call("/key", { key }),
      await call("/keys", { key: acct.managementKey }),
      await call(`/keys/${data.hash}`, { key: acct.managementKey }),
      await call("/embeddings", { method: "POST", key, body: { model: "sandbox/embed-small", input: "x" } }),
      await call("/embeddings", {
        method: "POST",
        key,
        body: { model: "sandbox/embed-always-503", input: "x" },
      }),
      await call("/embeddings", { method: "POST", key, body: { model: "no/such-model", input: "x" } }),
    ]) {
      expect(res.status).toBeLessThan(600);
      bodies.push(await res.text());
    }
    await expectNowhere(key, bodies);
  });
});

describe("redaction", () => {
  it("removes key-shaped tokens whoever they belong to, and keeps the rest of the message", () => {
    const text =
      "Incorrect API key provided: sk-proj-abcDEF123456789. Authorization: Bearer xyz.987654321 " +
      "see https://x.example/v1?key=AIzaSyA-1234567890abcdefghij&alt=sse; google AIzaSyB1234567890abcdefghijkl";
    const out = redactKeyShapes(text);
    expect(out).toBe(
      `Incorrect API key provided: ${REDACTED}. Authorization: Bearer ${REDACTED} ` +
        `see https://x.example/v1?key=${REDACTED}&alt=sse; google ${REDACTED}`,
    );
  });

  it("removes the exact credential, also URL-encoded, even when it has no known shape", () => {
    const secret = "my key/with+odd=chars";
    const out = redactSecrets(`a ${secret} b ${encodeURIComponent(secret)} c`, [secret]);
    expect(out).toBe(`a ${REDACTED} b ${REDACTED} c`);
  });

  it("an error amended by an adapter (Gemini's) still has the exact key removed, whatever its characters", () => {
    const secret = "sk-proj-7Hq2LmN9pX4vR8tK/wZ3+Yb6Jc1Qe5Ud0So==";
    const err = new UpstreamError({ kind: "http", status: 400, message: `API key not valid: ${secret}` });
    const out = withoutSecrets(amended(err, { retryable: true }), [secret]);
    expect(out.message).toBe(`API key not valid: ${REDACTED}`);
    expect(out.retryable).toBe(true);
  });

  it("leaves ordinary provider messages alone", () => {
    const text = "The model `text-embedding-3-small` does not exist or you do not have access to it.";
    expect(redactSecrets(text, ["sk-unrelated-key-123"])).toBe(text);
  });
});
