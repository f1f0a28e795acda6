// The ledger client: few admission calls in flight, and settlements riding on the account's next
// ledger call. Fewer Durable Object calls, same money.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admit, type Reservation, settleInBackground } from "../../src/billing/admission";
import {
  ADMIT_WAIT_MS,
  carrying,
  ledgerFor,
  MAX_ADMIT_CALLS,
  SETTLE_COALESCE_MS,
} from "../../src/billing/ledger-client";
import { ApiError } from "../../src/lib/errors";
import { createAccount, createKey } from "../helpers/accounts";
import { countingEnv } from "./counting-env";
import { authFor, outcome, request } from "./fixtures";

async function setup(creditsUsd = 1) {
  const acct = await createAccount({ creditsUsd });
  const key = await createKey(acct);
  return { acct, key, auth: await authFor(key.hash) };
}

async function account(accountId: string) {
  return (await ledgerFor(env, accountId).status(accountId, [])).account;
}

describe("settlements coalesced in the isolate", () => {
  it("a lone settlement sends itself after the coalescing delay, once", async () => {
    const { acct, auth } = await setup();
    const counted = countingEnv();
    const r = await admit(counted.env, auth, request({ worstCaseMicros: 5_000 }));
    const started = Date.now();
    await settleInBackground(counted.env, r, { actualMicros: 1_200, isByok: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(SETTLE_COALESCE_MS - 1);
    expect(counted.calls).toEqual([
      { method: "admit", settles: [] },
      { method: "settleAndReport", settles: [r.generationId] },
    ]);
    expect(await account(acct.accountId)).toMatchObject({ spent: 1_200, reserved: 0 });
  });

  it("settlements finishing together share one call", async () => {
    const { acct, auth } = await setup();
    const counted = countingEnv();
    const rs: Reservation[] = [];
    for (let i = 0; i < 5; i++) rs.push(await admit(counted.env, auth, request({ worstCaseMicros: 5_000 })));
    await Promise.all(
      rs.map((r) => settleInBackground(counted.env, r, { actualMicros: 1_000, isByok: false })),
    );
    const settleCalls = counted.calls.filter((c) => c.method === "settleAndReport");
    expect(settleCalls).toHaveLength(1);
    expect(settleCalls[0]!.settles.sort()).toEqual(rs.map((r) => r.generationId).sort());
    expect(await account(acct.accountId)).toMatchObject({ spent: 5_000, reserved: 0 });
  });

  it("the next admission carries a waiting settlement, which then makes no call of its own", async () => {
    const { acct, auth } = await setup();
    const counted = countingEnv();
    const first = await admit(counted.env, auth, request({ worstCaseMicros: 5_000 }));
    const settling = settleInBackground(counted.env, first, { actualMicros: 700, isByok: false });
    const second = await admit(counted.env, auth, request({ worstCaseMicros: 5_000 }));
    await settling;
    expect(counted.calls).toEqual([
      { method: "admit", settles: [] },
      { method: "admit", settles: [first.generationId] },
    ]);
    // The carried settlement is applied before the admission: only the second reservation is open.
    expect(await account(acct.accountId)).toMatchObject({ spent: 700, reserved: 5_000 });
    await settleInBackground(counted.env, second, { actualMicros: 0, isByok: false });
    expect(await account(acct.accountId)).toMatchObject({ spent: 700, reserved: 0 });
  });

  it("the room a carried settlement frees counts for the admission carrying it", async () => {
    // $0.01 of credits: a second 6_000 reservation fits only once the first settles for 1_000.
    const { acct, auth } = await setup(0.01);
    const counted = countingEnv();
    const first = await admit(counted.env, auth, request({ worstCaseMicros: 6_000 }));
    const settling = settleInBackground(counted.env, first, { actualMicros: 1_000, isByok: false });
    await admit(counted.env, auth, request({ worstCaseMicros: 6_000 }));
    await settling;
    expect(await account(acct.accountId)).toMatchObject({ spent: 1_000, reserved: 6_000, balance: 3_000 });
  });

  it("GET /key's ledger read carries waiting settlements too", async () => {
    const { acct, auth } = await setup();
    const counted = countingEnv();
    const r = await admit(counted.env, auth, request({ worstCaseMicros: 5_000 }));
    const settling = settleInBackground(counted.env, r, { actualMicros: 300, isByok: false });
    const status = await carrying(counted.env, acct.accountId, async (ledger, carried) =>
      ledger.status(acct.accountId, [], carried),
    );
    await settling;
    expect(status.account).toMatchObject({ spent: 300, reserved: 0 });
    expect(counted.calls.map((c) => c.method)).toEqual(["admit", "status"]);
  });

  it("if the carrying admission fails, the settlements it carried are sent on their own", async () => {
    const { acct, auth } = await setup();
    const ok = countingEnv();
    const first = await admit(ok.env, auth, request({ worstCaseMicros: 5_000 }));
    const failing = countingEnv((method) => method === "admit");
    const settling = settleInBackground(failing.env, first, { actualMicros: 900, isByok: false });
    await expect(admit(failing.env, auth, request({ worstCaseMicros: 5_000 }))).rejects.toThrow(/injected/);
    await settling;
    expect(failing.calls).toEqual([
      { method: "admit", settles: [first.generationId] },
      { method: "settleAndReport", settles: [first.generationId] },
    ]);
    expect(await account(acct.accountId)).toMatchObject({ spent: 900, reserved: 0 });
  });

  it("a failed settlement call is logged, never thrown; the lease reclaims the reservation", async () => {
    const { acct, auth } = await setup();
    const failing = countingEnv((method) => method === "settleAndReport");
    const r = await admit(failing.env, auth, request({ worstCaseMicros: 5_000 }));
    await expect(
      settleInBackground(failing.env, r, { actualMicros: 900, isByok: false }),
    ).resolves.toBeUndefined();
    expect(await account(acct.accountId)).toMatchObject({ spent: 0, reserved: 5_000 });
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("admissions behind calls in flight", () => {
  it("admissions arriving while MAX_ADMIT_CALLS calls are in flight wait for them, each checked in order", async () => {
    // $0.01: ten 1_000 reservations fit, the rest are refused for balance.
    const { acct, auth } = await setup(0.01);
    let inFlight = 0;
    let most = 0;
    const counted = countingEnv(undefined, async () => {
      most = Math.max(most, ++inFlight);
      await sleep(30);
      inFlight--;
    });
    const results = await Promise.all(
      Array.from({ length: 16 }, () =>
        outcome(admit(counted.env, auth, request({ worstCaseMicros: 1_000 }))),
      ),
    );
    expect(most).toBe(MAX_ADMIT_CALLS);
    expect(counted.batches).toEqual(Array(16).fill(1));
    const admitted = results.filter((r) => !(r instanceof ApiError));
    const refused = results.filter((r): r is ApiError => r instanceof ApiError);
    expect(admitted).toHaveLength(10);
    expect(refused.map((e) => e.status)).toEqual(Array(6).fill(402));
    expect(await account(acct.accountId)).toMatchObject({ reserved: 10_000, balance: 0 });
  });

  it("a failed call fails every admission it carried, and nothing is reserved", async () => {
    const { acct, auth } = await setup();
    const counted = countingEnv(
      (method) => method === "admit",
      () => sleep(30),
    );
    const results = await Promise.allSettled(
      Array.from({ length: MAX_ADMIT_CALLS + 3 }, () => admit(counted.env, auth, request())),
    );
    expect(results.every((r) => r.status === "rejected" && /injected/.test(String(r.reason)))).toBe(true);
    expect(counted.batches.reduce((a, b) => a + b, 0)).toBe(MAX_ADMIT_CALLS + 3);
    expect(await account(acct.accountId)).toMatchObject({ reserved: 0 });
  });

  it(
    "admissions waiting behind calls that never return send their own after ADMIT_WAIT_MS",
    async () => {
      const { acct, auth } = await setup();
      // The first MAX_ADMIT_CALLS calls never reach the ledger (their requests were lost).
      const counted = countingEnv(undefined, (method, nth) =>
        method === "admit" && nth <= MAX_ADMIT_CALLS ? new Promise(() => {}) : Promise.resolve(),
      );
      for (let i = 0; i < MAX_ADMIT_CALLS; i++) void admit(counted.env, auth, request());
      const started = Date.now();
      const queued = await Promise.all(Array.from({ length: 3 }, () => admit(counted.env, auth, request())));
      expect(Date.now() - started).toBeGreaterThanOrEqual(ADMIT_WAIT_MS - 50);
      expect(queued.every((r) => r.reservedMicros === 1_000)).toBe(true);
      expect(await account(acct.accountId)).toMatchObject({ reserved: 3_000 });
    },
    ADMIT_WAIT_MS * 4,
  );
});
