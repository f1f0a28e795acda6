// The ledger's storage in its Durable Object's SQLite: the schema and the LedgerStore over it.

import type { Bucket, Meter } from "./meter";
import type {
  AccountState,
  BlockRecord,
  FreeCounters,
  LedgerStore,
  ReservationRecord,
  SettledRecord,
} from "./types";

/**
 * Storage schema (one ledger per account):
 * - account: one row; credits purchased (copy of D1's credit_grants sum and when it was read),
 *   settled credit spend and open credit reservations, all micro-dollars.
 * - meters: per scope (`key:<hash>` | `guardrail:<id>`) and bucket (credits | byok): lifetime spend,
 *   the current UTC daily/weekly/monthly window amounts with their start, open reservations.
 * - reservations: open reservations with their lease end (the alarm reclaims expired ones).
 * - settled: generation ids settled or reclaimed in the last SETTLED_RETENTION_MS (idempotency), with
 *   what a reclaim charged from the generation records.
 * - free_counters: one row; the account's free-model requests in the current minute and UTC day.
 * - blocks: room granted to isolates (src/billing/blocks.ts): size, the cumulative figures of the
 *   last report applied (its seq), whether closed, until when it counts as open; the reservation
 *   itself is in `reservations` under the block id.
 * - authority: one row; the highest account authority version the worker reported (admissions made
 *   on an older auth record are refused, see Ledger.raiseAuthority).
 */
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS account (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    purchased INTEGER NOT NULL, purchased_read_at INTEGER NOT NULL,
    spent INTEGER NOT NULL, reserved INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS meters (
    scope TEXT NOT NULL, bucket TEXT NOT NULL, total INTEGER NOT NULL,
    daily INTEGER NOT NULL, daily_start INTEGER NOT NULL,
    weekly INTEGER NOT NULL, weekly_start INTEGER NOT NULL,
    monthly INTEGER NOT NULL, monthly_start INTEGER NOT NULL,
    reserved INTEGER NOT NULL, PRIMARY KEY (scope, bucket))`,
  `CREATE TABLE IF NOT EXISTS reservations (
    generation_id TEXT PRIMARY KEY, key_hash TEXT NOT NULL, budget_ids TEXT NOT NULL,
    amount INTEGER NOT NULL, bucket TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS reservations_expiry ON reservations(expires_at)",
  `CREATE TABLE IF NOT EXISTS settled (
    generation_id TEXT PRIMARY KEY, state TEXT NOT NULL, key_hash TEXT NOT NULL,
    budget_ids TEXT NOT NULL, at INTEGER NOT NULL, charged INTEGER NOT NULL DEFAULT 0)`,
  "CREATE INDEX IF NOT EXISTS settled_at ON settled(at)",
  `CREATE TABLE IF NOT EXISTS free_counters (
    id INTEGER PRIMARY KEY CHECK (id = 1), minute_start INTEGER NOT NULL, minute_used INTEGER NOT NULL,
    day_start INTEGER NOT NULL, day_used INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS blocks (
    block_id TEXT PRIMARY KEY, key_hash TEXT NOT NULL, budget_ids TEXT NOT NULL, size INTEGER NOT NULL,
    seq INTEGER NOT NULL, charged_credits INTEGER NOT NULL, charged_byok INTEGER NOT NULL,
    holding INTEGER NOT NULL, closed INTEGER NOT NULL, open_until INTEGER NOT NULL, at INTEGER NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS blocks_open ON blocks(closed, open_until)",
  "CREATE TABLE IF NOT EXISTS authority (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
];

type Row = Record<string, SqlStorageValue>;
const num = (v: SqlStorageValue | undefined) => Number(v ?? 0);
const str = (v: SqlStorageValue | undefined) => String(v ?? "");

/** Rows rewritten on every operation; inside transaction() they are kept here and written once at its end. */
interface HotRows {
  account?: AccountState;
  meters: Map<string, { scope: string; bucket: Bucket; meter: Meter }>;
  free?: FreeCounters;
}

export class SqlLedgerStore implements LedgerStore {
  private readonly sql: SqlStorage;
  private hot: HotRows | null = null;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
    for (const statement of SCHEMA) this.sql.exec(statement);
    // Ledgers made before `settled.charged` existed (local state kept across versions).
    const columns = this.sql.exec<Row>("PRAGMA table_info(settled)").toArray();
    if (!columns.some((c) => c.name === "charged"))
      this.sql.exec("ALTER TABLE settled ADD COLUMN charged INTEGER NOT NULL DEFAULT 0");
  }

  /**
   * Runs `fn` as one SQLite transaction (all or nothing). The account, meter and free-counter rows
   * it changes are held in memory and written once, at its end, in the same synchronous step: a batch
   * of N operations on one key costs N reservation/settled row writes plus one write per hot row.
   */
  transaction<T>(fn: () => T): T {
    if (this.hot) return fn();
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
    const r = this.first("SELECT purchased, purchased_read_at, spent, reserved FROM account WHERE id = 1");
    if (!r) return { purchased: 0, purchasedReadAt: 0, spent: 0, reserved: 0 };
    return {
      purchased: num(r.purchased),
      purchasedReadAt: num(r.purchased_read_at),
      spent: num(r.spent),
      reserved: num(r.reserved),
    };
  }

  putAccount(a: AccountState): void {
    if (this.hot) this.hot.account = { ...a };
    else this.writeAccount(a);
  }

  private writeAccount(a: AccountState): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO account (id, purchased, purchased_read_at, spent, reserved) VALUES (1, ?, ?, ?, ?)",
      a.purchased,
      a.purchasedReadAt,
      a.spent,
      a.reserved,
    );
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

function toBlock(r: Row): BlockRecord {
  return {
    blockId: str(r.block_id),
    keyHash: str(r.key_hash),
    budgetIds: JSON.parse(str(r.budget_ids)) as string[],
    sizeMicros: num(r.size),
    seq: num(r.seq),
    chargedCredits: num(r.charged_credits),
    chargedByok: num(r.charged_byok),
    holding: num(r.holding),
    closed: num(r.closed) === 1,
    openUntil: num(r.open_until),
    at: num(r.at),
  };
}

function toReservation(r: Row): ReservationRecord {
  return {
    generationId: str(r.generation_id),
    keyHash: str(r.key_hash),
    budgetIds: JSON.parse(str(r.budget_ids)) as string[],
    amount: num(r.amount),
    bucket: str(r.bucket) === "byok" ? "byok" : "credits",
    createdAt: num(r.created_at),
    expiresAt: num(r.expires_at),
  };
}
