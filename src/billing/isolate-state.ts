// What this isolate holds for each account's ledger: its blocks, the settlements and block reports
// waiting to ride on the next call, the admission calls in flight; and the one way a call goes out carrying
// them (see docs/billing.md, "The ledger client"). Plain data: no request awaits another's I/O.
import type { Bindings } from "../env";
import type { Carried, SettleCommand } from "../ledger/types";
import { errorText, log } from "../lib/log";
import { IsolateBlocks } from "./isolate-blocks";

/** At most this many settlements go in one call. */
export const MAX_BATCH = 256;

export type LedgerStub = ReturnType<typeof ledgerFor>;

/** Waiting settlements by ledger object id, each queue by generation id (oldest first). */
export const waiting = new Map<string, Map<string, SettleCommand>>();

/** This isolate's blocks, by ledger object id. */
export const isolates = new Map<string, IsolateBlocks>();

export function blocksOf(key: string): IsolateBlocks {
  const blocks = isolates.get(key) ?? new IsolateBlocks();
  isolates.set(key, blocks);
  return blocks;
}

/**
 * Per ledger object id: answers of this isolate that have ended, by generation id with when they ended,
 * until their settlement reached the ledger (or failed to). A refused admission that started after
 * one ended waits for it (see `admitThrough`): the client saw that answer end, so its room is free.
 */
export const ending = new Map<string, Map<string, number>>();

/** The answer of `generationId` has ended; its settlement is on the way. */
export function answerEnded(env: Bindings, accountId: string, generationId: string): void {
  const key = ledgerId(env, accountId).toString();
  const ended = ending.get(key) ?? new Map<string, number>();
  if (!ended.has(generationId)) ended.set(generationId, Date.now());
  ending.set(key, ended);
}

/** The settlement of `generationId` reached the ledger, or will not. */
export function settlementDone(key: string, generationId: string): void {
  const ended = ending.get(key);
  if (ended?.delete(generationId) && ended.size === 0) ending.delete(key);
}

/**
 * Whether an answer that ended at or before `t` still has its settlement on the way and not waiting
 * in this isolate to ride on the next call (its record is being written, or a call carries it).
 */
export function settlingSince(key: string, t: number): boolean {
  const ended = ending.get(key);
  if (!ended) return false;
  const queued = waiting.get(key);
  for (const [generationId, at] of ended) if (at <= t && !queued?.has(generationId)) return true;
  return false;
}

/** A settlement not delivered this long after its answer ended is forgotten here (its lease reclaims it). */
const ENDED_MEMORY_MS = 60_000;

/** Whether an answer that ended at or before `t` has not been settled at the ledger yet. */
export function unsettledSince(key: string, t: number): boolean {
  const ended = ending.get(key);
  if (!ended) return false;
  let found = false;
  for (const [generationId, at] of ended) {
    if (t - at > ENDED_MEMORY_MS) settlementDone(key, generationId);
    else if (at <= t) found = true;
  }
  return found;
}

/** Per ledger object id: when each admission call in flight from this isolate was sent. */
export const inFlight = new Map<string, Set<{ sentAt: number }>>();

const ids = new WeakMap<Bindings["LEDGER"], Map<string, DurableObjectId>>();
/** The account's ledger object id, derived once per isolate and namespace (needed twice a request). */
export function ledgerId(env: Bindings, accountId: string): DurableObjectId {
  let known = ids.get(env.LEDGER);
  if (!known || known.size > 10_000) {
    known = new Map();
    ids.set(env.LEDGER, known);
  }
  let id = known.get(accountId);
  if (!id) {
    id = env.LEDGER.idFromName(accountId);
    known.set(accountId, id);
  }
  return id;
}

/**
 * Forgets everything this isolate holds for the ledgers (blocks, waiting settlements, queues), as
 * its death would: the kill tests use it to show the ledger's reclaim charges from the records.
 */
export function dropIsolateState(): void {
  waiting.clear();
  isolates.clear();
  inFlight.clear();
  ending.clear();
}

export function ledgerFor(env: Bindings, accountId: string) {
  return env.LEDGER.get(ledgerId(env, accountId));
}

/**
 * Runs one call to the account's ledger with what waits for it in this isolate handed over:
 * settlements (at most MAX_BATCH) and block reports (blocks whose time ended are closed first; all
 * of them with `closeBlocks`, so a usage read sees only real reservations of this isolate). If the
 * call fails they are sent once more on their own (both are idempotent), then the error is rethrown.
 */
export async function carrying<T>(
  env: Bindings,
  accountId: string,
  call: (ledger: LedgerStub, carried: Carried) => Promise<T>,
  closeBlocks = false,
): Promise<T> {
  return carryingTo(env, ledgerId(env, accountId), call, closeBlocks);
}

export async function carryingTo<T>(
  env: Bindings,
  id: DurableObjectId,
  call: (ledger: LedgerStub, carried: Carried) => Promise<T>,
  closeBlocks = false,
): Promise<T> {
  const ledger = env.LEDGER.get(id);
  const key = id.toString();
  const carried = take(key, closeBlocks);
  let out: T;
  try {
    out = await call(ledger, carried);
  } catch (err) {
    isolates.get(key)?.lost(carried.reports);
    if (carried.settles.length + carried.reports.length > 0)
      await send(key, ledger, take(key, false, carried));
    throw err;
  }
  delivered(key, carried);
  return out;
}

/** Runs in the granted request's background: when the block's time ends, closes it and reports. */
export async function closeWhenDue(env: Bindings, id: DurableObjectId, blockId: string): Promise<void> {
  const key = id.toString();
  const until = isolates.get(key)?.openUntil(blockId);
  if (until == null) return;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now())));
  await flush(env, id);
}

/** Sends what waits for the ledger in this isolate (closing blocks whose time ended), if anything. */
export async function flush(env: Bindings, id: DurableObjectId): Promise<void> {
  const key = id.toString();
  const carried = take(key);
  if (carried.settles.length + carried.reports.length > 0) await send(key, env.LEDGER.get(id), carried);
}

/**
 * A failed call is logged, never thrown: the reservations' lease reclaims what it carried (see
 * LEASE_MS), and the blocks' reports ride on the next call.
 */
export async function send(key: string, ledger: LedgerStub, carried: Carried): Promise<void> {
  try {
    await ledger.settleAndReport(carried);
    delivered(key, carried);
  } catch (err) {
    isolates.get(key)?.lost(carried.reports);
    for (const s of carried.settles) settlementDone(key, s.generationId);
    log("error", {
      message: "settle failed; the reservation lease will reclaim it",
      generation_ids: carried.settles.map((s) => s.generationId),
      block_ids: carried.reports.map((r) => r.blockId),
      error: errorText(err),
    });
  }
}

function delivered(key: string, carried: Carried): void {
  for (const s of carried.settles) settlementDone(key, s.generationId);
  const blocks = isolates.get(key);
  if (!blocks) return;
  blocks.delivered(carried.reports);
  if (blocks.idle()) isolates.delete(key);
}

/**
 * What waits for the ledger `key` in this isolate: settlements (at most MAX_BATCH) and the reports
 * of blocks changed since last sent (blocks whose time ended are closed first; all with `closeAll`).
 * `retry` re-takes a failed call's settlements with the blocks' latest reports.
 */
export function take(key: string, closeAll = false, retry?: Carried): Carried {
  const blocks = isolates.get(key);
  blocks?.closeExpired(Date.now(), closeAll);
  const reports = blocks?.take() ?? [];
  if (retry) return { settles: retry.settles, reports };
  const queue = waiting.get(key);
  if (!queue) return { settles: [], reports };
  const settles: SettleCommand[] = [];
  for (const [id, cmd] of queue) {
    if (settles.length === MAX_BATCH) break;
    settles.push(cmd);
    queue.delete(id);
  }
  if (queue.size === 0) waiting.delete(key);
  return { settles, reports };
}
