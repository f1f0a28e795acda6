// Blocks through the real ledger object: requests admitted and settled in the isolate with no call,
// still exactly floor(C/R) admitted, room returned when a block's time ends, usage reads exact, and
// no refusal while another isolate's block may hold the room.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admit, type Reservation, settleInBackground } from "../../src/billing/admission";
import { ledgerFor } from "../../src/billing/ledger-client";
import { readLedgerStatus } from "../../src/billing/usage";
import { BLOCK_GRACE_MS, BLOCK_MS, CLOSE_REPORT_GRACE_MS } from "../../src/ledger/blocks";
import { ApiError } from "../../src/lib/errors";
import { createAccount, createKey } from "../helpers/accounts";
import { countingEnv } from "./counting-env";
import { authFor, outcome, request } from "./fixtures";

/** A request's background work (ctx.waitUntil), awaited by the test when it wants it finished. */
function background() {
  const pending: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => void pending.push(p), done: () => Promise.all(pending) };
}

async function setup(creditsUsd: number) {
  const acct = await createAccount({ creditsUsd });
  const key = await createKey(acct);
  return { acct, key, auth: await authFor(key.hash) };
}

/** Another isolate's admission of 1_000 that asks for (and, with room, gets) a block. */
function otherIsolateBlock(accountId: string, keyHash: string) {
  const cmd = {
    generationId: crypto.randomUUID(),
    keyHash,
    cap: null,
    budgets: [],
    worstCaseMicros: 1_000,
    byok: false,
    freeModel: false,
  };
  const want = { blockId: crypto.randomUUID(), sizeMicros: 100_000 };
  return ledgerFor(env, accountId).admit(accountId, [cmd], { settles: [], reports: [] }, want);
}

/** An account with two keys, the ledger's calls counted, and a request background. */
async function twoKeys(creditsUsd: number) {
  const { acct, auth } = await setup(creditsUsd);
  const other = await authFor((await createKey(acct)).hash);
  return { acct, auth, other, counted: countingEnv(), bg: background() };
}

const raw = async (accountId: string) => (await ledgerFor(env, accountId).status(accountId, [])).account;

describe("blocks", () => {
  it("after one call, a key's admissions and settlements stay in the isolate; one read reconciles exactly", async () => {
    const { acct, key, auth } = await setup(1);
    const counted = countingEnv();
    const bg = background();
    const rs: Reservation[] = [];
    for (let i = 0; i < 30; i++) {
      rs.push(await admit(counted.env, auth, request({ worstCaseMicros: 1_000 }), bg));
    }
    expect(counted.calls.map((c) => c.method)).toEqual(["admit"]);
    await Promise.all(
      rs.map((r, i) => settleInBackground(counted.env, r, { actualMicros: 10 * i, isByok: false })),
    );
    const status = await readLedgerStatus(counted.env, acct.accountId, [key.hash]);
    const charged = rs.reduce((s, _, i) => s + 10 * i, 0);
    expect(status.account).toMatchObject({ spent: charged, reserved: 0 });
    expect(status.keys[key.hash]!.usage.total).toBe(charged);
    // Far fewer calls than one per admission and one per settlement.
    expect(counted.calls.length).toBeLessThanOrEqual(4);
    await bg.done();
  });

  it("while a block is being asked for, a burst goes straight to the ledger instead of queueing; then no calls", async () => {
    const { acct, auth } = await setup(1);
    const counted = countingEnv(undefined, () => new Promise((resolve) => setTimeout(resolve, 30)));
    const bg = background();
    const burst = await Promise.all(
      Array.from({ length: 12 }, () => admit(counted.env, auth, request({ worstCaseMicros: 1_000 }), bg)),
    );
    // One call asked for the block; the other 11 did not wait behind it (no batches).
    expect(counted.batches).toEqual(Array(12).fill(1));
    const after = counted.calls.length;
    const more = [];
    for (let i = 0; i < 10; i++)
      more.push(await admit(counted.env, auth, request({ worstCaseMicros: 1_000 }), bg));
    expect(counted.calls.length).toBe(after);
    await Promise.all(
      [...burst, ...more].map((r) => settleInBackground(counted.env, r, { actualMicros: 5, isByok: false })),
    );
    expect((await readLedgerStatus(env, acct.accountId, [])).account).toMatchObject({
      spent: 110,
      reserved: 0,
    });
    await bg.done();
  });

  it("each key of an account keeps its own block: one key's call does not end another's", async () => {
    const { acct, auth, other, counted, bg } = await twoKeys(1);
    const rs: Reservation[] = [];
    for (let i = 0; i < 20; i++) {
      rs.push(await admit(counted.env, auth, request({ worstCaseMicros: 1_000 }), bg));
      rs.push(await admit(counted.env, other, request({ worstCaseMicros: 1_000 }), bg));
    }
    // One call per key got its block. Closing every open block before each call made the keys take
    // turns ending each other's, so every request called.
    expect(counted.calls.map((c) => c.method)).toEqual(["admit", "admit"]);
    expect(rs.every((r) => r.blockId !== undefined)).toBe(true);
    await Promise.all(
      rs.map((r) => settleInBackground(counted.env, r, { actualMicros: 500, isByok: false })),
    );
    expect((await readLedgerStatus(counted.env, acct.accountId, [])).account).toMatchObject({
      spent: 40 * 500,
      reserved: 0,
    });
    await bg.done();
  });

  it("one call renews the blocks of every key in use, and not an idle key's", async () => {
    const { acct, auth, other, counted, bg } = await twoKeys(1);
    const idle = await authFor((await createKey(acct)).hash);
    const [a, b, c] = [auth, other, idle];
    const admitted = async (who: typeof auth) => {
      const r = await admit(counted.env, who, request({ worstCaseMicros: 1_000 }), bg);
      expect(r.blockId).toBeDefined();
      return r;
    };
    const rs = [await admitted(a), await admitted(b), await admitted(c)];
    expect(counted.calls.map((x) => x.method)).toEqual(["admit", "admit", "admit"]);
    const renewals = () => counted.calls.filter((x) => x.method === "block");
    const renewed = async (n: number) => {
      while (renewals().length < n) await new Promise((resolve) => setTimeout(resolve, 5));
      // Sent; its answer (the new blocks) takes a few milliseconds more.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return [...renewals()[n - 1]!.asks!].sort();
    };
    // Half of a's block time gone: its next admission asks for the next blocks of all three keys in
    // one call (b's and c's are in use and a quarter through). Before, each key renewed on its own.
    await new Promise((resolve) => setTimeout(resolve, BLOCK_MS / 2 + 20));
    rs.push(await admitted(a));
    expect(await renewed(1)).toEqual([a, b, c].map((x) => x.key.hash).sort());
    rs.push(await admitted(b));
    expect(renewals()).toHaveLength(1);
    // Half of the new blocks' time gone: a and b used theirs, c did not, so c's is left to end.
    await new Promise((resolve) => setTimeout(resolve, BLOCK_MS / 2 + 20));
    rs.push(await admitted(a));
    expect(await renewed(2)).toEqual([a, b].map((x) => x.key.hash).sort());
    // Every admission so far after the first three was local.
    expect(counted.calls.filter((x) => x.method === "admit")).toHaveLength(3);
    await Promise.all(
      rs.map((r) => settleInBackground(counted.env, r, { actualMicros: 700, isByok: false })),
    );
    expect((await readLedgerStatus(counted.env, acct.accountId, [])).account).toMatchObject({
      spent: rs.length * 700,
      reserved: 0,
    });
    await bg.done();
  });

  it("room held by this isolate's block for another key comes back at once when a request needs it", async () => {
    // $1 = 1_000_000: the first key's block takes a quarter (250_000); 800_000 fits only without it.
    const { acct, auth, other, counted, bg } = await twoKeys(1);
    const first = await admit(counted.env, auth, request({ worstCaseMicros: 1_000 }), bg);
    expect((await raw(acct.accountId)).reserved).toBe(250_000);
    const big = await admit(counted.env, other, request({ worstCaseMicros: 800_000 }), bg);
    expect(big.reservedMicros).toBe(800_000);
    // Told to retry while the block was open, the isolate closed it and asked again with its report:
    // one more call, not a wait for the block's time to end.
    expect(counted.calls.map((c) => c.method)).toEqual(["admit", "admit", "admit"]);
    expect(await raw(acct.accountId)).toMatchObject({ reserved: 801_000, spent: 0 });
    // The first key's block is closed: its next request asks the ledger.
    await admit(counted.env, auth, request({ worstCaseMicros: 1_000 }));
    expect(counted.calls).toHaveLength(4);
    await settleInBackground(counted.env, first, { actualMicros: 1_000, isByok: false });
    await bg.done();
  });

  it("admits exactly floor(C/R) of many concurrent requests with blocks in play", async () => {
    // $0.1 = 100_000 micro-USD of credits; each request may cost up to 1_000: exactly 100 fit.
    const { acct, auth } = await setup(0.1);
    const bg = background();
    const results = await Promise.all(
      Array.from({ length: 160 }, () => outcome(admit(env, auth, request({ worstCaseMicros: 1_000 }), bg))),
    );
    const refused = results.filter((r): r is ApiError => r instanceof ApiError);
    expect(results.length - refused.length).toBe(100);
    expect(refused.every((e) => e.status === 402)).toBe(true);
    const status = await readLedgerStatus(env, acct.accountId, []);
    expect(status.account).toMatchObject({ reserved: 100_000, balance: 0, spent: 0 });
    await bg.done();
  });

  it("a block's unused room goes back when its time ends, with nothing else calling", async () => {
    const { acct, auth } = await setup(1);
    const bg = background();
    const r = await admit(env, auth, request({ worstCaseMicros: 2_000 }), bg);
    // Granted: the ledger holds the whole block for now, far more than this request's 2_000.
    expect((await raw(acct.accountId)).reserved).toBeGreaterThan(2_000);
    await bg.done();
    expect(await raw(acct.accountId)).toMatchObject({ reserved: 2_000, spent: 0 });
    await settleInBackground(env, r, { actualMicros: 1_500, isByok: false });
    expect(await raw(acct.accountId)).toMatchObject({ reserved: 0, spent: 1_500 });
  });

  it("GET /key's read closes the isolate's blocks: it shows only what requests really hold", async () => {
    const { acct, key, auth } = await setup(1);
    const bg = background();
    const rs = [];
    for (let i = 0; i < 3; i++) rs.push(await admit(env, auth, request({ worstCaseMicros: 3_000 }), bg));
    const status = await readLedgerStatus(env, acct.accountId, [key.hash]);
    expect(status.keys[key.hash]!.reserved.credits).toBe(9_000);
    expect(status.account.reserved).toBe(9_000);
    await Promise.all(rs.map((r) => settleInBackground(env, r, { actualMicros: 100, isByok: false })));
    expect((await readLedgerStatus(env, acct.accountId, [key.hash])).account).toMatchObject({
      reserved: 0,
      spent: 300,
    });
    await bg.done();
  });

  it("is not refused while another isolate's block may hold the room: it waits for the block to end", async () => {
    // $0.01 = 10_000: another isolate takes a block of a quarter of it, then ends it 100 ms later.
    const { acct, key, auth } = await setup(0.01);
    const stub = ledgerFor(env, acct.accountId);
    const reply = await otherIsolateBlock(acct.accountId, key.hash);
    expect(reply.block?.sizeMicros).toBe(2_500);
    const blockId = reply.block!.blockId;
    const ending = new Promise((resolve) => setTimeout(resolve, 100)).then(() =>
      // The other isolate's request finished for 400 and its block closed.
      stub.settleAndReport({
        settles: [],
        reports: [{ blockId, seq: 1, chargedCredits: 400, chargedByok: 0, holding: 0, closed: true }],
      }),
    );
    const started = Date.now();
    // 9_000 fits only once the block's unused 2_100 is back: 10_000 - 400 = 9_600.
    const r = await admit(env, auth, request({ worstCaseMicros: 9_000 }));
    await ending;
    expect(r.reservedMicros).toBe(9_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(await raw(acct.accountId)).toMatchObject({ reserved: 9_000, spent: 400, balance: 600 });
  });

  it("is refused once no block anywhere can hold the room, within one block's time and its report's grace", async () => {
    const { acct, key, auth } = await setup(0.01);
    // Another isolate holds a block and is never heard from again.
    await otherIsolateBlock(acct.accountId, key.hash);
    const started = Date.now();
    const refused = await outcome(admit(env, auth, request({ worstCaseMicros: 9_000 })));
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(402);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(BLOCK_MS);
    // A block whose time ended still holds its room until its closing report, awaited CLOSE_REPORT_GRACE_MS.
    expect(waited).toBeLessThan(BLOCK_MS + BLOCK_GRACE_MS + CLOSE_REPORT_GRACE_MS + 1_000);
    expect(await raw(acct.accountId)).toMatchObject({ reserved: 2_500, spent: 0 });
  });
});
