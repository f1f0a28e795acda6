// The ledger Durable Object itself: persistence across a restart, alarm reclaiming, window resets, GET /credits, regions.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admit, settle } from "../../src/billing/admission";
import { ledgerFor } from "../../src/billing/ledger-client";
import { LEASE_MS } from "../../src/ledger/core";
import { Ledger } from "../../src/ledger/object";
import type { ApiError } from "../../src/lib/errors";
import { createAccount, createKey } from "../helpers/accounts";
import { call, errorOf } from "../helpers/http";
import { sdkFor } from "../helpers/sdk";
import { addCredits, authFor, request, setLedgerClock } from "./fixtures";

describe("ledger Durable Object", () => {
  it("keeps reservations and spend across a restart of the object", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const auth = await authFor(acct.apiKeyHash);
    const open = await admit(env, auth, request({ worstCaseMicros: 300_000 }));
    const done = await admit(env, auth, request({ worstCaseMicros: 100_000 }));
    await settle(env, done, { actualMicros: 40_000, isByok: false });

    await runInDurableObject(ledgerFor(env, acct.accountId), async (_old, state) => {
      // A fresh instance over the same storage is what an eviction or a deploy gives.
      const fresh = new Ledger(state, env);
      const status = await fresh.status(acct.accountId, [acct.apiKeyHash]);
      expect(status.account).toEqual({
        purchased: 1_000_000,
        spent: 40_000,
        reserved: 300_000,
        balance: 660_000,
      });
      expect(status.keys[acct.apiKeyHash]?.usage.total).toBe(40_000);
      expect(
        await fresh.settle({ generationId: open.generationId, actualMicros: 250_000, byok: false }),
      ).toEqual({
        status: "settled",
        chargedMicros: 250_000,
      });
      expect((await fresh.status(acct.accountId, [])).account.balance).toBe(710_000);
    });
  });

  it("reclaims reservations left by a crashed request when the alarm fires after the lease", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    // Pinned clocks lie in the future so a real-time alarm never fires on its own mid-test.
    const t0 = Date.UTC(2031, 2, 3, 10, 0, 0);
    await setLedgerClock(acct.accountId, t0);
    const auth = await authFor(acct.apiKeyHash);
    const crashed = await admit(env, auth, request({ worstCaseMicros: 900_000 }));
    const refused = await admit(env, auth, request({ worstCaseMicros: 200_000 })).catch((e: ApiError) => e);
    expect((refused as ApiError).status).toBe(402);

    const stub = ledgerFor(env, acct.accountId);
    const alarmAt = await runInDurableObject(stub, (_l, state) => state.storage.getAlarm());
    expect(alarmAt).toBe(t0 + LEASE_MS);
    await setLedgerClock(acct.accountId, t0 + LEASE_MS);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await stub.status(acct.accountId, [])).account).toMatchObject({ reserved: 0, spent: 0 });
    expect(await admit(env, auth, request({ worstCaseMicros: 200_000 }))).toMatchObject({
      reservedMicros: 200_000,
    });

    // A settle arriving after the reclaim still charges the real cost, once.
    expect(await settle(env, crashed, { actualMicros: 5_000, isByok: false })).toEqual({
      status: "late",
      chargedMicros: 5_000,
    });
    expect(await settle(env, crashed, { actualMicros: 5_000, isByok: false })).toMatchObject({
      status: "duplicate",
    });
    expect((await stub.status(acct.accountId, [])).account.spent).toBe(5_000);
  });

  it("resets daily, weekly and monthly caps at UTC boundaries, naming the reset in the 402", async () => {
    const acct = await createAccount({ creditsUsd: 10 });
    // Sunday 31 August 2031, 23:59 UTC: the next day is a new day, a new week (Monday) and a new month.
    const lastMinute = Date.UTC(2031, 7, 31, 23, 59, 0);
    for (const reset of ["daily", "weekly", "monthly"] as const) {
      const key = await createKey(acct, { limitUsd: 0.01, limitReset: reset });
      const auth = await authFor(key.hash);
      await setLedgerClock(acct.accountId, lastMinute);
      const r = await admit(env, auth, request({ worstCaseMicros: 10_000 }));
      await settle(env, r, { actualMicros: 10_000, isByok: false });
      const err = (await admit(env, auth, request({ worstCaseMicros: 1 })).catch((e) => e)) as ApiError;
      expect(err.status).toBe(402);
      expect(err.message).toContain("it resets at 2031-09-01T00:00:00.000Z");
      expect(err.metadata).toMatchObject({ limit_reset: reset, resets_at: "2031-09-01T00:00:00.000Z" });

      await setLedgerClock(acct.accountId, Date.UTC(2031, 8, 1, 0, 0, 0));
      expect(await admit(env, auth, request({ worstCaseMicros: 10_000 }))).toMatchObject({
        reservedMicros: 10_000,
      });
      const usage = (await ledgerFor(env, acct.accountId).status(acct.accountId, [key.hash])).keys[key.hash]!;
      expect(usage.usage).toEqual({ total: 10_000, daily: 0, weekly: 0, monthly: 0 });
    }
  });
});

describe("GET /credits", () => {
  it("reports credits purchased and settled usage through the SDK, purchases seen at once", async () => {
    const acct = await createAccount({ creditsUsd: 2.5 });
    const auth = await authFor(acct.apiKeyHash);
    const r = await admit(env, auth, request({ worstCaseMicros: 500_000 }));
    await settle(env, r, { actualMicros: 123_456, isByok: false });
    const byok = await admit(env, auth, request({ byok: true }));
    await settle(env, byok, { actualMicros: 999, isByok: true });
    await addCredits(acct.accountId, 1);
    const res = await sdkFor(acct.managementKey).credits.getCredits();
    expect(res.data).toEqual({ totalCredits: 3.5, totalUsage: 0.123456 });
  });

  it("is for management keys only", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await call("/credits", { key: acct.apiKey });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toMatch(/management keys/);
  });
});

describe("one ledger whatever the ingress", () => {
  it("shows at the global ingress what was spent through europe", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const key = await createKey(acct, { limitUsd: 0.5, allowedDataRegions: ["global", "europe"] });
    const auth = await authFor(key.hash);
    // The europe deployment binds the global worker's namespace: the same ledger object.
    const europeEnv = { ...env, REGION: "europe" as const };
    const r = await admit(europeEnv, auth, request({ worstCaseMicros: 200_000 }));
    await settle(europeEnv, r, { actualMicros: 150_000, isByok: false });
    for (const region of ["global", "europe"] as const) {
      const res = await call("/key", { key: key.key, region });
      const data = ((await res.json()) as { data: { usage: number; limit_remaining: number } }).data;
      expect(data).toMatchObject({ usage: 0.15, limit_remaining: 0.35 });
    }
  });
});
