// Reclaim charges from the generation records: usage settled in an isolate that died before it
// reported is neither lost nor charged twice, and never beyond what was reserved.
import {
  createExecutionContext,
  env,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import app from "../../src/app";
import { dropIsolateState, ledgerFor } from "../../src/billing/ledger-client";
import { getDb, tables } from "../../src/db/client";
import { UNCLAIMED_BLOCK_MS } from "../../src/ledger/blocks";
import { LEASE_MS, LedgerCore, leaseFrom } from "../../src/ledger/core";
import type { AdmitCommand, BlockReport } from "../../src/ledger/types";
import { createAccount } from "../helpers/accounts";
import { BASE } from "../helpers/http";
import { countingEnv } from "./counting-env";
import { MemoryLedgerStore } from "./memory-store";

const LIMITS = {
  perMinute: 10,
  perDayLowTier: 10,
  perDayHighTier: 10,
  tierThresholdMicros: 1,
  tierGraceMicros: 0,
};
const T0 = 1_800_000_000_000;

function core() {
  const store = new MemoryLedgerStore();
  const ledger = new LedgerCore(store, LIMITS);
  ledger.setPurchased(1_000_000, T0);
  return { store, ledger };
}

const cmd = (over: Partial<AdmitCommand> = {}): AdmitCommand => ({
  generationId: crypto.randomUUID(),
  keyHash: "k",
  cap: null,
  budgets: [],
  worstCaseMicros: 1_000,
  byok: false,
  freeModel: false,
  ...over,
});

const report = (blockId: string, seq: number, chargedCredits: number, holding: number): BlockReport => ({
  blockId,
  seq,
  chargedCredits,
  chargedByok: 0,
  holding,
  closed: false,
});

describe("the ledger core's reclaim", () => {
  it("charges a reclaimed request what its record says, and a late settle only the rest", () => {
    const { ledger } = core();
    const c = cmd();
    ledger.admit(c, T0);
    ledger.reclaim(T0 + LEASE_MS, new Map([[c.generationId, { credits: 600, byok: 0 }]]));
    expect(ledger.keyUsage("k", T0 + LEASE_MS).usage.total).toBe(600);
    expect(ledger.account().reserved).toBe(0);
    const late = ledger.settle(
      { generationId: c.generationId, actualMicros: 700, byok: false },
      T0 + LEASE_MS,
    );
    expect(late).toEqual({ status: "late", chargedMicros: 100 });
    expect(ledger.keyUsage("k", T0 + LEASE_MS).usage.total).toBe(700);
  });

  it("charges nothing for a request with no record, as before", () => {
    const { ledger } = core();
    ledger.admit(cmd(), T0);
    ledger.reclaim(T0 + LEASE_MS);
    expect(ledger.keyUsage("k", T0 + LEASE_MS).usage.total).toBe(0);
    expect(ledger.account()).toMatchObject({ reserved: 0, spent: 0 });
  });

  it("never charges a request more than it reserved", () => {
    const { ledger } = core();
    const c = cmd({ worstCaseMicros: 500 });
    ledger.admit(c, T0);
    ledger.reclaim(T0 + LEASE_MS, new Map([[c.generationId, { credits: 9_999, byok: 0 }]]));
    expect(ledger.keyUsage("k", T0 + LEASE_MS).usage.total).toBe(500);
  });

  it("charges a block its records less what its reports charged; a report after it charges only the excess", () => {
    const { ledger, store } = core();
    const blockId = crypto.randomUUID();
    const asker = cmd();
    const reply = ledger.admitBatch(
      [asker],
      { settles: [], reports: [] },
      { blockId, sizeMicros: 100_000 },
      T0,
    );
    expect(reply.block?.blockId).toBe(blockId);
    // The isolate reported 3 000 charged, then settled 2 500 more that it never reported, and died.
    ledger.settleAndReport({ settles: [], reports: [report(blockId, 5, 3_000, 1_000)] }, T0 + 500);
    const reserved = store.reservation(blockId)!;
    ledger.reclaim(reserved.expiresAt, new Map([[blockId, { credits: 5_500, byok: 0 }]]));
    expect(ledger.keyUsage("k", reserved.expiresAt).usage.total).toBe(5_500);
    expect(ledger.account().reserved).toBe(0);
    // A report carrying the same settlements arrives late (the isolate was only slow): no double charge.
    ledger.settleAndReport({ settles: [], reports: [report(blockId, 9, 5_500, 0)] }, reserved.expiresAt + 1);
    expect(ledger.keyUsage("k", reserved.expiresAt + 1).usage.total).toBe(5_500);
  });
});

describe("an isolate that dies before it reports", () => {
  it("loses no usage: after the lease, charges == reported costs == generation records", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    // The isolate's reports never reach the ledger, then the isolate's memory is gone.
    const counted = countingEnv((method) => method === "settleAndReport");
    const ctx = createExecutionContext();
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        app.fetch(
          new Request(`${BASE}/embeddings`, {
            method: "POST",
            headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
            body: JSON.stringify({ model: "sandbox/embed-small", input: `text number ${i} to embed` }),
          }),
          { ...counted.env, REGION: "global" },
          ctx,
        ),
      ),
    );
    const costs = await Promise.all(
      answers.map(async (res) => {
        expect(res.status).toBe(200);
        return ((await res.json()) as { usage: { cost: number } }).usage.cost;
      }),
    );
    await waitOnExecutionContext(ctx);
    dropIsolateState();
    expect(counted.calls.some((c) => c.method === "settleAndReport")).toBe(true);

    const records = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.keyHash, acct.apiKeyHash));
    expect(records).toHaveLength(24);
    expect(records.filter((r) => r.blockId != null).length).toBeGreaterThan(0);
    const recorded = records.reduce((sum, r) => sum + r.costMicros, 0);
    const reported = Math.round(costs.reduce((sum, c) => sum + c, 0) * 1_000_000);
    expect(recorded).toBe(reported);

    const ledger = ledgerFor(env, acct.accountId);
    const before = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(before.keys[acct.apiKeyHash]!.usage.total).toBeLessThan(reported);
    await runInDurableObject(ledger, (instance) => {
      instance.clock = () => Date.now() + Math.max(LEASE_MS, UNCLAIMED_BLOCK_MS) + 1_000;
    });
    expect(await runDurableObjectAlarm(ledger)).toBe(true);
    const after = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(after.keys[acct.apiKeyHash]!.usage.total).toBe(reported);
    expect(after.keys[acct.apiKeyHash]!.reserved).toEqual({ credits: 0, byok: 0 });
    expect(after.account).toMatchObject({ spent: reported, reserved: 0 });
  });
});

describe("a shortened lease (LEDGER_LEASE_MS, for the kill tests)", () => {
  it("only shortens: at least 1 s, and anything else keeps LEASE_MS", () => {
    expect(leaseFrom("8000")).toBe(8_000);
    expect(leaseFrom(undefined)).toBe(LEASE_MS);
    for (const bad of ["", "abc", "999", "1500.5", String(LEASE_MS), String(LEASE_MS * 2), "-5000"])
      expect(leaseFrom(bad)).toBe(LEASE_MS);
  });

  it("reclaims requests and unclaimed blocks after it, charging from the records", () => {
    const store = new MemoryLedgerStore();
    const ledger = new LedgerCore(store, LIMITS, 8_000);
    ledger.setPurchased(1_000_000, T0);
    const single = cmd();
    expect(ledger.admit(single, T0)).toMatchObject({ ok: true });
    const asker = cmd();
    const reply = ledger.admitBatch(
      [asker],
      { settles: [], reports: [] },
      { blockId: "b", sizeMicros: 10_000 },
      T0,
    );
    expect(reply.block?.blockId).toBe("b");
    // A video job names its own lease and keeps it.
    const video = cmd({ leaseMs: 3 * 3_600_000 });
    ledger.admit(video, T0);
    expect(ledger.reclaim(T0 + 7_999)).toBe(0);
    const recorded = new Map([
      [single.generationId, { credits: 700, byok: 0 }],
      ["b", { credits: 900, byok: 0 }],
    ]);
    expect(ledger.reclaim(T0 + 8_000, recorded)).toBe(2);
    expect(ledger.account()).toMatchObject({ spent: 1_600, reserved: 1_000 });
  });
});

describe("late records (the queue's consumer reports records written after a reclaim)", () => {
  it("charge a reclaimed block only what its records show beyond its reports and its reclaim, once", () => {
    const { store, ledger } = core();
    const asker = cmd();
    const reply = ledger.admitBatch(
      [asker],
      { settles: [], reports: [] },
      { blockId: "blk", sizeMicros: 10_000 },
      T0,
    );
    expect(reply.block?.blockId).toBe("blk");
    // Reported: 3 000 charged. One of those requests' records is still queued when the lease ends.
    ledger.settleAndReport({ settles: [], reports: [report("blk", 3, 3_000, 1_000)] }, T0 + 100);
    const at = store.reservation("blk")!.expiresAt;
    ledger.reclaim(at, new Map([["blk", { credits: 2_000, byok: 0 }]]));
    const usage = () => ledger.keyUsage("k", at + 10).usage.total;
    expect(usage()).toBe(3_000);
    const note = (generationId: string) => ({ generationId, blockId: "blk", costMicros: 1_000, byok: false });
    // A batch's records of one block (hundreds, for a busy key) look the block up once.
    const lookups = vi.spyOn(store, "settled");
    expect(ledger.noteRecords([note("a"), note("a2"), note("a3")], at + 1)).toEqual(["blk"]);
    expect(lookups.mock.calls.filter(([id]) => id === "blk")).toHaveLength(1);
    lookups.mockRestore();
    // That record lands: already charged by the report.
    ledger.chargeLateRecords(new Map([["blk", { credits: 3_000, byok: 0 }]]), at + 1);
    expect(usage()).toBe(3_000);
    // A request settled and never reported lands: charged once, however often it is reported.
    ledger.chargeLateRecords(new Map([["blk", { credits: 3_500, byok: 0 }]]), at + 2);
    ledger.chargeLateRecords(new Map([["blk", { credits: 3_500, byok: 0 }]]), at + 3);
    expect(usage()).toBe(3_500);
    // The isolate's last report comes after all: nothing more.
    ledger.settleAndReport({ settles: [], reports: [report("blk", 9, 3_500, 0)] }, at + 4);
    expect(usage()).toBe(3_500);
    expect(ledger.account()).toMatchObject({ spent: 3_500, reserved: 0 });
  });

  it("leave an open block to its reports, and settle a request's own reservation like its settlement", () => {
    const { ledger } = core();
    const reply = ledger.admitBatch(
      [cmd()],
      { settles: [], reports: [] },
      { blockId: "open", sizeMicros: 10_000 },
      T0,
    );
    expect(reply.block).toBeDefined();
    const single = cmd();
    ledger.admit(single, T0);
    const notes = [
      { generationId: "x", blockId: "open", costMicros: 500, byok: false },
      { generationId: single.generationId, blockId: null, costMicros: 700, byok: false },
    ];
    expect(ledger.noteRecords(notes, T0 + 1)).toEqual([]);
    expect(ledger.noteRecords(notes, T0 + 2)).toEqual([]);
    expect(ledger.keyUsage("k", T0 + 3).usage.total).toBe(700);
    expect(
      ledger.settle({ generationId: single.generationId, actualMicros: 700, byok: false }, T0 + 4),
    ).toEqual({
      status: "duplicate",
      chargedMicros: 0,
    });
  });
});
