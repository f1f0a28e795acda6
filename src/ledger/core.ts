// The ledger's pure core: admit (check every limit), reserve, settle, reclaim, over a synchronous store.
// It answers reasons and figures, never HTTP. The invariant it keeps, after every step:
//
//   purchased = balance + reserved + spent
//
// (credits only, micro-dollars): a reservation moves room from the balance to `reserved`, a
// settlement moves its actual cost to `spent` and gives the rest back; asserted in
// test/billing/accounting.model.test.ts and blocks.model.test.ts.
import { applyReport, BLOCK_GRACE_MS, BLOCK_MS, grantBlock, retryAt, UNCLAIMED_BLOCK_MS } from "./blocks";
import { checkFree, countFree, type FreeDaily, type FreeLimits, freeDaily } from "./free-limits";
import { addSpend, type Bucket, committed, emptyMeter, figures, type Limit, resetsAt } from "./meter";
import { chargeLateRecords, noteRecords, reclaimExpired, settledOf } from "./reclaim";
import type {
  AccountState,
  AdmitCommand,
  AdmitOutcome,
  AdmitReply,
  BlockAsk,
  BlockGrant,
  BlockWant,
  Carried,
  KeyUsage,
  LedgerStore,
  RecordedCosts,
  RecordNote,
  Rejection,
  ReservationRecord,
  SettleCommand,
  SettleResult,
} from "./types";

/**
 * A reservation not settled within its lease is reclaimed by the ledger's alarm. Longer than any
 * request runs (inference/deadlines.ts, LONGEST_REQUEST_MS: 19 minutes), so only a request whose
 * isolate died, or whose settlement never got through, is reclaimed.
 */
export const LEASE_MS = 20 * 60_000;
/** Longest lease a caller may ask for (long-running video jobs). */
export const MAX_LEASE_MS = 24 * 3_600_000;

/**
 * The lease of a reservation that names none, from the `LEDGER_LEASE_MS` variable: only shorter than
 * LEASE_MS (at least 1 s), so the kill tests can watch reclaims within seconds; LEASE_MS otherwise.
 */
export function leaseFrom(value: string | undefined): number {
  const ms = Number(value);
  return Number.isInteger(ms) && ms >= 1_000 && ms < LEASE_MS ? ms : LEASE_MS;
}

export const keyScope = (hash: string) => `key:${hash}`;
export const budgetScope = (id: string) => `guardrail:${id}`;

export class LedgerCore {
  /** No blocks are granted until then: someone was told to retry, so room is short. */
  private contendedUntil = 0;

  constructor(
    readonly store: LedgerStore,
    private readonly limits: FreeLimits,
    /** Default lease (LEASE_MS unless shortened, see leaseFrom); an unclaimed block waits no longer. */
    private readonly leaseMs: number = LEASE_MS,
  ) {}

  /** Records what the call carries: settlements and block reports, before anything is admitted. */
  settleAndReport(carried: Carried, now: number): void {
    for (const cmd of carried.settles) this.settle(cmd, now);
    for (const report of carried.reports) applyReport(this, report, now, this.leaseMs);
  }

  /**
   * One admission call: the carried work is recorded first, so the room it frees counts; then, if
   * the isolate asks, a block for the first command (which is then held in it); then each
   * admission in order, as separate calls would be.
   */
  admitBatch(cmds: AdmitCommand[], carried: Carried, want: BlockWant | undefined, now: number): AdmitReply {
    this.settleAndReport(carried, now);
    const first = cmds[0];
    const block =
      want && first && now >= this.contendedUntil
        ? grantBlock(this, first, want, first.worstCaseMicros, now, this.unclaimedMs())
        : undefined;
    const outcomes = cmds.map(
      (cmd, i): AdmitOutcome =>
        block && i === 0 ? { ok: true, reservedMicros: cmd.worstCaseMicros } : this.admit(cmd, now),
    );
    return block ? { outcomes, block } : { outcomes };
  }

  /**
   * New blocks, one per ask (each for requests like its template, already admitted against the
   * isolate's current block), granted before those run out so their requests never wait; the
   * carried work is recorded first. `skip`: asks that get none (say, made on a stale auth record).
   */
  blocks(
    asks: BlockAsk[],
    carried: Carried,
    now: number,
    skip?: (ask: BlockAsk) => boolean,
  ): (BlockGrant | undefined)[] {
    this.settleAndReport(carried, now);
    return asks.map((ask) =>
      now < this.contendedUntil || skip?.(ask)
        ? undefined
        : grantBlock(this, ask.template, ask.want, 0, now, this.unclaimedMs()),
    );
  }

  /** Checks every limit, then reserves worst-case cost in one synchronous step (atomic in a Durable Object). */
  admit(cmd: AdmitCommand, now: number): AdmitOutcome {
    const open = this.store.reservation(cmd.generationId);
    if (open) return { ok: true, reservedMicros: open.amount };
    if (this.store.settled(cmd.generationId)) {
      return { ok: false, rejection: { reason: "generation_reused", generationId: cmd.generationId } };
    }
    const amount = cmd.worstCaseMicros;
    const bucket: Bucket = cmd.byok ? "byok" : "credits";
    const rejection =
      this.checkBalance(bucket, amount, now) ??
      this.checkCap(cmd, bucket, amount, now) ??
      this.checkBudgets(cmd, bucket, amount, now) ??
      (cmd.freeModel ? checkFree(this.store, this.limits, now) : undefined);
    if (rejection) {
      const retry = retryAt(this.store, cmd, rejection, now);
      if (retry == null) return { ok: false, rejection };
      this.contendedUntil = now + 2 * (BLOCK_MS + BLOCK_GRACE_MS);
      return { ok: false, rejection, retryAt: retry };
    }

    const lease = Math.min(Math.max(cmd.leaseMs ?? this.leaseMs, 1_000), MAX_LEASE_MS);
    const record: ReservationRecord = {
      generationId: cmd.generationId,
      keyHash: cmd.keyHash,
      budgetIds: cmd.budgets.map((b) => b.id),
      amount,
      bucket,
      createdAt: now,
      expiresAt: now + lease,
    };
    this.store.putReservation(record);
    this.shiftReserved(record, amount);
    if (cmd.freeModel) countFree(this.store, now);
    return { ok: true, reservedMicros: amount };
  }

  /** Charges the actual cost and releases the reservation; idempotent by generation id. */
  settle(cmd: SettleCommand, now: number): SettleResult {
    const bucket: Bucket = cmd.byok ? "byok" : "credits";
    const open = this.store.reservation(cmd.generationId);
    if (open) {
      this.shiftReserved(open, -open.amount);
      this.store.deleteReservation(open.generationId);
      this.charge(open.keyHash, open.budgetIds, bucket, cmd.actualMicros, now);
      this.store.putSettled({ ...settledOf(open), state: "settled", at: now });
      return { status: "settled", chargedMicros: cmd.actualMicros };
    }
    const done = this.store.settled(cmd.generationId);
    if (done?.state === "reclaimed") {
      // The request outlived its lease but did run: its real cost is still owed, less what the
      // reclaim already charged from its generation record.
      const owed = Math.max(0, cmd.actualMicros - (done.charged ?? 0));
      this.charge(done.keyHash, done.budgetIds, bucket, owed, now);
      this.store.putSettled({ ...done, state: "settled", at: now });
      return { status: "late", chargedMicros: owed };
    }
    return { status: done ? "duplicate" : "unknown", chargedMicros: 0 };
  }

  /** Releases reservations whose lease ended, charged from the generation records (reclaim.ts). */
  reclaim(now: number, recorded: RecordedCosts = new Map()): number {
    return reclaimExpired(this, now, recorded);
  }

  /** Records the consumer wrote and reported; returns reclaimed blocks to re-read (reclaim.ts). */
  noteRecords(notes: RecordNote[], now: number): string[] {
    return noteRecords(this, notes, now);
  }

  /** Charges reclaimed blocks what their records, read again, show beyond what they were charged. */
  chargeLateRecords(recorded: RecordedCosts, now: number): void {
    chargeLateRecords(this, recorded, now);
  }

  private unclaimedMs(): number {
    return Math.min(UNCLAIMED_BLOCK_MS, this.leaseMs);
  }

  /** Records credits purchased as read from D1 at `now`. */
  setPurchased(purchased: number, now: number): void {
    this.store.putAccount({ ...this.store.account(), purchased, purchasedReadAt: now });
  }

  account(): AccountState & { balance: number } {
    const a = this.store.account();
    return { ...a, balance: a.purchased - a.spent - a.reserved };
  }

  keyUsage(hash: string, now: number): KeyUsage {
    const credits = this.store.meter(keyScope(hash), "credits");
    const byok = this.store.meter(keyScope(hash), "byok");
    return {
      usage: figures(credits, now),
      byok: figures(byok, now),
      reserved: { credits: credits?.reserved ?? 0, byok: byok?.reserved ?? 0 },
    };
  }

  /** Least room left now under the balance (credits), the key cap and every budget of `cmd`. */
  roomFor(cmd: AdmitCommand, now: number): number {
    const rooms = [this.account().balance];
    if (cmd.cap) rooms.push(cmd.cap.limitMicros - this.committed(keyScope(cmd.keyHash), cmd.cap, now));
    for (const b of cmd.budgets) rooms.push(b.limitMicros - this.committed(budgetScope(b.id), b, now));
    return Math.max(0, Math.min(...rooms));
  }

  /** Spend plus reservations counting against a limit of a scope now (for reads and tests). */
  committed(scope: string, limit: Limit, now: number): number {
    return committed(this.store.meter(scope, "credits"), this.store.meter(scope, "byok"), limit, now);
  }

  freeDaily(now: number): FreeDaily {
    return freeDaily(this.store, this.limits, now);
  }

  private checkBalance(bucket: Bucket, amount: number, now: number): Rejection | undefined {
    if (bucket === "byok") return undefined;
    const { balance } = this.account();
    if (balance > 0 && amount <= balance) return undefined;
    return { reason: "balance", at: now, worstCaseMicros: amount, remainingMicros: balance };
  }

  private checkCap(cmd: AdmitCommand, bucket: Bucket, amount: number, now: number): Rejection | undefined {
    const cap = cmd.cap;
    if (!cap || (bucket === "byok" && !cap.includeByok)) return undefined;
    const used = this.committed(keyScope(cmd.keyHash), cap, now);
    if (used < cap.limitMicros && used + amount <= cap.limitMicros) return undefined;
    return {
      reason: "key_cap",
      at: now,
      worstCaseMicros: amount,
      remainingMicros: Math.max(0, cap.limitMicros - used),
      limitMicros: cap.limitMicros,
      reset: cap.reset,
      resetsAt: resetsAt(cap, now),
    };
  }

  private checkBudgets(
    cmd: AdmitCommand,
    bucket: Bucket,
    amount: number,
    now: number,
  ): Rejection | undefined {
    for (const b of cmd.budgets) {
      if (bucket === "byok" && !b.includeByok) continue;
      const used = this.committed(budgetScope(b.id), b, now);
      if (used < b.limitMicros && used + amount <= b.limitMicros) continue;
      return {
        reason: "budget",
        at: now,
        worstCaseMicros: amount,
        remainingMicros: Math.max(0, b.limitMicros - used),
        limitMicros: b.limitMicros,
        resetsAt: resetsAt(b, now),
        guardrailId: b.id,
        guardrailName: b.name,
      };
    }
    return undefined;
  }

  /** Adds `delta` to the open reservations of every scope a reservation (or block) holds. */
  shiftReserved(r: Pick<ReservationRecord, "keyHash" | "budgetIds" | "bucket">, delta: number): void {
    if (delta === 0) return;
    for (const scope of scopesOf(r.keyHash, r.budgetIds)) {
      const m = this.store.meter(scope, r.bucket) ?? emptyMeter();
      this.store.putMeter(scope, r.bucket, { ...m, reserved: m.reserved + delta });
    }
    if (r.bucket === "credits") {
      const a = this.store.account();
      this.store.putAccount({ ...a, reserved: a.reserved + delta });
    }
  }

  /** Charges settled spend to a key, its budgets and (credits) the account. */
  charge(keyHash: string, budgetIds: string[], bucket: Bucket, amount: number, now: number): void {
    if (amount === 0) return;
    for (const scope of scopesOf(keyHash, budgetIds)) {
      this.store.putMeter(
        scope,
        bucket,
        addSpend(this.store.meter(scope, bucket) ?? emptyMeter(), amount, now),
      );
    }
    if (bucket === "credits") {
      const a = this.store.account();
      this.store.putAccount({ ...a, spent: a.spent + amount });
    }
  }
}

const scopesOf = (keyHash: string, budgetIds: string[]) => [keyScope(keyHash), ...budgetIds.map(budgetScope)];
