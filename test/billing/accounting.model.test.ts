// Model-based test of the ledger's pure core: random reserve/settle/release/cap-change/clock/alarm/restart runs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { worded } from "../../src/billing/refusals";
import { budgetScope, keyScope, LEASE_MS, LedgerCore } from "../../src/ledger/core";
import type { FreeLimits } from "../../src/ledger/free-limits";
import type { Bucket, Limit } from "../../src/ledger/meter";
import type { AdmitCommand } from "../../src/ledger/types";
import { type Window, windowStart } from "../../src/ledger/windows";
import { MemoryLedgerStore } from "./memory-store";

const LIMITS: FreeLimits = {
  perMinute: 3,
  perDayLowTier: 5,
  perDayHighTier: 8,
  tierThresholdMicros: 2_000,
  tierGraceMicros: 1_000,
};
const KEYS = ["k0", "k1"];
const BUDGETS = [
  { id: "g0", name: "daily team budget", limitMicros: 600, reset: "daily" as const, includeByok: false },
  { id: "g1", name: "lifetime budget", limitMicros: 1_500, reset: null, includeByok: true },
];

type Cmd =
  | { t: "admit"; key: number; budgets: boolean[]; amount: number; byok: boolean; free: boolean }
  | { t: "settle"; pick: number; fraction: number }
  | { t: "release"; pick: number }
  | { t: "cap"; key: number; cap: Limit | null }
  | { t: "clock"; ms: number }
  | { t: "purchase"; amount: number }
  | { t: "alarm" }
  | { t: "restart" };

const limitArb: fc.Arbitrary<Limit | null> = fc.option(
  fc.record({
    limitMicros: fc.integer({ min: 0, max: 1_500 }),
    reset: fc.constantFrom<Window | null>(null, "daily", "weekly", "monthly"),
    includeByok: fc.boolean(),
  }),
);

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant("admit" as const),
      key: fc.integer({ min: 0, max: 1 }),
      budgets: fc.tuple(fc.boolean(), fc.boolean()),
      amount: fc.integer({ min: 0, max: 400 }),
      byok: fc.boolean(),
      free: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("settle" as const),
      pick: fc.nat(),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("release" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant("cap" as const),
      key: fc.integer({ min: 0, max: 1 }),
      cap: limitArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("clock" as const),
      ms: fc.constantFrom(
        1_000,
        20_000,
        61_000,
        3_600_000,
        23 * 3_600_000,
        3 * 86_400_000,
        40 * 86_400_000,
        LEASE_MS,
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant("purchase" as const), amount: fc.integer({ min: 0, max: 1_500 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "alarm" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "restart" as const }) },
);

interface Open {
  id: string;
  key: string;
  budgetIds: string[];
  amount: number;
  bucket: Bucket;
  expiresAt: number;
}

/** The model: plain lists, no windows bookkeeping, spend recomputed from events each time. */
class Model {
  purchased = 0;
  spent = 0;
  open = new Map<string, Open>();
  closed: string[] = [];
  events: Array<{ scope: string; bucket: Bucket; at: number; amount: number }> = [];
  free: number[] = [];
  caps: Array<Limit | null> = [null, null];

  spentIn(scope: string, bucket: Bucket, reset: Window | null, now: number): number {
    return this.events
      .filter((e) => e.scope === scope && e.bucket === bucket)
      .filter((e) => reset == null || windowStart(reset, e.at) === windowStart(reset, now))
      .reduce((s, e) => s + e.amount, 0);
  }

  reserved(scope: string, bucket: Bucket): number {
    let sum = 0;
    for (const r of this.open.values()) {
      if (r.bucket === bucket && (keyScope(r.key) === scope || r.budgetIds.map(budgetScope).includes(scope)))
        sum += r.amount;
    }
    return sum;
  }

  committed(scope: string, limit: Limit, now: number): number {
    const part = (b: Bucket) => this.spentIn(scope, b, limit.reset, now) + this.reserved(scope, b);
    return part("credits") + (limit.includeByok ? part("byok") : 0);
  }

  creditsReserved(): number {
    return [...this.open.values()].filter((r) => r.bucket === "credits").reduce((s, r) => s + r.amount, 0);
  }
}

function fits(model: Model, scope: string, limit: Limit, amount: number, now: number): boolean {
  const used = model.committed(scope, limit, now);
  return used < limit.limitMicros && used + amount <= limit.limitMicros;
}

describe("ledger accounting core (model-based)", () => {
  it("keeps purchased == balance + reserved + spent and never lets a window pass its limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 11, 31) }),
        fc.integer({ min: 0, max: 5_000 }),
        fc.array(cmdArb, { minLength: 20, maxLength: 100, size: "max" }),
        (start, initialCredits, cmds) => {
          let now = start;
          const store = new MemoryLedgerStore();
          let core = new LedgerCore(store, LIMITS);
          const model = new Model();
          core.setPurchased(initialCredits, now);
          model.purchased = initialCredits;
          let seq = 0;

          for (const cmd of cmds) {
            const watched = KEYS.flatMap((k, i) => {
              const cap = model.caps[i];
              return cap ? [{ scope: keyScope(k), limit: cap }] : [];
            }).concat(BUDGETS.map((b) => ({ scope: budgetScope(b.id), limit: b as Limit })));
            const before = watched.map((w) => model.committed(w.scope, w.limit, now));

            if (cmd.t === "admit") {
              const keyHash = KEYS[cmd.key]!;
              const budgets = BUDGETS.filter((_, i) => cmd.budgets[i]);
              const bucket: Bucket = cmd.byok ? "byok" : "credits";
              const freeGated = cmd.free && !cmd.byok;
              const admitCmd: AdmitCommand = {
                generationId: `gen-${seq++}`,
                keyHash,
                cap: model.caps[cmd.key] ?? null,
                budgets,
                worstCaseMicros: cmd.amount,
                byok: cmd.byok,
                freeModel: freeGated,
              };
              const balance = model.purchased - model.spent - model.creditsReserved();
              const cap = model.caps[cmd.key];
              const dayCeiling = model.purchased >= 1_000 ? 8 : 5;
              const today = model.free.filter(
                (t) => windowStart("daily", t) === windowStart("daily", now),
              ).length;
              const thisMinute = model.free.filter(
                (t) => Math.floor(t / 60_000) === Math.floor(now / 60_000),
              ).length;
              const expectOk =
                (bucket === "byok" || (balance > 0 && cmd.amount <= balance)) &&
                (!cap ||
                  (bucket === "byok" && !cap.includeByok) ||
                  fits(model, keyScope(keyHash), cap, cmd.amount, now)) &&
                budgets.every(
                  (b) =>
                    (bucket === "byok" && !b.includeByok) ||
                    fits(model, budgetScope(b.id), b, cmd.amount, now),
                ) &&
                (!freeGated || (today < dayCeiling && thisMinute < LIMITS.perMinute));
              // The ledger answers reasons and figures; the worker words them (status, headers).
              const admitted = core.admit(admitCmd, now);
              const out = admitted.ok ? admitted : { ...admitted, rejection: worded(admitted.rejection) };
              expect(out.ok).toBe(expectOk);
              if (out.ok) {
                model.open.set(admitCmd.generationId, {
                  id: admitCmd.generationId,
                  key: keyHash,
                  budgetIds: budgets.map((b) => b.id),
                  amount: cmd.amount,
                  bucket,
                  expiresAt: now + LEASE_MS,
                });
                if (freeGated) model.free.push(now);
              } else if (out.rejection.status === 429) {
                expect(out.rejection.headers?.["Retry-After"]).toMatch(/^\d+$/);
                expect(Number(out.rejection.headers?.["X-RateLimit-Reset"])).toBeGreaterThan(now);
              }
            } else if (cmd.t === "settle" || cmd.t === "release") {
              const ids = [...model.open.keys(), ...model.closed];
              if (ids.length === 0) continue;
              const id = ids[cmd.pick % ids.length]!;
              const r = model.open.get(id);
              const actual = r && cmd.t === "settle" ? Math.floor(r.amount * cmd.fraction) : 0;
              const res = core.settle(
                { generationId: id, actualMicros: actual, byok: r?.bucket === "byok" },
                now,
              );
              if (r) {
                expect(res.status).toBe("settled");
                model.open.delete(id);
                model.closed.push(id);
                if (actual > 0) {
                  for (const scope of [keyScope(r.key), ...r.budgetIds.map(budgetScope)]) {
                    model.events.push({ scope, bucket: r.bucket, at: now, amount: actual });
                  }
                  if (r.bucket === "credits") model.spent += actual;
                }
              } else {
                expect(res.status).not.toBe("settled");
                expect(res.chargedMicros).toBe(0);
              }
            } else if (cmd.t === "cap") {
              model.caps[cmd.key] = cmd.cap;
              continue;
            } else if (cmd.t === "clock") {
              now += cmd.ms;
              continue;
            } else if (cmd.t === "purchase") {
              model.purchased += cmd.amount;
              core.setPurchased(model.purchased, now);
            } else if (cmd.t === "alarm") {
              core.reclaim(now);
              for (const [id, r] of model.open) {
                if (r.expiresAt <= now) {
                  model.open.delete(id);
                  model.closed.push(id);
                }
              }
            } else {
              core = new LedgerCore(store, LIMITS);
            }

            // Money: the identity, and every figure equal to the model's.
            const a = core.account();
            expect(a.purchased).toBe(model.purchased);
            expect(a.reserved).toBe(model.creditsReserved());
            expect(a.spent).toBe(model.spent);
            expect(a.purchased).toBe(a.balance + a.reserved + a.spent);
            for (const k of KEYS) {
              const u = core.keyUsage(k, now);
              for (const w of ["daily", "weekly", "monthly"] as const) {
                expect(u.usage[w]).toBe(model.spentIn(keyScope(k), "credits", w, now));
                expect(u.byok[w]).toBe(model.spentIn(keyScope(k), "byok", w, now));
              }
              expect(u.usage.total).toBe(model.spentIn(keyScope(k), "credits", null, now));
              expect(u.reserved).toEqual({
                credits: model.reserved(keyScope(k), "credits"),
                byok: model.reserved(keyScope(k), "byok"),
              });
            }
            // No step pushes a limited window past its limit (settles never exceed the reservation here).
            watched.forEach((w, i) => {
              const after = core.committed(w.scope, w.limit, now);
              expect(after).toBe(model.committed(w.scope, w.limit, now));
              expect(after).toBeLessThanOrEqual(Math.max(before[i]!, w.limit.limitMicros));
            });
            expect(core.freeDaily(now).used).toBeLessThanOrEqual(core.freeDaily(now).limit);
          }
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);
});
