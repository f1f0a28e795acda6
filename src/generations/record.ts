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
export const RECORD_COALESCE_MS = 10;
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
 * The record insert as one prepared statement, built once from the table's columns: Drizzle's query
 * builder cost more CPU per record than everything else on the request path (the bench's profile).
 * Values go through each column's own driver mapping (JSON, booleans), so the table stays the one
 * definition; a column left unset takes its SQL default (the creation time) or null.
 */
const COLUMNS = Object.entries(getTableColumns(tables.generations));
const INSERT_SQL = `INSERT INTO generations (${COLUMNS.map(([, c]) => `"${c.name}"`).join(", ")}) VALUES (${COLUMNS.map(
  // The only SQL default in the table is the creation time (NOW_SQL); other defaults are plain values.
  ([, c]) => (c.hasDefault && typeof c.default === "object" ? `coalesce(?, ${NOW_SQL})` : "?"),
).join(", ")})`;
const statements = new WeakMap<D1Database, D1PreparedStatement>();

export function insertRecord(d1: D1Database, record: GenerationRecord): D1PreparedStatement {
  let statement = statements.get(d1);
  if (!statement) statements.set(d1, (statement = d1.prepare(INSERT_SQL)));
  const row = record as Record<string, unknown>;
  return statement.bind(
    ...COLUMNS.map(([key, c]) => {
      const value = row[key] ?? (c.default !== undefined && typeof c.default !== "object" ? c.default : null);
      return value === null ? null : (c.mapToDriverValue(value) as unknown);
    }),
  );
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
    await d1.batch(mine.map((r) => insertRecord(d1, r)));
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
