// The worker's side of the ledger: the account's Durable Object stub, and the settlements waiting in
// this isolate to ride on the next call to the same ledger (see settleInBackground in admission.ts).
import type { Bindings } from "../env";
import type { SettleCommand } from "./accounting";

/** How long a settlement waits for another call to its ledger before it sends one itself. */
export const SETTLE_COALESCE_MS = 20;
/** At most this many settlements ride on one call. */
const MAX_BATCH = 256;

type LedgerStub = ReturnType<typeof ledgerFor>;

/** Waiting settlements by ledger object id, each queue by generation id (oldest first). */
const waiting = new Map<string, Map<string, SettleCommand>>();

export function ledgerFor(env: Bindings, accountId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(accountId));
}

/**
 * Runs one call to the account's ledger with the settlements waiting for it handed over (at most
 * MAX_BATCH). If the call fails they are sent once more on their own (settle is idempotent by
 * generation id), then the error is rethrown.
 */
export async function carrying<T>(
  env: Bindings,
  accountId: string,
  call: (ledger: LedgerStub, settles: SettleCommand[]) => Promise<T>,
): Promise<T> {
  const id = env.LEDGER.idFromName(accountId);
  const ledger = env.LEDGER.get(id);
  const carried = take(id.toString());
  try {
    return await call(ledger, carried);
  } catch (err) {
    if (carried.length > 0) await send(ledger, carried);
    throw err;
  }
}

/**
 * Queues a settlement for up to SETTLE_COALESCE_MS; unless another call to the same ledger from
 * this isolate carried it meanwhile, sends it then with every other one waiting. Never awaits
 * another request's I/O, and never throws.
 */
export async function settleSoon(env: Bindings, accountId: string, cmd: SettleCommand): Promise<void> {
  const id = env.LEDGER.idFromName(accountId);
  const key = id.toString();
  const queue = waiting.get(key) ?? new Map<string, SettleCommand>();
  queue.set(cmd.generationId, cmd);
  waiting.set(key, queue);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_COALESCE_MS));
  const ledger = env.LEDGER.get(id);
  while (waiting.get(key)?.has(cmd.generationId)) await send(ledger, take(key));
}

/** A failed call is logged, never thrown: the reservations' lease reclaims them (see LEASE_MS). */
async function send(ledger: LedgerStub, batch: SettleCommand[]): Promise<void> {
  try {
    await ledger.settleMany(batch);
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

function take(key: string): SettleCommand[] {
  const queue = waiting.get(key);
  if (!queue) return [];
  const batch: SettleCommand[] = [];
  for (const [id, cmd] of queue) {
    if (batch.length === MAX_BATCH) break;
    batch.push(cmd);
    queue.delete(id);
  }
  if (queue.size === 0) waiting.delete(key);
  return batch;
}
