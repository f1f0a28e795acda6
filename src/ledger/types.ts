// The ledger's records, commands and answers: what its store keeps and what crosses the wire to it.
import type { Bucket, Limit, Meter, SpendFigures } from "./meter";
import type { Window } from "./windows";

export interface AccountState {
  /** All-time credits purchased, as last read from D1. */
  purchased: number;
  /** When `purchased` was read (epoch ms); 0 = never. */
  purchasedReadAt: number;
  /** Settled credit spend, all-time. */
  spent: number;
  /** Open credit reservations. */
  reserved: number;
}

export interface FreeCounters {
  minuteStart: number;
  minuteUsed: number;
  dayStart: number;
  dayUsed: number;
}

export interface ReservationRecord {
  generationId: string;
  keyHash: string;
  budgetIds: string[];
  amount: number;
  bucket: Bucket;
  createdAt: number;
  expiresAt: number;
}

export interface SettledRecord {
  generationId: string;
  state: "settled" | "reclaimed";
  keyHash: string;
  budgetIds: string[];
  at: number;
  /** Reclaimed: what was charged then from the generation records (a late settle charges only the rest). */
  charged?: number;
}

/**
 * What the generation records say was spent under reservations the ledger is about to reclaim, by
 * reservation id (a generation id, or a block id summing every record admitted against it).
 */
export type RecordedCosts = Map<string, { credits: number; byok: number }>;

/**
 * A generation record the queue's consumer wrote to D1, reported to its account's ledger (late news
 * for a reservation reclaimed while the record was still queued: docs/billing.md, "Reclaim").
 */
export interface RecordNote {
  generationId: string;
  /** The isolate block the request was admitted against, if any. */
  blockId: string | null;
  costMicros: number;
  byok: boolean;
}

/** Synchronous storage (Durable Object SQLite in production, a Map in model tests). */
export interface LedgerStore {
  account(): AccountState;
  putAccount(a: AccountState): void;
  meter(scope: string, bucket: Bucket): Meter | undefined;
  putMeter(scope: string, bucket: Bucket, m: Meter): void;
  reservation(id: string): ReservationRecord | undefined;
  putReservation(r: ReservationRecord): void;
  deleteReservation(id: string): void;
  /** Reservations whose lease ended at or before `now`. */
  expiredReservations(now: number): ReservationRecord[];
  /** Earliest lease end among open reservations. */
  nextExpiry(): number | null;
  settled(id: string): SettledRecord | undefined;
  putSettled(r: SettledRecord): void;
  pruneSettled(before: number): void;
  free(): FreeCounters;
  putFree(f: FreeCounters): void;
  block(id: string): BlockRecord | undefined;
  putBlock(b: BlockRecord): void;
  /** Blocks not closed whose open time has not ended at `now`. */
  openBlocks(now: number): BlockRecord[];
  /** Forgets blocks done (closed, nothing held) before `doneBefore`, and any unchanged since `before`. */
  pruneBlocks(doneBefore: number, before: number): void;
}

export interface BudgetLimit extends Limit {
  id: string;
  name: string;
}

export interface AdmitCommand {
  generationId: string;
  keyHash: string;
  cap: Limit | null;
  budgets: BudgetLimit[];
  worstCaseMicros: number;
  byok: boolean;
  /** Subject to the free-model limits (a `:free` model, not BYOK, not exempt). */
  freeModel: boolean;
  leaseMs?: number | undefined;
  /**
   * The account's authority version the caller's auth record was read at (D1 `accounts.authority_version`).
   * Older than the ledger's -> refused as `stale_authority`: the caller re-reads its auth and asks again.
   * Absent counts as 0 (callers that hold no auth record, such as the model tests).
   */
  authority?: number;
}

/**
 * Why the ledger refused, with the figures it decided on: reasons and figures only, never HTTP (the
 * worker words them: src/billing/refusals.ts). Money in micro-dollars, instants in epoch ms.
 */
export interface Rejection {
  reason:
    | "balance"
    | "key_cap"
    | "budget"
    | "free_per_minute"
    | "free_per_day"
    | "generation_reused"
    | "stale_authority";
  /** The ledger's clock when it refused. */
  at?: number;
  /** balance, key_cap: what the request may cost. */
  worstCaseMicros?: number;
  /** balance: available (may be <= 0); key_cap, budget: left under the limit. */
  remainingMicros?: number;
  /** key_cap, budget: the limit. */
  limitMicros?: number;
  /** key_cap: its reset interval (null: lifetime). */
  reset?: Window | null;
  /** key_cap, budget, free limits: when the window starts again (null: never). */
  resetsAt?: number | null;
  /** budget: the guardrail. */
  guardrailId?: string;
  guardrailName?: string;
  /** free limits: requests allowed in the window. */
  requests?: number;
  /** generation_reused: the id. */
  generationId?: string;
}

/**
 * A refusal with `retryAt` (epoch ms) came while another isolate's block that could cover the request
 * was open: ask again then (see blocks.ts).
 */
export type AdmitOutcome =
  | { ok: true; reservedMicros: number /** Admitted against this isolate block. */; blockId?: string }
  | { ok: false; rejection: Rejection; retryAt?: number };

/** What rides on any call to the ledger from an isolate: finished work to record first. */
export interface Carried {
  settles: SettleCommand[];
  reports: BlockReport[];
}

export interface AdmitReply {
  outcomes: AdmitOutcome[];
  /** Granted for the first command when asked for; that request is then held in the block. */
  block?: BlockGrant;
}

export interface SettleCommand {
  generationId: string;
  actualMicros: number;
  byok: boolean;
}

export interface SettleResult {
  status: "settled" | "late" | "duplicate" | "unknown";
  chargedMicros: number;
}

export interface KeyUsage {
  usage: SpendFigures;
  byok: SpendFigures;
  /** Open reservations of the key. */
  reserved: { credits: number; byok: number };
}

/** The isolate asks for a block with its admission call. */
export interface BlockWant {
  blockId: string;
  sizeMicros: number;
}

/** A block asked for ahead of time, for requests like `template` (see Ledger.block). */
export interface BlockAsk {
  template: AdmitCommand;
  want: BlockWant;
}

/** What the ledger reserved for the block; the request that asked holds its own worst case in it. */
export interface BlockGrant {
  blockId: string;
  sizeMicros: number;
}

/**
 * An isolate's report on one block, cumulative (so a report sent twice or out of order changes
 * nothing): what requests admitted against it were charged so far, what requests still in flight
 * hold, and whether it stopped admitting against it.
 */
export interface BlockReport {
  blockId: string;
  /** Rises with every change; the ledger applies a report only if newer than the last it applied. */
  seq: number;
  chargedCredits: number;
  chargedByok: number;
  holding: number;
  closed: boolean;
}

/** The ledger's record of a block (its reservation lives with the others, under the block id). */
export interface BlockRecord {
  blockId: string;
  keyHash: string;
  budgetIds: string[];
  sizeMicros: number;
  seq: number;
  chargedCredits: number;
  chargedByok: number;
  holding: number;
  closed: boolean;
  /** Until when the ledger counts it open (refusals that it could cover answer "retry"). */
  openUntil: number;
  /** Last change (grant or report). */
  at: number;
}

/** What a usage read answers (GET /key, GET /credits, the management key routes). */
export interface LedgerStatus {
  keys: Record<string, KeyUsage>;
  freeModelDaily: { limit: number; used: number; remaining: number };
  /** Micro-dollars: all-time purchased, settled spend, open reservations, purchased - spent - reserved. */
  account: { purchased: number; spent: number; reserved: number; balance: number };
}
