// The error envelope for every class of bad request, and a generic 500 for the unexpected.
import { createExecutionContext, env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import app from "../src/app";
import { invalidateAuthCache } from "../src/middleware/auth";
import { createAccount } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";

describe("error envelope", () => {
  it("answers an unknown route with 404", async () => {
    const acct = await createAccount();
    const res = await call("/no-such-thing", { key: acct.apiKey });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).message).toContain("/api/v1/no-such-thing");
  });

  it("answers 404 for unknown paths even without a key", async () => {
    const res = await call("/definitely/not/here");
    expect(res.status).toBe(404);
    await errorOf(res);
  });

  it("answers a wrong method with 405 and an Allow header", async () => {
    const acct = await createAccount();
    const res = await call("/key", { key: acct.apiKey, method: "POST", body: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get("Allow")).toContain("GET");
    await errorOf(res);
  });

  it("answers malformed JSON with 400 and changes nothing", async () => {
    const acct = await createAccount();
    const before = await call("/keys", { key: acct.managementKey }).then((r) => r.json());
    const res = await call("/keys", { key: acct.managementKey, method: "POST", body: '{"name": "x",' });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(/json/i);
    const after = await call("/keys", { key: acct.managementKey }).then((r) => r.json());
    expect(after).toEqual(before);
  });

  it("answers a non-JSON content type with 400", async () => {
    const acct = await createAccount();
    const res = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: "name=x",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("application/json");
  });

  it("reads every spelling of a JSON content type as JSON, and refuses look-alikes with 400", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const embed = (type: string) =>
      call("/embeddings", {
        key: acct.apiKey,
        method: "POST",
        body: JSON.stringify({ model: "sandbox/embed-small", input: "hello" }),
        headers: { "Content-Type": type },
      });
    const json = [
      "application/json;",
      "application/json ;charset=utf-8",
      "application/json;charset=utf-8;",
      'application/json; foo="a;b"',
      "Application/JSON",
      "application/vnd.api+json",
    ];
    for (const type of json) expect((await embed(type)).status, type).toBe(200);
    // The same on a management route, whose body is stored: the key is created as sent.
    const created = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: JSON.stringify({ name: "spelt" }),
      headers: { "Content-Type": "application/json ; charset=utf-8" },
    });
    expect(created.status).toBe(201);
    for (const type of ["application/json-seq", "application/json, text/plain", "text/json"]) {
      const res = await embed(type);
      expect(res.status, type).toBe(400);
      expect((await errorOf(res)).message).toContain("application/json");
    }
  });

  it("answers a missing body on a body route with 400", async () => {
    const acct = await createAccount();
    const res = await call("/keys", { key: acct.managementKey, method: "POST" });
    expect(res.status).toBe(400);
    await errorOf(res);
  });

  it("answers an oversized body with 413", async () => {
    const acct = await createAccount();
    const res = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: JSON.stringify({ name: "x".repeat(1024 * 1024 + 10) }),
    });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toContain("1 MiB");
  });

  it("names the offending field on a validation failure", async () => {
    const acct = await createAccount();
    const res = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "ok", limit: -5, allowed_data_regions: ["mars"] },
    });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.message).toContain("body.limit");
    expect(error.message).toContain("body.allowed_data_regions.0");
  });

  describe("unexpected failures", () => {
    afterEach(() => {
      vi.restoreAllMocks();
      invalidateAuthCache();
    });

    it("answers 500 with a generic message, no stack, and logs the request id", async () => {
      const logged = vi.spyOn(console, "error").mockImplementation(() => {});
      const broken = {
        prepare() {
          throw new Error("database exploded at /secret/path");
        },
      } as unknown as D1Database;
      const token = `sk-gw-v1-${"a".repeat(64)}`;
      const res = await app.fetch(
        new Request(`${BASE}/key`, {
          headers: { Authorization: `Bearer ${token}`, "X-Request-Id": "req-12345678" },
        }),
        { ...env, DB: broken },
        createExecutionContext(),
      );
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: { code: 500, message: "Internal server error" } });
      expect(text).not.toContain("exploded");
      expect(res.headers.get("X-Request-Id")).toBe("req-12345678");
      expect(logged).toHaveBeenCalledOnce();
      expect(String(logged.mock.calls[0]?.[0])).toContain("req-12345678");
    });

    it.each([
      "Network connection lost.",
      // A regional wrangler dev started without the global one, whose ledgers it binds.
      'Worker "edge-model-gateway" not found. Make sure it is running locally.',
    ])("answers 503 with Retry-After when the ledger cannot be reached: %s", async (message) => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      vi.spyOn(console, "log").mockImplementation(() => {});
      const acct = await createAccount({ creditsUsd: 5 });
      const lost = { admit: () => Promise.reject(new Error(message)) };
      const ledger = { ...env.LEDGER, get: () => lost, idFromName: (n: string) => env.LEDGER.idFromName(n) };
      const res = await app.fetch(
        new Request(`${BASE}/embeddings`, {
          method: "POST",
          headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
          body: JSON.stringify({ model: "sandbox/embed-small", input: "hello" }),
        }),
        { ...env, LEDGER: ledger as unknown as typeof env.LEDGER },
        createExecutionContext(),
      );
      expect(res.status).toBe(503);
      expect(res.headers.get("Retry-After")).toBe("1");
      expect((await errorOf(res)).message).toContain("could not be reached");
    });
  });
});

describe("request id", () => {
  it("generates one when the caller sends none, and keeps a well-formed one", async () => {
    const generated = await call("/nowhere");
    expect(generated.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await call("/nowhere", { headers: { "X-Request-Id": "client-trace-0001" } });
    expect(kept.headers.get("X-Request-Id")).toBe("client-trace-0001");
    const replaced = await call("/nowhere", { headers: { "X-Request-Id": "bad id with spaces" } });
    expect(replaced.headers.get("X-Request-Id")).not.toBe("bad id with spaces");
  });
});

describe("OpenAPI document", () => {
  it("is served without a key and lists the routes", async () => {
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/api/v1/key", "/api/v1/keys", "/api/v1/keys/{hash}"]),
    );
  });
});
