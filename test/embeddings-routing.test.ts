// POST /embeddings routing end to end: sandbox failure modes, failover, fallback models, guardrails,
// content filters, and BYOK through mock upstreams replaying recorded payloads.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import cohereOk from "./fixtures/cohere/embed-200.json";
import openaiOk from "./fixtures/openai/embeddings-200.json";
import openai429 from "./fixtures/openai/embeddings-429.json";
import { addByok, createAccount, defaultGuardrail } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { json, mockUpstream } from "./helpers/upstream";

const embed = (key: string, body: Record<string, unknown>) =>
  call("/embeddings", { method: "POST", key, body });

async function generations(keyHash: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.keyHash, keyHash));
}

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

describe("failure modes of the sandbox", () => {
  it("always-503 -> 503 with the provider code, recorded as a failed generation", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-always-503", input: "x" });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).metadata).toMatchObject({
      provider_code: "service_unavailable",
      provider_name: "sandbox",
    });
    const [gen] = await generations(acct.apiKeyHash);
    expect(gen).toMatchObject({ status: "failed", costMicros: 0 });
  });

  it("rate limited -> 429 with provider_code and Retry-After", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-rate-limited-429", input: "x" });
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("7");
    expect(res.headers.get("X-RateLimit-Limit")).toBeNull();
    expect((await errorOf(res)).metadata).toMatchObject({ provider_code: "rate_limit_exceeded" });
  });

  it("overloaded -> 529", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-overloaded-529", input: "x" });
    expect(res.status).toBe(529);
    await errorOf(res);
  });

  it("never answers -> 408 once the attempt deadline passes", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-never-answers", input: "x" });
    expect(res.status).toBe(408);
    await errorOf(res);
  });
});

describe("failover", () => {
  it("fails over to the model's next provider before answering", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-failover", input: "x" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { provider: string }).provider).toBe("sandbox");
    const [gen] = await generations(acct.apiKeyHash);
    expect(gen!.attempts!.map((a) => [a.provider, a.outcome])).toEqual([
      ["sandbox-flaky", "http"],
      ["sandbox", "ok"],
    ]);
  });

  it("then tries the fallback models in order", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, {
      model: "sandbox/embed-always-503",
      models: ["sandbox/embed-rate-limited-429", "sandbox/embed-small"],
      input: "x",
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
  });

  it("provider.allow_fallbacks false: no other provider of a model, the fallback models still (as on OpenRouter)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const alone = await embed(acct.apiKey, {
      model: "sandbox/embed-failover",
      provider: { allow_fallbacks: false },
      input: "x",
    });
    expect(alone.status).toBe(503);
    await errorOf(alone);
    const other = await createAccount({ creditsUsd: 5 });
    const res = await embed(other.apiKey, {
      model: "sandbox/embed-failover",
      models: ["sandbox/embed-small"],
      provider: { allow_fallbacks: false },
      input: "x",
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
    const [gen] = await generations(other.apiKeyHash);
    expect(gen!.attempts!.map((a) => [a.provider, a.outcome])).toEqual([
      ["sandbox-flaky", "http"],
      ["sandbox", "ok"],
    ]);
  });

  it("honours provider.order and provider.ignore", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const ordered = await embed(acct.apiKey, {
      model: "sandbox/embed-small",
      input: "x",
      provider: { order: ["sandbox-backup"] },
    });
    expect(((await ordered.json()) as { provider: string }).provider).toBe("sandbox-backup");
    const ignored = await embed(acct.apiKey, {
      model: "sandbox/embed-small",
      input: "x",
      provider: { ignore: ["sandbox", "sandbox-backup"] },
    });
    expect(ignored.status).toBe(404);
    expect((await errorOf(ignored)).message).toContain("provider.ignore");
  });

  it("reads providers by slug or display name in any case: an ignore never fails open", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const ignored = await embed(acct.apiKey, {
      model: "sandbox/embed-small",
      input: "x",
      provider: { ignore: ["Sandbox", "SANDBOX-BACKUP"] },
    });
    expect(ignored.status).toBe(404);
    expect((await errorOf(ignored)).message).toContain("provider.ignore");
    for (const name of ["Sandbox Backup", "sandbox-backup", "SANDBOX-backup"]) {
      const ordered = await embed(acct.apiKey, {
        model: "sandbox/embed-small",
        input: "x",
        provider: { order: [name], only: [name] },
      });
      expect(((await ordered.json()) as { provider: string }).provider, name).toBe("sandbox-backup");
    }
  });

  it("a rate limit mixed with other failures carries no Retry-After", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, {
      model: "sandbox/embed-always-503",
      models: ["sandbox/embed-rate-limited-429"],
      input: "x",
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBeNull();
  });
});

describe("guardrails and content filters", () => {
  it("a model outside allowed_models -> 403 naming the guardrail, nothing recorded", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await defaultGuardrail(acct, { allowedModels: ["sandbox/embed-failover"] });
    const res = await embed(acct.apiKey, { model: "sandbox/embed-small", input: "x" });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toContain("'Team policy'");
    expect(await generations(acct.apiKeyHash)).toHaveLength(0);
  });

  it("ZDR enforcement skips the retaining provider", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await defaultGuardrail(acct, { enforceZdrOther: true });
    const res = await embed(acct.apiKey, {
      model: "sandbox/embed-small",
      input: "x",
      provider: { order: ["sandbox-backup"] },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { provider: string }).provider).toBe("sandbox");
  });

  it("block -> 403 naming the filter's label; redact rewrites before the provider sees it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await defaultGuardrail(acct, {
      contentFilters: [
        { pattern: "forbidden", action: "block", label: "NO_FORBIDDEN" },
        { pattern: "secret\\d+", action: "redact", label: "HIDDEN" },
      ],
    });
    const blocked = await embed(acct.apiKey, {
      model: "sandbox/embed-small",
      input: ["ok", "a forbidden word"],
    });
    expect(blocked.status).toBe(403);
    expect((await errorOf(blocked)).message).toContain("NO_FORBIDDEN");

    const body = { model: "sandbox/embed-small", dimensions: 16 };
    const redacted = (await (await embed(acct.apiKey, { ...body, input: "code secret42 here" })).json()) as {
      data: Array<{ embedding: number[] }>;
    };
    const other = await createAccount({ creditsUsd: 5 });
    const plain = (await (await embed(other.apiKey, { ...body, input: "code HIDDEN here" })).json()) as {
      data: Array<{ embedding: number[] }>;
    };
    expect(redacted.data[0]!.embedding).toEqual(plain.data[0]!.embedding);
    const gens = await generations(acct.apiKeyHash);
    expect(gens.find((g) => g.status === "completed")!.flags).toEqual(["redact:HIDDEN"]);
  });
});

describe("BYOK through mock upstreams", () => {
  it("calls the OpenAI-compatible upstream with the workspace's key and records is_byok", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const upstream = mockUpstream({ "POST api.openai.com/v1/embeddings": () => json(openaiOk) });
    restore = upstream.restore;
    const res = await embed(acct.apiKey, {
      model: "openai/text-embedding-3-small",
      input: ["a", "b"],
      dimensions: 8,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      data: Array<{ embedding: number[] }>;
      usage: { prompt_tokens: number; is_byok: boolean };
    };
    expect(body.data[1]!.embedding).toEqual(openaiOk.data[1]!.embedding);
    expect(body.usage).toMatchObject({ prompt_tokens: 9, is_byok: true });
    expect(upstream.requests[0]!.headers.authorization).toBe("Bearer sk-user-openai-key");
    expect(upstream.requests[0]!.body).toMatchObject({
      model: "text-embedding-3-small",
      input: ["a", "b"],
      dimensions: 8,
    });
    const [gen] = await generations(acct.apiKeyHash);
    expect(gen).toMatchObject({ isByok: true, provider: "openai" });
  });

  it("uses the regional base URL for requests through the europe ingress", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const upstream = mockUpstream({ "POST eu.api.openai.com/v1/embeddings": () => json(openaiOk) });
    restore = upstream.restore;
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      region: "europe",
      body: { model: "openai/text-embedding-3-small", input: ["a", "b"] },
    });
    expect(res.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  });

  it("maps an upstream 429 to 429 with the provider's code and Retry-After", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const upstream = mockUpstream({
      "POST api.openai.com/v1/embeddings": () => json(openai429, 429, { "Retry-After": "20" }),
    });
    restore = upstream.restore;
    const res = await embed(acct.apiKey, { model: "openai/text-embedding-3-small", input: "a" });
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("20");
    expect((await errorOf(res)).metadata).toMatchObject({
      provider_code: "rate_limit_exceeded",
      provider_name: "openai",
    });
  });

  it("falls back to a fallback model when the upstream cannot be reached", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const upstream = mockUpstream({});
    restore = upstream.restore;
    const res = await embed(acct.apiKey, {
      model: "openai/text-embedding-3-small",
      models: ["sandbox/embed-small"],
      input: "a",
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
    expect(upstream.requests).toHaveLength(1);
  });

  it("calls the Cohere-style upstream with its own wire format", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "cohere", "co-user-key");
    const upstream = mockUpstream({ "POST api.cohere.com/v2/embed": () => json(cohereOk) });
    restore = upstream.restore;
    const res = await embed(acct.apiKey, {
      model: "cohere/embed-v4.0",
      input: ["hello", "world"],
      input_type: "query",
    });
    expect(res.status).toBe(200);
    expect(upstream.requests[0]!.body).toMatchObject({
      texts: ["hello", "world"],
      input_type: "search_query",
      embedding_types: ["float"],
    });
    expect(((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBe(4);
  });

  it("a ciphertext that does not decrypt refuses the candidate with no upstream call", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const id = await addByok(acct, "openai", "sk-user-openai-key");
    await getDb(env.DB)
      .update(tables.byokCredentials)
      .set({ workspaceId: acct.workspaceId, provider: "openai", iv: "AAAAAAAAAAAAAAAA" })
      .where(eq(tables.byokCredentials.id, id));
    const upstream = mockUpstream({ "POST api.openai.com/v1/embeddings": () => json(openaiOk) });
    restore = upstream.restore;
    const res = await embed(acct.apiKey, { model: "openai/text-embedding-3-small", input: "a" });
    expect(res.status).toBe(503);
    await errorOf(res);
    expect(upstream.requests).toHaveLength(0);
  });

  it("without any credential for the provider -> 503 saying so", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await embed(acct.apiKey, { model: "cohere/embed-v4.0", input: "a" });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).message).toContain("no credential is configured for provider 'cohere'");
  });
});
