// The generation record of an inference call: written off the response path, before the settlement
// (the ledger reads records back to charge reservations reclaimed without one: db/generations.ts).

import { getTableColumns } from "drizzle-orm";
import { NOW_SQL } from "../../schema/tables";
import { type Reservation, settleInBackground } from "../billing/admission";
import { tables } from "../db/client";
import type { Bindings } from "../env";

export type GenerationRecord = typeof tables.generations.$inferInsert;

/** The part of the execution context this needs (Hono's and Workers' contexts both fit). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/** How long a record waits in the isolate for others to share its D1 call. */
export const RECORD_COALESCE_MS = 20;
/** At most this many records go in one D1 call (one batch, one transaction). */
const MAX_RECORDS = 100;
const MAX_POLL_MS = 16;

/** Records waiting in this isolate, with the binding each was made for. */
const pending: Array<{ d1: D1Database; record: GenerationRecord }> = [];
/** What became of a record written by another request's call, until its own request reads it. */
const written = new Map<string, "ok" | "failed">();

/**
 * Writes the record, sharing one D1 call with the other records of this isolate made within
 * RECORD_COALESCE_MS: whichever request finds records waiting writes them all as one batch; the
 * others see their outcome in plain data, polling with their own timers (workerd forbids awaiting
 * another request's promise). A batch that fails is written again one record at a time by each
 * owner, and a record that still fails is logged with its generation id (never the body or a
 * credential).
 */
async function writeRecord(d1: D1Database, record: GenerationRecord): Promise<void> {
  pending.push({ d1, record });
  await new Promise((resolve) => setTimeout(resolve, RECORD_COALESCE_MS));
  for (let poll = 1; ; poll = Math.min(poll * 2, MAX_POLL_MS)) {
    const outcome = written.get(record.id);
    if (outcome) {
      written.delete(record.id);
      if (outcome === "ok") return;
      return writeOne(d1, record);
    }
    if (pending.some((p) => p.record === record)) await writeBatch(d1);
    else await new Promise((resolve) => setTimeout(resolve, poll));
  }
}

/**
 * Records are inserted with prepared statements built once from the table's columns: Drizzle's query
 * builder cost more CPU per record than everything else on the request path (the bench's profile).
 * Values go through each column's own driver mapping (JSON, booleans), so the table stays the one
 * definition; a column left unset takes its SQL default (the creation time) or null.
 */
const COLUMNS = Object.entries(getTableColumns(tables.generations));
const NAMES = COLUMNS.map(([, c]) => `"${c.name}"`).join(", ");
/** The only SQL default in the table is the creation time (NOW_SQL); other defaults are plain values. */
const valueSql = (c: (typeof COLUMNS)[number][1], param: string) =>
  c.hasDefault && typeof c.default === "object" ? `coalesce(${param}, ${NOW_SQL})` : param;
const INSERT_ONE = `INSERT INTO generations (${NAMES}) VALUES (${COLUMNS.map(([, c]) => valueSql(c, "?")).join(", ")})`;
/** Many rows in one statement: one JSON array of rows bound as a single parameter (D1 allows 100 per statement). */
const INSERT_MANY = `INSERT INTO generations (${NAMES}) SELECT ${COLUMNS.map(([, c], i) =>
  valueSql(c, `json_extract(value, '$[${i}]')`),
).join(", ")} FROM json_each(?)`;
/** Bytes of rows per statement, well under D1's 2 MB per value. */
const MAX_STATEMENT_BYTES = 512 * 1024;

const prepared = new WeakMap<D1Database, { one: D1PreparedStatement; many: D1PreparedStatement }>();
const statementsOf = (d1: D1Database) => {
  let s = prepared.get(d1);
  if (!s) {
    s = { one: d1.prepare(INSERT_ONE), many: d1.prepare(INSERT_MANY) };
    prepared.set(d1, s);
  }
  return s;
};

/** The record's values in column order, as the driver stores them. */
function rowValues(record: GenerationRecord): unknown[] {
  const row = record as Record<string, unknown>;
  return COLUMNS.map(([key, c]) => {
    const value = row[key] ?? (c.default !== undefined && typeof c.default !== "object" ? c.default : null);
    return value === null ? null : c.mapToDriverValue(value);
  });
}

export function insertRecord(d1: D1Database, record: GenerationRecord): D1PreparedStatement {
  return statementsOf(d1).one.bind(...rowValues(record));
}

/** Statements inserting all the records, as few as the size bound allows (run them in one batch). */
export function insertRecords(d1: D1Database, records: GenerationRecord[]): D1PreparedStatement[] {
  const { many } = statementsOf(d1);
  const out: D1PreparedStatement[] = [];
  let rows: string[] = [];
  let bytes = 0;
  for (const record of records) {
    const json = JSON.stringify(rowValues(record));
    if (rows.length > 0 && bytes + json.length > MAX_STATEMENT_BYTES) {
      out.push(many.bind(`[${rows.join(",")}]`));
      rows = [];
      bytes = 0;
    }
    rows.push(json);
    bytes += json.length + 1;
  }
  if (rows.length > 0) out.push(many.bind(`[${rows.join(",")}]`));
  return out;
}

async function writeBatch(d1: D1Database): Promise<void> {
  const mine: GenerationRecord[] = [];
  for (let i = 0; i < pending.length && mine.length < MAX_RECORDS; ) {
    if (pending[i]!.d1 === d1) mine.push(pending.splice(i, 1)[0]!.record);
    else i++;
  }
  if (mine.length === 0) return;
  let outcome: "ok" | "failed" = "ok";
  try {
    await d1.batch(insertRecords(d1, mine));
  } catch {
    outcome = "failed";
  }
  for (const r of mine) written.set(r.id, outcome);
}

async function writeOne(d1: D1Database, record: GenerationRecord): Promise<void> {
  try {
    await insertRecord(d1, record).run();
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        message: "generation record write failed",
        generation_id: record.id,
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  }
}

/**
 * The end of an inference call that was admitted: its generation record, then its settlement, in
 * that order. So every charge the ledger was told of has a record, and a record whose settlement
 * never arrived (the isolate died in between) is charged when the ledger reclaims the reservation.
 * `costMicros` and `isByok` of the record are what is settled. Never throws; run it in waitUntil.
 */
export async function finishGeneration(
  env: Bindings,
  reservation: Reservation,
  record: GenerationRecord,
): Promise<void> {
  await writeRecord(env.DB, { ...record, blockId: reservation.blockId ?? null });
  await settleInBackground(env, reservation, {
    actualMicros: record.costMicros ?? 0,
    isByok: record.isByok ?? false,
  });
}
