// The worker's side of the ledger: the account's Durable Object stub; admissions that arrive while
// calls to the same ledger are in flight, sent together as the next call; and settlements waiting in
// this isolate to ride on the next call to the same ledger (see docs/billing.md, "The ledger client").
import type { Bindings } from "../env";
import type { AdmitCommand, AdmitOutcome, SettleCommand } from "./accounting";

/** How long a settlement waits for another call to its ledger before it sends one itself. */
export const SETTLE_COALESCE_MS = 20;
/** At most this many settlements, or admissions, go in one call. */
const MAX_BATCH = 256;
/**
 * A request queued behind another's admission call waits at most this long for it. Past it the
 * call is presumed lost with its request (say, cancelled by a client disconnect) and the queued
 * request sends its own admission; admission is idempotent by generation id, so this is safe even
 * if the lost call did land.
 */
export const ADMIT_WAIT_MS = 5_000;
/** How often a queued admission looks whether its turn came. */
const POLL_MS = 1;
/** Admission calls in flight to one ledger from one isolate before arrivals queue behind them. */
export const MAX_ADMIT_CALLS = 4;

type LedgerStub = ReturnType<typeof ledgerFor>;

/** Waiting settlements by ledger object id, each queue by generation id (oldest first). */
const waiting = new Map<string, Map<string, SettleCommand>>();

/** One request's admission: a queued one is filled in by the call that carries it, and polls for that. */
interface Ticket {
  cmd: AdmitCommand;
  outcome?: AdmitOutcome;
  failure?: unknown;
  /** Set when the call ahead returned and this ticket, first in line, sends the next call. */
  leads?: boolean;
}

/** Per ledger object id: the admission calls in flight (when each was sent) and the admissions queued. */
interface Lane {
  calls: Set<{ sentAt: number }>;
  queue: Ticket[];
}
const lanes = new Map<string, Lane>();

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
  return carryingTo(env, env.LEDGER.idFromName(accountId), call);
}

async function carryingTo<T>(
  env: Bindings,
  id: DurableObjectId,
  call: (ledger: LedgerStub, settles: SettleCommand[]) => Promise<T>,
): Promise<T> {
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
 * Admits one request through the account's ledger. While fewer than MAX_ADMIT_CALLS calls to that
 * ledger are in flight from this isolate it sends its own (with any queued admissions and the
 * waiting settlements); otherwise it queues, and when a call returns, the first in line sends every
 * queued admission as one call. Requests share only plain data (tickets, outcomes); each awaits its
 * own timers, never another request's promise. Under load this makes one Durable Object call per
 * batch of admissions.
 */
export async function admitThrough(
  env: Bindings,
  accountId: string,
  cmd: AdmitCommand,
): Promise<AdmitOutcome> {
  const id = env.LEDGER.idFromName(accountId);
  const key = id.toString();
  const lane = lanes.get(key) ?? { calls: new Set(), queue: [] };
  lanes.set(key, lane);
  const ticket: Ticket = { cmd };
  if (activeCalls(lane) >= MAX_ADMIT_CALLS) {
    lane.queue.push(ticket);
    await turn(ticket);
    if (ticket.outcome) return ticket.outcome;
    if (ticket.failure !== undefined) throw ticket.failure;
    const queued = lane.queue.indexOf(ticket);
    if (queued >= 0) lane.queue.splice(queued, 1);
  }
  const call = { sentAt: Date.now() };
  lane.calls.add(call);
  const batch = [ticket, ...lane.queue.splice(0, MAX_BATCH - 1)];
  try {
    const outcomes = await carryingTo(env, id, (ledger, settles) =>
      ledger.admitMany(
        accountId,
        batch.map((t) => t.cmd),
        settles,
      ),
    );
    // An RPC result belongs to the request that made the call: hand the others plain copies.
    const plain = JSON.parse(JSON.stringify(outcomes)) as AdmitOutcome[];
    batch.forEach((t, i) => {
      t.outcome = plain[i];
    });
  } catch (err) {
    ticket.failure = err;
    const copy = new Error(err instanceof Error ? err.message : String(err));
    for (const t of batch) if (t !== ticket) t.failure = copy;
  }
  lane.calls.delete(call);
  const next = lane.queue.shift();
  if (next) next.leads = true;
  else if (lane.calls.size === 0) lanes.delete(key);
  if (ticket.outcome) return ticket.outcome;
  throw ticket.failure;
}

/** Calls in flight, forgetting any older than ADMIT_WAIT_MS (lost with their request). */
function activeCalls(lane: Lane): number {
  const now = Date.now();
  for (const call of lane.calls) if (now - call.sentAt >= ADMIT_WAIT_MS) lane.calls.delete(call);
  return lane.calls.size;
}

/**
 * Waits until the ticket has its outcome, is first in line to send, or waited ADMIT_WAIT_MS. It
 * polls with timers of its own: workerd forbids resolving a promise of one request from another.
 */
async function turn(ticket: Ticket): Promise<void> {
  const deadline = Date.now() + ADMIT_WAIT_MS;
  while (!ticket.outcome && ticket.failure === undefined && !ticket.leads && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
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
