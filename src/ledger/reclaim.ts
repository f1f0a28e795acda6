// Reclaim: reservations whose lease ended without their settlement are released and charged what the
// generation records say was spent under them (see docs/billing.md, "Reclaim").
import { BLOCK_RETENTION_MS } from "./blocks";
import type { Bucket } from "./meter";
import type { LedgerStore, RecordedCosts, RecordNote, ReservationRecord, SettleCommand } from "./types";

/** Settled and reclaimed generation ids are remembered this long, for idempotent settle. */
export const SETTLED_RETENTION_MS = 7 * 86_400_000;

/** The part of the ledger's core a reclaim uses. */
interface Book {
  readonly store: LedgerStore;
  shiftReserved(r: Pick<ReservationRecord, "keyHash" | "budgetIds" | "bucket">, delta: number): void;
  charge(keyHash: string, budgetIds: string[], bucket: Bucket, amount: number, now: number): void;
  settle(cmd: SettleCommand, now: number): unknown;
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

/**
 * Late news: generation records the queue's consumer wrote to D1 and reported. A request's record
 * settles it like its own settlement would (open: settled; reclaimed: the rest of its cost; settled:
 * nothing). A block's record changes nothing here (its isolate's reports charge it, or the reclaim
 * reads it from D1): returns the blocks already reclaimed, whose records the caller reads again and
 * passes to `chargeLateRecords`.
 */
export function noteRecords(book: Book, notes: RecordNote[], now: number): string[] {
  const reclaimedBlocks = new Set<string>();
  // A batch holds many records of each block (hundreds of one busy key's): each block is looked up once.
  const looked = new Set<string>();
  for (const n of notes) {
    if (n.blockId == null) {
      book.settle({ generationId: n.generationId, actualMicros: n.costMicros, byok: n.byok }, now);
    } else if (!looked.has(n.blockId)) {
      looked.add(n.blockId);
      if (book.store.settled(n.blockId)?.state === "reclaimed" && book.store.block(n.blockId))
        reclaimedBlocks.add(n.blockId);
    }
  }
  return [...reclaimedBlocks];
}

/**
 * Charges reclaimed blocks what their records (read from D1 after the consumer reported them) show
 * beyond what the block was charged so far (its reports and its reclaim): records only grow, so a
 * record reported twice, or already counted by the reclaim, charges nothing more.
 */
export function chargeLateRecords(book: Book, recorded: RecordedCosts, now: number): void {
  for (const [blockId, spent] of recorded) {
    const block = book.store.block(blockId);
    if (!block || book.store.settled(blockId)?.state !== "reclaimed") continue;
    const credits = Math.max(0, spent.credits - block.chargedCredits);
    const byok = Math.max(0, spent.byok - block.chargedByok);
    if (credits + byok === 0) continue;
    book.charge(block.keyHash, block.budgetIds, "credits", credits, now);
    book.charge(block.keyHash, block.budgetIds, "byok", byok, now);
    book.store.putBlock({
      ...block,
      chargedCredits: block.chargedCredits + credits,
      chargedByok: block.chargedByok + byok,
      at: now,
    });
  }
}
