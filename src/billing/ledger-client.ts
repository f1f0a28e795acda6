// The worker's side of the ledger: the account's Durable Object stub, and the settlements waiting in
// this isolate to ride on the account's next ledger call (see settleInBackground in admission.ts).
import type { Bindings } from "../env";
import type { SettleCommand } from "./accounting";

/** How long a settlement waits for another ledger call of its account before it sends one itself. */
export const SETTLE_COALESCE_MS = 20;
/** At most this many settlements ride on one call. */
const MAX_BATCH = 256;

const waiting = new Map<string, Map<string, SettleCommand>>();

export function ledgerFor(env: Bindings, accountId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(accountId));
}

export function postSettlement(accountId: string, cmd: SettleCommand): void {
  const queue = waiting.get(accountId) ?? new Map<string, SettleCommand>();
  queue.set(cmd.generationId, cmd);
  waiting.set(accountId, queue);
}

export function isWaiting(accountId: string, generationId: string): boolean {
  return waiting.get(accountId)?.has(generationId) ?? false;
}

/**
 * Runs one ledger call with the account's waiting settlements handed to it (oldest first, at most
 * MAX_BATCH). If the call fails they are sent once more on their own (settle is idempotent), then
 * the error is rethrown.
 */
export async function carrying<T>(
  env: Bindings,
  accountId: string,
  call: (settles: SettleCommand[]) => Promise<T>,
): Promise<T> {
  const carried = take(accountId);
  try {
    return await call(carried);
  } catch (err) {
    if (carried.length > 0) await sendSettlements(env, accountId, carried);
    throw err;
  }
}

/** Sends the account's waiting settlements until `generationId` is no longer among them. */
export async function flushUntilSent(env: Bindings, accountId: string, generationId: string): Promise<void> {
  while (isWaiting(accountId, generationId)) await sendSettlements(env, accountId, take(accountId));
}

/** Never throws: a failed call is logged and the reservations' lease reclaims them (see LEASE_MS). */
async function sendSettlements(env: Bindings, accountId: string, batch: SettleCommand[]): Promise<void> {
  try {
    await ledgerFor(env, accountId).settleMany(batch);
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        message: "settle failed; the reservation lease will reclaim it",
        generation_ids: batch.map((s) => s.generationId),
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  }
}

function take(accountId: string): SettleCommand[] {
  const queue = waiting.get(accountId);
  if (!queue) return [];
  const batch: SettleCommand[] = [];
  for (const [id, cmd] of queue) {
    if (batch.length === MAX_BATCH) break;
    batch.push(cmd);
    queue.delete(id);
  }
  if (queue.size === 0) waiting.delete(accountId);
  return batch;
}
