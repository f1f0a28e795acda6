// Reclaim: reservations whose lease ended without their settlement are released and charged what the
// generation records say was spent under them (see docs/billing.md, "Reclaim").
import { BLOCK_RETENTION_MS } from "./blocks";
import type { Bucket } from "./meter";
import type { LedgerStore, RecordedCosts, ReservationRecord } from "./types";

/** Settled and reclaimed generation ids are remembered this long, for idempotent settle. */
export const SETTLED_RETENTION_MS = 7 * 86_400_000;

/** The part of the ledger's core a reclaim uses. */
interface Book {
  readonly store: LedgerStore;
  shiftReserved(r: Pick<ReservationRecord, "keyHash" | "budgetIds" | "bucket">, delta: number): void;
  charge(keyHash: string, budgetIds: string[], bucket: Bucket, amount: number, now: number): void;
}

export const settledOf = (r: ReservationRecord) => ({
  generationId: r.generationId,
  keyHash: r.keyHash,
  budgetIds: r.budgetIds,
});

/**
 * Releases reservations whose lease has ended (their settlement never came: the isolate died, or
 * the call carrying it failed), charging what the generation records say was spent under each:
 * a request's record, or for a block the records admitted against it less what its reports
 * already charged. Never more than the reservation still held. Returns how many it released.
 */
export function reclaimExpired(book: Book, now: number, recorded: RecordedCosts): number {
  const expired = book.store.expiredReservations(now);
  for (const r of expired) {
    book.shiftReserved(r, -r.amount);
    book.store.deleteReservation(r.generationId);
    const spent = recorded.get(r.generationId);
    const block = book.store.block(r.generationId);
    let credits = 0;
    let byok = 0;
    if (spent) {
      credits = Math.min(r.amount, Math.max(0, spent.credits - (block?.chargedCredits ?? 0)));
      byok = Math.min(r.amount, Math.max(0, spent.byok - (block?.chargedByok ?? 0)));
      book.charge(r.keyHash, r.budgetIds, "credits", credits, now);
      book.charge(r.keyHash, r.budgetIds, "byok", byok, now);
    }
    if (block) {
      // A report arriving after this (cumulative) charges only what the records did not cover.
      book.store.putBlock({
        ...block,
        chargedCredits: block.chargedCredits + credits,
        chargedByok: block.chargedByok + byok,
        holding: 0,
        closed: true,
        at: now,
      });
    }
    book.store.putSettled({ ...settledOf(r), state: "reclaimed", at: now, charged: credits + byok });
  }
  book.store.pruneSettled(now - SETTLED_RETENTION_MS);
  book.store.pruneBlocks(now - BLOCK_RETENTION_MS, now - SETTLED_RETENTION_MS);
  return expired.length;
}
