// The ledger's storage in its Durable Object's SQLite: the LedgerStore over the tables of sql-schema.ts.

import type { Bucket, Meter } from "./meter";
import { createSchema, num, type Row, str, toBlock, toReservation } from "./sql-schema";
import type {
  AccountState,
  BlockRecord,
  FreeCounters,
  LedgerStore,
  ReservationRecord,
  SettledRecord,
} from "./types";

/** Rows rewritten on every operation; inside transaction() they are kept here and written once at its end. */
interface HotRows {
  account?: AccountState;
  meters: Map<string, { scope: string; bucket: Bucket; meter: Meter }>;
  free?: FreeCounters;
}

export class SqlLedgerStore implements LedgerStore {
  private readonly sql: SqlStorage;
  private hot: HotRows | null = null;
  /**
   * The account row as last written or read: every admission reads it, and this object is its only
   * writer, so the SELECT is made once. Forgotten when a transaction fails (its write rolled back).
   */
  private accountRow: AccountState | null = null;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
    createSchema(this.sql);
  }

  /**
   * Runs `fn` as one SQLite transaction (all or nothing). The account, meter and free-counter rows
   * it changes are held in memory and written once, at its end, in the same synchronous step: a batch
   * of N operations on one key costs N reservation/settled row writes plus one write per hot row.
   */
  transaction<T>(fn: () => T): T {
    if (this.hot) return fn();
    try {
      return this.storage.transactionSync(() => {
        this.hot = { meters: new Map() };
        try {
          const out = fn();
          this.writeHotRows(this.hot);
          return out;
        } finally {
          this.hot = null;
        }
      });
    } catch (err) {
      this.accountRow = null;
      throw err;
    }
  }

  private writeHotRows(hot: HotRows): void {
    if (hot.account) this.writeAccount(hot.account);
    for (const { scope, bucket, meter } of hot.meters.values()) this.writeMeter(scope, bucket, meter);
    if (hot.free) this.writeFree(hot.free);
  }

  private first(query: string, ...params: SqlStorageValue[]): Row | undefined {
    return this.sql.exec<Row>(query, ...params).toArray()[0];
  }

  /** The account's authority version as last raised (0 = never). */
  authority(): number {
    return num(this.first("SELECT version FROM authority WHERE id = 1")?.version);
  }

  putAuthority(version: number): void {
    this.sql.exec("INSERT OR REPLACE INTO authority (id, version) VALUES (1, ?)", version);
  }

  account(): AccountState {
    if (this.hot?.account) return { ...this.hot.account };
    if (!this.accountRow) {
      const r = this.first("SELECT purchased, purchased_read_at, spent, reserved FROM account WHERE id = 1");
      this.accountRow = r
        ? {
            purchased: num(r.purchased),
            purchasedReadAt: num(r.purchased_read_at),
            spent: num(r.spent),
            reserved: num(r.reserved),
          }
        : { purchased: 0, purchasedReadAt: 0, spent: 0, reserved: 0 };
    }
    return { ...this.accountRow };
  }

  putAccount(a: AccountState): void {
    if (this.hot) this.hot.account = { ...a };
    else this.writeAccount(a);
  }

  private writeAccount(a: AccountState): void {
    this.accountRow = null;
    this.sql.exec(
      "INSERT OR REPLACE INTO account (id, purchased, purchased_read_at, spent, reserved) VALUES (1, ?, ?, ?, ?)",
      a.purchased,
      a.purchasedReadAt,
      a.spent,
      a.reserved,
    );
    this.accountRow = { ...a };
  }

  meter(scope: string, bucket: Bucket): Meter | undefined {
    const held = this.hot?.meters.get(`${scope}|${bucket}`);
    if (held) return { ...held.meter };
    const r = this.first("SELECT * FROM meters WHERE scope = ? AND bucket = ?", scope, bucket);
    if (!r) return undefined;
    return {
      total: num(r.total),
      daily: num(r.daily),
      dailyStart: num(r.daily_start),
      weekly: num(r.weekly),
      weeklyStart: num(r.weekly_start),
      monthly: num(r.monthly),
      monthlyStart: num(r.monthly_start),
      reserved: num(r.reserved),
    };
  }

  putMeter(scope: string, bucket: Bucket, m: Meter): void {
    if (this.hot) this.hot.meters.set(`${scope}|${bucket}`, { scope, bucket, meter: { ...m } });
    else this.writeMeter(scope, bucket, m);
  }

  private writeMeter(scope: string, bucket: Bucket, m: Meter): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO meters
        (scope, bucket, total, daily, daily_start, weekly, weekly_start, monthly, monthly_start, reserved)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      scope,
      bucket,
      m.total,
      m.daily,
      m.dailyStart,
      m.weekly,
      m.weeklyStart,
      m.monthly,
      m.monthlyStart,
      m.reserved,
    );
  }

  reservation(id: string): ReservationRecord | undefined {
    const r = this.first("SELECT * FROM reservations WHERE generation_id = ?", id);
    return r && toReservation(r);
  }

  putReservation(r: ReservationRecord): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO reservations
        (generation_id, key_hash, budget_ids, amount, bucket, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      r.generationId,
      r.keyHash,
      JSON.stringify(r.budgetIds),
      r.amount,
      r.bucket,
      r.createdAt,
      r.expiresAt,
    );
  }

  deleteReservation(id: string): void {
    this.sql.exec("DELETE FROM reservations WHERE generation_id = ?", id);
  }

  expiredReservations(now: number): ReservationRecord[] {
    return this.sql
      .exec<Row>("SELECT * FROM reservations WHERE expires_at <= ? ORDER BY expires_at", now)
      .toArray()
      .map(toReservation);
  }

  nextExpiry(): number | null {
    const r = this.first("SELECT MIN(expires_at) AS at FROM reservations");
    return r?.at == null ? null : num(r.at);
  }

  settled(id: string): SettledRecord | undefined {
    const r = this.first("SELECT * FROM settled WHERE generation_id = ?", id);
    if (!r) return undefined;
    return {
      generationId: str(r.generation_id),
      state: str(r.state) === "reclaimed" ? "reclaimed" : "settled",
      keyHash: str(r.key_hash),
      budgetIds: JSON.parse(str(r.budget_ids)) as string[],
      at: num(r.at),
      charged: num(r.charged),
    };
  }

  putSettled(r: SettledRecord): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO settled (generation_id, state, key_hash, budget_ids, at, charged) VALUES (?, ?, ?, ?, ?, ?)",
      r.generationId,
      r.state,
      r.keyHash,
      JSON.stringify(r.budgetIds),
      r.at,
      r.charged ?? 0,
    );
  }

  pruneSettled(before: number): void {
    this.sql.exec("DELETE FROM settled WHERE at < ?", before);
  }

  /** Whether anything awaits pruning by the alarm (settled ids or blocks). */
  hasSettled(): boolean {
    return (
      this.first("SELECT 1 AS x FROM settled LIMIT 1") !== undefined ||
      this.first("SELECT 1 AS x FROM blocks LIMIT 1") !== undefined
    );
  }

  block(id: string): BlockRecord | undefined {
    const r = this.first("SELECT * FROM blocks WHERE block_id = ?", id);
    return r && toBlock(r);
  }

  putBlock(b: BlockRecord): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO blocks (block_id, key_hash, budget_ids, size, seq, charged_credits, charged_byok,
        holding, closed, open_until, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      b.blockId,
      b.keyHash,
      JSON.stringify(b.budgetIds),
      b.sizeMicros,
      b.seq,
      b.chargedCredits,
      b.chargedByok,
      b.holding,
      b.closed ? 1 : 0,
      b.openUntil,
      b.at,
    );
  }

  openBlocks(now: number): BlockRecord[] {
    return this.sql
      .exec<Row>("SELECT * FROM blocks WHERE closed = 0 AND open_until > ?", now)
      .toArray()
      .map(toBlock);
  }

  pruneBlocks(doneBefore: number, before: number): void {
    this.sql.exec(
      "DELETE FROM blocks WHERE (closed = 1 AND holding = 0 AND at < ?) OR at < ?",
      doneBefore,
      before,
    );
  }

  free(): FreeCounters {
    if (this.hot?.free) return { ...this.hot.free };
    const r = this.first("SELECT * FROM free_counters WHERE id = 1");
    return {
      minuteStart: num(r?.minute_start),
      minuteUsed: num(r?.minute_used),
      dayStart: num(r?.day_start),
      dayUsed: num(r?.day_used),
    };
  }

  putFree(f: FreeCounters): void {
    if (this.hot) this.hot.free = { ...f };
    else this.writeFree(f);
  }

  private writeFree(f: FreeCounters): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO free_counters (id, minute_start, minute_used, day_start, day_used) VALUES (1, ?, ?, ?, ?)",
      f.minuteStart,
      f.minuteUsed,
      f.dayStart,
      f.dayUsed,
    );
  }
}
