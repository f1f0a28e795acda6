// The ledger's SQLite schema, one ledger per account (its Durable Object's storage), and its rows read back.
import type { BlockRecord, ReservationRecord } from "./types";

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
 * - blocks: room granted to isolates (src/ledger/blocks.ts): size, the cumulative figures of the
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

/** Creates the tables if missing, and brings a ledger made by an earlier version up to date. */
export function createSchema(sql: SqlStorage): void {
  for (const statement of SCHEMA) sql.exec(statement);
  // Ledgers made before `settled.charged` existed (local state kept across versions).
  const columns = sql.exec<{ name: string }>("PRAGMA table_info(settled)").toArray();
  if (!columns.some((c) => c.name === "charged"))
    sql.exec("ALTER TABLE settled ADD COLUMN charged INTEGER NOT NULL DEFAULT 0");
}

export type Row = Record<string, SqlStorageValue>;
export const num = (v: SqlStorageValue | undefined) => Number(v ?? 0);
export const str = (v: SqlStorageValue | undefined) => String(v ?? "");

export function toBlock(r: Row): BlockRecord {
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

export function toReservation(r: Row): ReservationRecord {
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
