// The ledger end to end through POST /embeddings (sandbox model): exact caps, free-model bursts, regions.
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import catalog from "../../catalog/catalog.json";
import { UpstreamError } from "../../src/providers/errors";
import { getAdapter } from "../../src/providers/registry";
import { addByok, createAccount, createKey } from "../helpers/accounts";
import { call, errorOf } from "../helpers/http";
import { setLedgerClock } from "./fixtures";

const TEXT = "x".repeat(1_000);
/** The route reserves the worst case over its planned endpoints: one token per UTF-8 byte (per character, for this ASCII text) at the dearest price. */
const RESERVE = Math.max(
  ...catalog.models
    .find((m) => m.slug === "sandbox/embed-small")!
    .endpoints.map((e) => Math.ceil(TEXT.length * (e.pricing as { input_token: number }).input_token)),
);

/** Spies on the sandbox's upstream calls; with `latencyMs`, each takes that long, as a real provider's would. */
function countUpstreamCalls(latencyMs = 0) {
  const adapter = getAdapter("sandbox")!;
  const original = adapter.embeddings!.bind(adapter);
  return vi.spyOn(adapter, "embeddings").mockImplementation(async (...args) => {
    await new Promise((resolve) => setTimeout(resolve, latencyMs));
    return original(...args);
  });
}

/**
 * Spies on the sandbox's embeddings calls: `sources` lists the credential each used (byok, platform);
 * with `ownKey.fails` set, a call on the caller's own key is refused as a provider refuses a bad key.
 */
function watchCredentials() {
  const adapter = getAdapter("sandbox")!;
  const original = adapter.embeddings!.bind(adapter);
  const sources: string[] = [];
  const ownKey = { fails: false };
  vi.spyOn(adapter, "embeddings").mockImplementation(async (req, ctx) => {
    sources.push(ctx.credential.source);
    if (ownKey.fails && ctx.credential.source === "byok") {
      throw new UpstreamError({ kind: "http", status: 401, message: "Provider sandbox answered 401" });
    }
    return original(req, ctx);
  });
  return { sources, ownKey };
}

const embed = (key: string, model: string, region?: "global" | "europe") =>
  call("/embeddings", { method: "POST", key, region, body: { model, input: TEXT } });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("ledger through POST /embeddings", () => {
  it("admits exactly floor(C/R) of 200 concurrent requests, the rest 402 with no upstream call", async () => {
    const acct = await createAccount({ creditsUsd: 10 });
    const capMicros = 500;
    const key = await createKey(acct, { limitUsd: capMicros / 1e6 });
    // The 200 are in flight together: no admitted request finishes (and settles) before the others are admitted.
    const upstream = countUpstreamCalls(1_000);
    const responses = await Promise.all(
      Array.from({ length: 200 }, () => embed(key.key, "sandbox/embed-small")),
    );
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(Math.floor(capMicros / RESERVE));
    expect(upstream).toHaveBeenCalledTimes(ok.length);
    for (const res of refused) {
      expect(res.status).toBe(402);
      expect([...res.headers.keys()].some((h) => h.startsWith("x-ratelimit"))).toBe(false);
      expect((await errorOf(res)).message).toMatch(/credit limit reached/);
    }
    for (const res of ok) {
      expect([...res.headers.keys()].some((h) => h.startsWith("x-ratelimit"))).toBe(false);
      await res.body?.cancel();
    }
    const info = ((await (await call("/key", { key: key.key })).json()) as { data: { usage: number } }).data;
    expect(info.usage).toBeGreaterThan(0);
    expect(info.usage).toBeLessThanOrEqual(capMicros / 1e6);
  }, 60_000);

  it("a burst of 5L on a free model admits exactly L; every 429 has the headers and made no upstream call", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await setLedgerClock(acct.accountId, Date.UTC(2031, 0, 15, 8, 30, 10));
    const upstream = countUpstreamCalls();
    const responses = await Promise.all(
      Array.from({ length: 100 }, () => embed(acct.apiKey, "sandbox/embed-small:free")),
    );
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(20);
    expect(upstream).toHaveBeenCalledTimes(20);
    for (const res of responses.filter((r) => r.status !== 200)) {
      expect(res.status).toBe(429);
      expect(res.headers.get("X-RateLimit-Limit")).toBe("20");
      expect(res.headers.get("X-RateLimit-Remaining")).toBe("0");
      expect(res.headers.get("X-RateLimit-Reset")).toBe(String(Date.UTC(2031, 0, 15, 8, 31, 0)));
      expect(res.headers.get("Retry-After")).toBe("50");
      await errorOf(res);
    }
    const info = (
      (await (await call("/key", { key: acct.apiKey })).json()) as {
        data: { free_model_daily_requests: unknown };
      }
    ).data;
    expect(info.free_model_daily_requests).toEqual({ limit: 50, remaining: 30, used: 20 });
  }, 60_000);

  it("past the free-model limit, a request that also names a paid model (`models`) is served by it", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await setLedgerClock(acct.accountId, Date.UTC(2031, 0, 15, 8, 30, 10));
    for (let i = 0; i < 20; i++)
      expect((await embed(acct.apiKey, "sandbox/embed-small:free")).status).toBe(200);
    expect((await embed(acct.apiKey, "sandbox/embed-small:free")).status).toBe(429);
    const upstream = countUpstreamCalls();
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small:free", models: ["sandbox/embed-small"], input: TEXT },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string; usage: { cost: number } };
    expect(body.model).toBe("sandbox/embed-small");
    expect(body.usage.cost).toBeGreaterThan(0);
    expect(upstream).toHaveBeenCalledTimes(1);
    // The paid answer did not count as a free-model request.
    const info = (
      (await (await call("/key", { key: acct.apiKey })).json()) as {
        data: { free_model_daily_requests: { used: number } };
      }
    ).data;
    expect(info.free_model_daily_requests.used).toBe(20);
  }, 60_000);

  it("a paid model with a :free fallback is a paid request: it neither uses up the free limits nor falls back to the free model", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await setLedgerClock(acct.accountId, Date.UTC(2031, 0, 15, 9, 30, 10));
    for (let i = 0; i < 25; i++) {
      const res = await call("/embeddings", {
        method: "POST",
        key: acct.apiKey,
        body: { model: "sandbox/embed-small", models: ["sandbox/embed-small:free"], input: TEXT },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
    }
    const info = (
      (await (await call("/key", { key: acct.apiKey })).json()) as {
        data: { free_model_daily_requests: { used: number } };
      }
    ).data;
    expect(info.free_model_daily_requests.used).toBe(0);
    // The free model itself still has its whole minute.
    expect((await embed(acct.apiKey, "sandbox/embed-small:free")).status).toBe(200);
    // Nor is the free fallback tried when the paid model fails: it would be a free answer no limit
    // counted, however many times the paid model is made to fail.
    for (let i = 0; i < 3; i++) {
      const failed = await call("/embeddings", {
        method: "POST",
        key: acct.apiKey,
        body: { model: "sandbox/embed-always-503", models: ["sandbox/embed-small:free"], input: TEXT },
      });
      expect(failed.status).toBe(503);
      await failed.text();
    }
    const after = (
      (await (await call("/key", { key: acct.apiKey })).json()) as {
        data: { free_model_daily_requests: { used: number } };
      }
    ).data;
    expect(after.free_model_daily_requests.used).toBe(1);
  }, 60_000);

  it("an account exempt from the free-model limits keeps its :free fallback behind a paid model", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await env.DB.prepare("UPDATE accounts SET exempt_free_limits = 1 WHERE id = ?")
      .bind(acct.accountId)
      .run();
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-always-503", models: ["sandbox/embed-small:free"], input: TEXT },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small:free");
  });

  it("requests on the caller's own key are not held to the free-model limits, nor fall back to the platform's", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await setLedgerClock(acct.accountId, Date.UTC(2031, 0, 16, 8, 30, 10));
    // A credential left at its defaults: the platform key would be its fallback on a paid model.
    await addByok(acct, "sandbox", "sk-sandbox-own-key-123456");
    const { sources, ownKey } = watchCredentials();
    // Past the 20 a minute that bind platform-key requests: all served on the own key, none counted.
    for (let i = 0; i < 25; i++) {
      const res = await embed(acct.apiKey, "sandbox/embed-small:free");
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { is_byok: boolean } }).usage.is_byok).toBe(true);
    }
    expect(sources).toEqual(Array(25).fill("byok"));
    const used = async () =>
      (
        (await (await call("/key", { key: acct.apiKey })).json()) as {
          data: { free_model_daily_requests: { used: number } };
        }
      ).data.free_model_daily_requests.used;
    expect(await used()).toBe(0);
    // An own key that fails is not replaced by the platform key on a free model (that request would
    // be a free platform request no limit counted): the provider's refusal is the answer.
    ownKey.fails = true;
    sources.length = 0;
    const refused = await embed(acct.apiKey, "sandbox/embed-small:free");
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(sources.every((s) => s === "byok")).toBe(true);
    expect(await used()).toBe(0);
    // A paid model still falls back to the platform key.
    sources.length = 0;
    expect((await embed(acct.apiKey, "sandbox/embed-small")).status).toBe(200);
    expect(sources.at(-1)).toBe("platform");
  }, 60_000);

  it("a request credits or the key's cap cannot cover is served on the caller's own key, without the platform's fallback", async () => {
    // No credits at all, and a key whose small cap leaves BYOK out.
    const acct = await createAccount({ creditsUsd: 0 });
    const capped = await createKey(acct, { limitUsd: 0.000001, includeByokInLimit: false });
    const paid = "sandbox/embed-small";
    // A credential left at its defaults (the platform key would be its fallback).
    await addByok(acct, "sandbox", "sk-sandbox-own-key-654321");
    const { sources, ownKey } = watchCredentials();
    for (const key of [acct.apiKey, capped.key]) {
      const res = await embed(key, paid);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { is_byok: boolean } }).usage.is_byok).toBe(true);
    }
    expect(sources).toEqual(["byok", "byok"]);
    // The platform key is not the fallback of such a request: a failing own key is the answer.
    ownKey.fails = true;
    sources.length = 0;
    expect((await embed(acct.apiKey, paid)).status).toBeGreaterThanOrEqual(400);
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.every((s) => s === "byok")).toBe(true);
    const credits = await call("/credits", { key: acct.managementKey });
    expect(((await credits.json()) as { data: { total_usage: number } }).data.total_usage).toBe(0);
  }, 60_000);

  it("refuses a free model with 402 when the balance is not above zero", async () => {
    const acct = await createAccount();
    const upstream = countUpstreamCalls();
    const res = await embed(acct.apiKey, "sandbox/embed-small:free");
    expect(res.status).toBe(402);
    expect((await errorOf(res)).message).toMatch(/Add credits/);
    expect(upstream).not.toHaveBeenCalled();
  });

  it("shows at the global ingress the spend made through europe", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const key = await createKey(acct, { limitUsd: 0.01 });
    const res = await embed(key.key, "sandbox/embed-small", "europe");
    expect(res.status).toBe(200);
    const cost = ((await res.json()) as { usage: { cost: number } }).usage.cost;
    expect(cost).toBeGreaterThan(0);
    const global = (
      (await (await call("/key", { key: key.key, region: "global" })).json()) as {
        data: { usage: number; limit_remaining: number };
      }
    ).data;
    expect(global.usage).toBeCloseTo(cost, 9);
    expect(global.limit_remaining).toBeCloseTo(0.01 - cost, 9);
  });
});
