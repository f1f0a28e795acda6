// Writes the generation record of an inference call off the response path (executionCtx.waitUntil).
import { getDb, tables } from "../db/client";

export type GenerationRecord = typeof tables.generations.$inferInsert;

/** The part of the execution context this needs (Hono's and Workers' contexts both fit). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Schedules the insert after the response; a failed write is logged with the generation id (never the
 * request body or any credential) and does not affect the caller, who already has the answer.
 */
export function recordGeneration(ctx: WaitUntil, d1: D1Database, record: GenerationRecord): void {
  ctx.waitUntil(
    getDb(d1)
      .insert(tables.generations)
      .values(record)
      .then(() => undefined)
      .catch((err: unknown) => {
        console.error(
          JSON.stringify({
            level: "error",
            message: "generation record write failed",
            generation_id: record.id,
            error: err instanceof Error ? err.message : String(err),
          }),
        );
      }),
  );
}
