// Endpoint health: outages this isolate saw move an endpoint after its model's others under default
// routing, for a cooldown; an explicit provider order or sort is kept; the attempt log shows the effect.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../../src/db/client";
import type { AttemptLog } from "../../src/inference/attempts";
import {
  COOLDOWN_MS,
  isDown,
  noteAttempt,
  OUTAGE_FAILURES,
  OUTAGE_WINDOW_MS,
} from "../../src/inference/health";
import { planRoute } from "../../src/routing/plan";
import { createAccount } from "../helpers/accounts";
import { post } from "../helpers/media";
import { context, endpoint, model } from "../routing/fixtures";

const failure = (id: string, over: Partial<AttemptLog> = {}) => ({
  endpoint_id: id,
  outcome: "http" as const,
  status: 503,
  ...over,
});

describe("what marks an endpoint down", () => {
  it("OUTAGE_FAILURES outage failures within the window; down for the cooldown; a success clears it", () => {
    const t = 1_000_000;
    for (let i = 0; i < OUTAGE_FAILURES - 1; i++) noteAttempt(failure("e1"), t + i);
    expect(isDown("e1", t + 10)).toBe(false);
    noteAttempt(failure("e1", { outcome: "timeout", status: undefined }), t + 10);
    expect(isDown("e1", t + 11)).toBe(true);
    expect(isDown("e1", t + 10 + COOLDOWN_MS - 1)).toBe(true);
    expect(isDown("e1", t + 10 + COOLDOWN_MS)).toBe(false);
    // Still failing after the cooldown: one failure marks it down again.
    noteAttempt(failure("e1", { outcome: "connection", status: undefined }), t + 10 + COOLDOWN_MS);
    expect(isDown("e1", t + 11 + COOLDOWN_MS)).toBe(true);
    noteAttempt({ endpoint_id: "e1", outcome: "ok" }, t + 12 + COOLDOWN_MS);
    expect(isDown("e1", t + 13 + COOLDOWN_MS)).toBe(false);
  });

  it("failures spread wider than the window, and the caller's or the key's errors, do not", () => {
    const t = 2_000_000;
    for (let i = 0; i < OUTAGE_FAILURES; i++) noteAttempt(failure("e2"), t + i * OUTAGE_WINDOW_MS);
    expect(isDown("e2", t + OUTAGE_FAILURES * OUTAGE_WINDOW_MS)).toBe(false);
    for (const status of [400, 401, 404, 429]) {
      for (let i = 0; i < OUTAGE_FAILURES; i++) noteAttempt(failure("e3", { status }), t + i);
    }
    for (let i = 0; i < OUTAGE_FAILURES; i++)
      noteAttempt(failure("e3", { outcome: "credential", status: undefined }), t + i);
    expect(isDown("e3", t + 10)).toBe(false);
  });
});

describe("planning around an endpoint that is down", () => {
  const p1 = endpoint("p1");
  const p2 = endpoint("p2");
  const p3 = endpoint("p3");
  const catalog = [model("v/m", [p1, p2, p3])];
  const down = new Set([p1.id]);
  const ctx = context(catalog, { isDown: (id) => down.has(id) });
  const providers = (plan: ReturnType<typeof planRoute>) => plan.attempts.map((a) => a.endpoint.provider);

  it("default routing tries it after the others; it is still tried", () => {
    expect(providers(planRoute({ modality: "embeddings", model: "v/m" }, ctx))).toEqual(["p2", "p3", "p1"]);
  });

  it("an explicit provider.order or sort is kept as the caller gave it", () => {
    expect(
      providers(planRoute({ modality: "embeddings", model: "v/m", provider: { order: ["p1", "p3"] } }, ctx)),
    ).toEqual(["p1", "p3", "p2"]);
    expect(
      providers(planRoute({ modality: "embeddings", model: "v/m", provider: { sort: "price" } }, ctx)),
    ).toEqual(["p1", "p2", "p3"]);
  });
});

describe("through the gateway: sandbox/embed-failover, whose first endpoint always answers 503", () => {
  async function attemptsOf(key: string, body: Record<string, unknown>) {
    const { res, settled } = await post("/embeddings", key, { input: "hello", ...body });
    const status = res.status;
    await res.text();
    await settled();
    const id = res.headers.get("x-generation-id")!;
    const row = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.id, id))
      .get();
    return {
      status,
      attempts: (row!.attempts as unknown as AttemptLog[]).map(
        (a) => `${a.provider} ${a.status ?? a.outcome}`,
      ),
    };
  }

  it("after OUTAGE_FAILURES outages the next requests go to the healthy endpoint first", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = { model: "sandbox/embed-failover" };
    for (let i = 0; i < OUTAGE_FAILURES; i++) {
      expect(await attemptsOf(acct.apiKey, body)).toEqual({
        status: 200,
        attempts: ["sandbox-flaky 503", "sandbox ok"],
      });
    }
    expect(await attemptsOf(acct.apiKey, body)).toEqual({ status: 200, attempts: ["sandbox ok"] });

    // The caller's own order still comes first.
    expect(
      await attemptsOf(acct.apiKey, { ...body, provider: { order: ["sandbox-flaky", "sandbox"] } }),
    ).toEqual({ status: 200, attempts: ["sandbox-flaky 503", "sandbox ok"] });
    // A down endpoint that is the only candidate is tried all the same.
    expect(await attemptsOf(acct.apiKey, { ...body, provider: { only: ["sandbox-flaky"] } })).toEqual({
      status: 503,
      attempts: ["sandbox-flaky 503"],
    });
  });
});
