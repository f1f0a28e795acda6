// The generation record of an inference call: written off the response path, before the settlement
// (the ledger reads records back to charge reservations reclaimed without one: db/generations.ts).
import { type Reservation, settleInBackground } from "../billing/admission";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";

export type GenerationRecord = typeof tables.generations.$inferInsert;

/** The part of the execution context this needs (Hono's and Workers' contexts both fit). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/** The insert; a failed write is logged with the generation id (never the body or a credential). */
async function writeRecord(d1: D1Database, record: GenerationRecord): Promise<void> {
  try {
    await getDb(d1).insert(tables.generations).values(record);
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
