// Blocks: room the ledger reserves for one isolate, which admits and settles requests against it
// locally and reports back on its next call (see docs/billing.md, "Blocks"). This file is the
// ledger's side and the wire shapes; src/billing/isolate-blocks.ts is the isolate's side.
import type {
  AdmitCommand,
  BlockGrant,
  BlockRecord,
  BlockReport,
  BlockWant,
  BudgetLimit,
  LedgerStore,
  Rejection,
} from "./types";

/** An isolate admits against a block for at most this long after sending the call that got it. */
export const BLOCK_MS = 1_000;
/** The ledger treats a block as open this much longer than BLOCK_MS (the call's way back, clock drift). */
export const BLOCK_GRACE_MS = 250;
/** How long after a block's time ended its closing report is still awaited before refusals are final. */
export const CLOSE_REPORT_GRACE_MS = 2_000;
/** A block no report has claimed (its grant was lost with its call) is reclaimed after this long. */
export const UNCLAIMED_BLOCK_MS = 60_000;
/** A block is at most this share of the room left under every limit it is reserved against. */
export const GRANT_SHARE = 4;
/** An isolate asks for room for this many requests like the one asking. */
export const BLOCK_REQUESTS = 1_024;
/** Blocks fully reported are remembered this long (a report re-sent after a failed call is a no-op). */
export const BLOCK_RETENTION_MS = 3_600_000;

/** The part of the ledger a block needs: reservations and spend of the scopes it covers. */
export interface BlockAccounts {
  readonly store: LedgerStore;
  /** Least room left now under the balance, the key cap and every budget of the command. */
  roomFor(cmd: AdmitCommand, now: number): number;
  shiftReserved(owner: { keyHash: string; budgetIds: string[]; bucket: "credits" }, delta: number): void;
  charge(keyHash: string, budgetIds: string[], bucket: "credits" | "byok", amount: number, now: number): void;
}

/**
 * Grants a block for requests like `cmd` (same key, cap and budgets) if there is ample room: at most
 * 1/GRANT_SHARE of the least room left under the balance, the key cap and the command's budgets, and
 * at least two of its worst case. `holding` is what the asking request holds in it at once (its worst
 * case when it is admitted into the block, 0 when the block renews one in use). Free-model, BYOK and
 * zero-cost requests get none; the caller grants none while room is short (see LedgerCore).
 */
export function grantBlock(
  book: BlockAccounts,
  cmd: AdmitCommand,
  want: BlockWant,
  holding: number,
  now: number,
  unclaimedMs = UNCLAIMED_BLOCK_MS,
): BlockGrant | undefined {
  const r = cmd.worstCaseMicros;
  if (cmd.byok || cmd.freeModel || r <= 0) return undefined;
  if (holding > 0 && (book.store.reservation(cmd.generationId) || book.store.settled(cmd.generationId)))
    return undefined;
  if (book.store.reservation(want.blockId) || book.store.block(want.blockId)) return undefined;
  const size = Math.min(want.sizeMicros, Math.floor(book.roomFor(cmd, now) / GRANT_SHARE));
  if (size < 2 * r) return undefined;
  const budgetIds = cmd.budgets.map((b: BudgetLimit) => b.id);
  book.store.putReservation({
    generationId: want.blockId,
    keyHash: cmd.keyHash,
    budgetIds,
    amount: size,
    bucket: "credits",
    createdAt: now,
    expiresAt: now + unclaimedMs,
  });
  book.shiftReserved({ keyHash: cmd.keyHash, budgetIds, bucket: "credits" }, size);
  book.store.putBlock({
    blockId: want.blockId,
    keyHash: cmd.keyHash,
    budgetIds,
    sizeMicros: size,
    seq: 0,
    chargedCredits: 0,
    chargedByok: 0,
    holding,
    closed: false,
    openUntil: now + BLOCK_MS + BLOCK_GRACE_MS,
    at: now,
  });
  return { blockId: want.blockId, sizeMicros: size };
}

/**
 * Applies an isolate's report: charges what was charged since the last report, and shrinks the
 * block's reservation to what it may still use (open: its size less the credits charged, at least
 * what is held; closed: what is held). A closed block with nothing held is done. A report for a block
 * whose reservation the alarm reclaimed still charges (the work was done).
 */
export function applyReport(book: BlockAccounts, report: BlockReport, now: number, leaseMs: number): void {
  const b = book.store.block(report.blockId);
  if (!b || report.seq <= b.seq) return;
  const credits = Math.max(0, report.chargedCredits - b.chargedCredits);
  const byok = Math.max(0, report.chargedByok - b.chargedByok);
  book.charge(b.keyHash, b.budgetIds, "credits", credits, now);
  book.charge(b.keyHash, b.budgetIds, "byok", byok, now);
  const closed = b.closed || report.closed;
  const r = book.store.reservation(b.blockId);
  if (r) {
    const left = closed ? report.holding : Math.max(report.holding, b.sizeMicros - report.chargedCredits);
    book.shiftReserved({ ...r, bucket: "credits" }, left - r.amount);
    if (closed && left === 0) book.store.deleteReservation(r.generationId);
    else book.store.putReservation({ ...r, amount: left, expiresAt: now + leaseMs });
  }
  book.store.putBlock({
    ...b,
    seq: report.seq,
    chargedCredits: Math.max(b.chargedCredits, report.chargedCredits),
    chargedByok: Math.max(b.chargedByok, report.chargedByok),
    holding: report.holding,
    closed,
    at: now,
  });
}

/**
 * When a limit refuses `cmd` while another isolate's block that counts against that limit is still
 * open, its unused room might cover the request: the caller should retry once the block ends (at
 * the returned time) rather than be refused.
 */
export function retryAt(
  store: LedgerStore,
  cmd: AdmitCommand,
  rejection: Rejection,
  now: number,
): number | null {
  const counts = (b: BlockRecord) => {
    if (rejection.reason === "balance") return true;
    if (rejection.reason === "key_cap") return b.keyHash === cmd.keyHash;
    if (rejection.reason === "budget") return b.budgetIds.includes(rejection.guardrailId ?? "");
    return false;
  };
  // A block whose time ended still holds its unused room until its closing report arrives (the
  // isolate sends it when the time ends): for CLOSE_REPORT_GRACE_MS after its end it counts too.
  const open = store.openBlocks(now - CLOSE_REPORT_GRACE_MS).filter(counts);
  if (open.length === 0) return null;
  return Math.max(now + 1, Math.min(...open.map((b) => b.openUntil)));
}
