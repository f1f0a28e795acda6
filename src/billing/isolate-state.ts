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
    log("error", {
      message: "settle failed; the reservation lease will reclaim it",
      generation_ids: carried.settles.map((s) => s.generationId),
      block_ids: carried.reports.map((r) => r.blockId),
      error: errorText(err),
    });
  }
}

function delivered(key: string, carried: Carried): void {
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
