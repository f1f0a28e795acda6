// Model-based test of blocks: isolates admitting and settling against room the ledger reserved for
// them, interleaved with direct admissions, reports riding on calls, clock steps past block ends,
// isolates lost with their state, the alarm and object restarts.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IsolateBlocks } from "../../src/billing/isolate-blocks";
import { LONGEST_REQUEST_MS } from "../../src/inference/deadlines";
import { BLOCK_GRACE_MS, BLOCK_MS } from "../../src/ledger/blocks";
import { budgetScope, keyScope, LEASE_MS, LedgerCore } from "../../src/ledger/core";
import type { FreeLimits } from "../../src/ledger/free-limits";
import type { Limit } from "../../src/ledger/meter";
import type { AdmitCommand, BudgetLimit, Carried, SettleCommand } from "../../src/ledger/types";
import { MemoryLedgerStore } from "./memory-store";

const LIMITS: FreeLimits = {
  perMinute: 1_000,
  perDayLowTier: 1_000,
  perDayHighTier: 1_000,
  tierThresholdMicros: 1,
  tierGraceMicros: 0,
};
const KEYS = ["k0", "k1"];
const BUDGET: BudgetLimit = {
  id: "g0",
  name: "team",
  limitMicros: 60_000,
  reset: "daily",
  includeByok: false,
};

type Op =
  | { t: "admit"; isolate: number; key: number; budget: boolean; amount: number; ask: boolean }
  | { t: "settle"; pick: number; fraction: number; byok: boolean; carry: boolean }
  | { t: "close"; isolate: number }
  | { t: "clock"; ms: number }
  | { t: "lose"; isolate: number }
  | { t: "alarm" }
  | { t: "restart" };

const opArb = (isolates: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({
        t: fc.constant("admit" as const),
        isolate: fc.integer({ min: 0, max: isolates - 1 }),
        key: fc.integer({ min: 0, max: 1 }),
        budget: fc.boolean(),
        amount: fc.integer({ min: 0, max: 3_000 }),
        ask: fc.boolean(),
      }),
    },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant("settle" as const),
        pick: fc.nat(),
        fraction: fc.double({ min: 0, max: 1, noNaN: true }),
        byok: fc.boolean(),
        carry: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ t: fc.constant("close" as const), isolate: fc.nat({ max: isolates - 1 }) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant("clock" as const),
        ms: fc.constantFrom(5, 50, BLOCK_MS / 2, BLOCK_MS, BLOCK_MS + BLOCK_GRACE_MS, 61_000, LEASE_MS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant("lose" as const), isolate: fc.nat({ max: isolates - 1 }) }),
    },
    { weight: 1, arbitrary: fc.constant({ t: "alarm" as const }) },
    { weight: 1, arbitrary: fc.constant({ t: "restart" as const }) },
  );

interface Isolate {
  blocks: IsolateBlocks;
  /** Settlements of direct reservations waiting to ride on this isolate's next call. */
  waiting: SettleCommand[];
  /** Credits charged by requests settled against its blocks, and what of that the ledger has. */
  localCharged: number;
  delivered: Map<string, number>;
  /** Model: the open block by key and limits, and the block each local request is held in. */
  open: Map<string, ModelBlock>;
  heldIn: Map<string, ModelBlock>;
}

/** The model of one isolate's blocks: plain figures, to say which admissions must stay local. */
interface ModelBlock {
  size: number;
  charged: number;
  held: number;
  openUntil: number;
  closed: boolean;
}

interface InFlight {
  cmd: AdmitCommand;
  isolate: number;
  /** Generation of the isolate at admission: a lost isolate's requests are gone with it. */
  life: number;
  /** When it was admitted: the gateway's deadlines end it within LONGEST_REQUEST_MS. */
  at: number;
}

const signature = (cmd: AdmitCommand) => JSON.stringify([cmd.keyHash, cmd.cap, cmd.budgets]);

function openModel(iso: Isolate, sig: string, size: number, held: number, now: number): ModelBlock {
  closeModel(iso, sig);
  const b = { size, charged: 0, held, openUntil: now + BLOCK_MS, closed: false };
  iso.open.set(sig, b);
  return b;
}

function closeModel(iso: Isolate, sig: string): void {
  const b = iso.open.get(sig);
  if (b) b.closed = true;
  iso.open.delete(sig);
}

describe("blocks (model-based)", () => {
  it("a reservation's default lease outlasts the longest request, so none is reclaimed under a running one", () => {
    expect(LEASE_MS).toBeGreaterThan(LONGEST_REQUEST_MS);
  });

  it("keep the identity, never pass a limit, refuse only what is short, and reconcile exactly", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }).chain((n) =>
          fc.tuple(
            fc.constant(n),
            fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 11, 31) }),
            fc.integer({ min: 0, max: 200_000 }),
            fc.option(
              fc.record({
                limitMicros: fc.integer({ min: 0, max: 100_000 }),
                reset: fc.constantFrom<Limit["reset"]>(null, "daily"),
                includeByok: fc.constant(false),
              }),
              { nil: null },
            ),
            fc.array(opArb(n), { minLength: 30, maxLength: 150, size: "max" }),
          ),
        ),
        ([n, start, purchased, cap, ops]) => {
          let now = start;
          const store = new MemoryLedgerStore();
          let core = new LedgerCore(store, LIMITS);
          core.setPurchased(purchased, now);
          const fresh = (): Isolate => ({
            blocks: new IsolateBlocks(),
            waiting: [],
            localCharged: 0,
            delivered: new Map(),
            open: new Map(),
            heldIn: new Map(),
          });
          const isolates = Array.from({ length: n }, fresh);
          const lives = Array.from({ length: n }, () => 0);
          const open = new Map<string, InFlight>();
          /** Credits charged by every settlement, less what died unreported with a lost isolate. */
          let expectedSpent = 0;
          let lost = false;
          let seq = 0;

          const call = <T>(i: number, fn: (carried: Carried) => T): T => {
            const iso = isolates[i]!;
            iso.blocks.closeExpired(now);
            for (const [sig, b] of iso.open) if (now >= b.openUntil) closeModel(iso, sig);
            const carried: Carried = { settles: iso.waiting.splice(0), reports: iso.blocks.take() };
            const out = fn(carried);
            iso.blocks.delivered(carried.reports);
            for (const r of carried.reports) iso.delivered.set(r.blockId, r.chargedCredits);
            return out;
          };
          /** A request's settlement through its isolate: in a block here, else sent now or carried later. */
          const settle = (id: string, r: InFlight, actual: number, byok: boolean, carry: boolean) => {
            open.delete(id);
            if (r.life !== lives[r.isolate]) return; // its isolate was lost: the alarm reclaims it
            const iso = isolates[r.isolate]!;
            const cmd: SettleCommand = { generationId: id, actualMicros: actual, byok };
            if (!byok) expectedSpent += actual;
            const mb = iso.heldIn.get(id);
            if (mb) {
              iso.heldIn.delete(id);
              mb.held -= r.cmd.worstCaseMicros;
              if (!byok) mb.charged += actual;
            }
            expect(iso.blocks.settle(cmd) !== undefined).toBe(mb !== undefined);
            if (mb) {
              if (!byok) iso.localCharged += actual;
            } else if (carry) iso.waiting.push(cmd);
            else core.settle(cmd, now);
          };
          const limitsOf = (key: string, budget: boolean) => [
            ...(cap ? [{ scope: keyScope(key), limit: cap }] : []),
            ...(budget ? [{ scope: budgetScope(BUDGET.id), limit: BUDGET as Limit }] : []),
          ];

          for (const op of ops) {
            const watched = KEYS.flatMap((k) => limitsOf(k, false)).concat(limitsOf("", true).slice(-1));
            const before = watched.map((w) => core.committed(w.scope, w.limit, now));

            if (op.t === "admit") {
              const iso = isolates[op.isolate]!;
              const cmd: AdmitCommand = {
                generationId: `gen-${seq++}`,
                keyHash: KEYS[op.key]!,
                cap,
                budgets: op.budget ? [BUDGET] : [],
                worstCaseMicros: op.amount,
                byok: false,
                freeModel: false,
              };
              const sig = signature(cmd);
              const mb = iso.open.get(sig);
              const fitsBlock =
                mb != null && now < mb.openUntil && mb.size - mb.charged - mb.held >= cmd.worstCaseMicros;
              let outcome = iso.blocks.admit(cmd, now);
              // Local exactly when the isolate's open block for these limits is in time and has the room.
              expect(outcome !== undefined).toBe(fitsBlock);
              if (outcome && mb) {
                mb.held += cmd.worstCaseMicros;
                iso.heldIn.set(cmd.generationId, mb);
              }
              const asks = outcome && op.ask ? iso.blocks.renewals(cmd, now) : [];
              if (asks.length > 0) {
                // The next blocks, asked for ahead of time in the admitted request's background: this
                // key's, and every other open block's here that used a quarter of its time or half its room.
                const used = (b: ModelBlock, share: number) =>
                  now >= b.openUntil - BLOCK_MS * (1 - share) || b.size - b.charged - b.held < b.size / 2;
                expect(used(iso.open.get(sig)!, 1 / 2)).toBe(true);
                expect(asks[0]!.template).toBe(cmd);
                for (const ask of asks) {
                  const b = iso.open.get(signature(ask.template))!;
                  expect(now < b.openUntil && used(b, 1 / 4)).toBe(true);
                }
                const grants = call(op.isolate, (carried) => core.blocks(asks, carried, now));
                asks.forEach((ask, i) => {
                  iso.blocks.answered(ask.template, grants[i], now, false);
                  if (grants[i]) openModel(iso, signature(ask.template), grants[i]!.sizeMicros, 0, now);
                });
              }
              if (!outcome) {
                const ask = () => {
                  const want = op.ask ? iso.blocks.want(cmd) : undefined;
                  const reply = call(op.isolate, (carried) => core.admitBatch([cmd], carried, want, now));
                  if (want) iso.blocks.answered(cmd, reply.block, now, true);
                  if (reply.block) {
                    expect(reply.block.sizeMicros).toBeGreaterThanOrEqual(2 * cmd.worstCaseMicros);
                    const held = openModel(iso, sig, reply.block.sizeMicros, cmd.worstCaseMicros, now);
                    iso.heldIn.set(cmd.generationId, held);
                  }
                  return reply.outcomes[0]!;
                };
                // Asked with this isolate's blocks left open; told "retry" while one of them was open,
                // the isolate closes them all and asks again at once (ledger-client.ts).
                outcome = ask();
                if (!outcome.ok && outcome.retryAt != null) {
                  const hadOpen = iso.open.size > 0;
                  expect(iso.blocks.closeOpen()).toBe(hadOpen);
                  for (const s of [...iso.open.keys()]) closeModel(iso, s);
                  if (hadOpen) outcome = ask();
                }
                if (!outcome.ok && outcome.retryAt == null && n === 1 && !lost) {
                  // One isolate, everything it owes carried: a refusal means the room really is short.
                  const a = core.account();
                  const short =
                    a.balance < cmd.worstCaseMicros ||
                    a.balance <= 0 ||
                    limitsOf(cmd.keyHash, op.budget).some((w) => {
                      const used = core.committed(w.scope, w.limit, now);
                      return used >= w.limit.limitMicros || used + cmd.worstCaseMicros > w.limit.limitMicros;
                    });
                  expect(short).toBe(true);
                }
                if (!outcome.ok && outcome.retryAt != null) {
                  // Told to retry only while another isolate's (or a lost one's) block is open at the ledger.
                  expect(outcome.retryAt).toBeGreaterThan(now);
                  expect(n > 1 || lost).toBe(true);
                }
              }
              if (outcome.ok)
                open.set(cmd.generationId, { cmd, isolate: op.isolate, life: lives[op.isolate]!, at: now });
            } else if (op.t === "settle") {
              const ids = [...open.keys()];
              if (ids.length === 0) continue;
              const id = ids[op.pick % ids.length]!;
              const r = open.get(id)!;
              settle(id, r, Math.floor(r.cmd.worstCaseMicros * op.fraction), op.byok, op.carry);
            } else if (op.t === "close") {
              // A block's closer (or a settlement's send) when nothing else carried its reports.
              call(op.isolate, (carried) => core.settleAndReport(carried, now));
            } else if (op.t === "clock") {
              const target = now + op.ms;
              // Each block's closer (the granting request's background) closes it and reports when its
              // time ends, in time order.
              const ends = isolates
                .flatMap((iso, i) => [...iso.open.values()].map((b) => ({ i, at: b.openUntil })))
                .filter((e) => e.at <= target)
                .sort((a, b) => a.at - b.at);
              for (const e of ends) {
                now = Math.max(now, e.at);
                call(e.i, (carried) => core.settleAndReport(carried, now));
              }
              // The gateway's deadlines end every request older than LONGEST_REQUEST_MS (charged up to
              // its worst case), and an isolate sends what it owes within ~20 ms of a settlement: a step
              // that long first lets both happen (its ledger calls carry them).
              const overdue = [...open].filter(([, r]) => target - r.at > LONGEST_REQUEST_MS);
              for (const [id, r] of overdue) settle(id, r, r.cmd.worstCaseMicros, false, true);
              if (overdue.length > 0 || op.ms >= 61_000) {
                for (let i = 0; i < isolates.length; i++)
                  call(i, (carried) => core.settleAndReport(carried, now));
              }
              now = target;
            } else if (op.t === "lose") {
              const iso = isolates[op.isolate]!;
              // What the ledger never heard of dies with the isolate (as with any settlement not yet sent).
              const delivered = [...iso.delivered.values()].reduce((s, c) => s + c, 0);
              expectedSpent -= iso.localCharged - delivered;
              for (const s of iso.waiting) if (!s.byok) expectedSpent -= s.actualMicros;
              isolates[op.isolate] = fresh();
              lives[op.isolate]!++;
              lost = true;
            } else if (op.t === "alarm") {
              core.reclaim(now);
            } else {
              core = new LedgerCore(store, LIMITS);
            }

            const a = core.account();
            expect(a.purchased).toBe(a.balance + a.reserved + a.spent);
            expect(a.reserved).toBeGreaterThanOrEqual(0);
            // No step pushes a limited window past its limit (settles never exceed the reservation here).
            watched.forEach((w, i) => {
              const after = core.committed(w.scope, w.limit, now);
              expect(after).toBeLessThanOrEqual(Math.max(before[i]!, w.limit.limitMicros));
            });
          }

          // Drain: every request still in flight settles at its worst case, every isolate reports.
          for (const [id, r] of open) {
            if (r.life !== lives[r.isolate]) continue;
            const iso = isolates[r.isolate]!;
            const cmd = { generationId: id, actualMicros: r.cmd.worstCaseMicros, byok: false };
            expectedSpent += cmd.actualMicros;
            if (!iso.blocks.settle(cmd)) iso.waiting.push(cmd);
          }
          now += BLOCK_MS + BLOCK_GRACE_MS;
          for (let i = 0; i < isolates.length; i++) call(i, (carried) => core.settleAndReport(carried, now));
          now += 24 * 3_600_000 + LEASE_MS;
          core.reclaim(now);
          const a = core.account();
          expect(a.reserved).toBe(0);
          expect(a.purchased).toBe(a.balance + a.spent);
          // Exact: every credit charge reached the ledger once, except what died unreported with an isolate.
          expect(a.spent).toBe(expectedSpent);
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);
});
