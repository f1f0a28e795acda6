// Bearer-key authentication and the management-key requirement.
import { describe, expect, it } from "vitest";
import { INFERENCE_ONLY_MESSAGE, MANAGEMENT_ONLY_MESSAGE } from "../src/lib/errors";
import { createAccount, createKey } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

describe("authentication", () => {
  it("rejects a request with no credentials", async () => {
    const res = await call("/key");
    expect(res.status).toBe(401);
    expect((await errorOf(res)).message).toContain("Authorization");
  });

  it.each([
    ["a non-Bearer scheme", "Basic dXNlcjpwYXNz"],
    ["an empty token", "Bearer "],
    ["a token with spaces", "Bearer abc def ghi jkl mno pqr"],
    ["a token that is too short", "Bearer short"],
  ])("rejects %s", async (_, header) => {
    const res = await call("/key", { headers: { Authorization: header } });
    expect(res.status).toBe(401);
    await errorOf(res);
  });

  it("rejects an unknown key", async () => {
    const res = await call("/key", { key: `sk-gw-v1-${"0".repeat(64)}` });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).message).toBe("Invalid API key");
  });

  it("does not accept the key in the query string", async () => {
    const acct = await createAccount();
    const res = await call(`/key?key=${acct.apiKey}&api_key=${acct.apiKey}`);
    expect(res.status).toBe(401);
  });

  it("rejects an expired key and a disabled key", async () => {
    const acct = await createAccount();
    const expired = await createKey(acct, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    const disabled = await createKey(acct, { disabled: true });
    const a = await call("/key", { key: expired.key });
    expect(a.status).toBe(401);
    expect((await errorOf(a)).message).toContain("expired");
    const b = await call("/key", { key: disabled.key });
    expect(b.status).toBe(401);
    expect((await errorOf(b)).message).toContain("disabled");
  });

  it("accepts a key whose expiry is in the future, and the scheme case-insensitively", async () => {
    const acct = await createAccount();
    const later = await createKey(acct, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    const res = await call("/key", { headers: { Authorization: `bearer ${later.key}` } });
    expect(res.status).toBe(200);
  });

  it("stops a key disabled through the API at once in this isolate", async () => {
    const acct = await createAccount();
    expect((await call("/key", { key: acct.apiKey })).status).toBe(200);
    const patched = await call(`/keys/${acct.apiKeyHash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { disabled: true },
    });
    expect(patched.status).toBe(200);
    expect((await call("/key", { key: acct.apiKey })).status).toBe(401);
  });
});

describe("management-only operations", () => {
  it("answer a regular key with 403 saying only management keys may", async () => {
    const acct = await createAccount();
    for (const [method, path] of [
      ["GET", "/keys"],
      ["POST", "/keys"],
      ["GET", `/keys/${acct.apiKeyHash}`],
      ["PATCH", `/keys/${acct.apiKeyHash}`],
      ["DELETE", `/keys/${acct.apiKeyHash}`],
    ] as const) {
      const res = await call(path, {
        key: acct.apiKey,
        method,
        body: method === "GET" ? undefined : { name: "x" },
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await errorOf(res)).message).toBe(MANAGEMENT_ONLY_MESSAGE);
    }
    // Nothing changed: the regular key still works.
    expect((await call("/key", { key: acct.apiKey })).status).toBe(200);
  });
});

describe("management keys and inference", () => {
  it("a management key runs no model on any inference route: 403, no record, nothing spent", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    for (const [path, body] of [
      ["/chat/completions", { model: "sandbox/chat-echo", messages: [{ role: "user", content: "hi" }] }],
      ["/responses", { model: "sandbox/chat-echo", input: "hi" }],
      [
        "/messages",
        { model: "sandbox/chat-echo", max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
      ],
      ["/embeddings", { model: "sandbox/embed-small", input: "hi" }],
      ["/audio/speech", { model: "sandbox/tts-mini", input: "hi", voice: "alloy" }],
      ["/videos", { model: "sandbox/video-mini", prompt: "a boat" }],
    ] as const) {
      const res = await call(path, { key: acct.managementKey, method: "POST", body });
      expect(res.status, path).toBe(403);
      expect(res.headers.get("x-generation-id"), path).toBeNull();
      const err = (await res.json()) as { error?: { message: string }; type?: string };
      // /messages answers in Anthropic's envelope; the others in OpenRouter's.
      expect(JSON.stringify(err), path).toContain(INFERENCE_ONLY_MESSAGE);
    }
    const key = (await (await call("/key", { key: acct.managementKey })).json()) as {
      data: { usage: number };
    };
    expect(key.data.usage).toBe(0);
    // The account's API key still runs models.
    const ok = await call("/embeddings", {
      key: acct.apiKey,
      method: "POST",
      body: { model: "sandbox/embed-small", input: "hi" },
    });
    expect(ok.status).toBe(200);
  });
});
