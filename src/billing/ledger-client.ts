// The ledger client: admits a request against this isolate's block without a call when it fits,
// otherwise through the account's ledger (admissions that arrive while calls are in flight go
// together as the next call), and settles in the background so settlements ride on the next call
// (see docs/billing.md, "The ledger client"). The isolate's state and the calls: isolate-state.ts.
import type { Bindings } from "../env";
import { BLOCK_MS } from "../ledger/blocks";
import type {
  AdmitCommand,
  AdmitOutcome,
  AdmitReply,
  BlockGrant,
  BlockWant,
  SettleCommand,
} from "../ledger/types";
import {
  blocksOf,
  carryingTo,
  closeWhenDue,
  flush,
  isolates,
  type Lane,
  lanes,
  ledgerId,
  MAX_BATCH,
  send,
  type Ticket,
  take,
  waiting,
} from "./isolate-state";

export { carrying, dropIsolateState, ledgerFor } from "./isolate-state";

/** How long a settlement waits for another call to its ledger before it sends one itself. */
export const SETTLE_COALESCE_MS = 20;
/**
 * A request queued behind another's admission call waits at most this long for it. Past it the
 * call is presumed lost with its request (say, cancelled by a client disconnect) and the queued
 * request sends its own admission; admission is idempotent by generation id, so this is safe even
 * if the lost call did land.
 */
export const ADMIT_WAIT_MS = 5_000;
/**
 * A queued admission looks whether its turn came after 1 ms, then twice as long each time up to
 * this: dozens of requests polling every millisecond starve the very calls they wait for.
 */
const MAX_POLL_MS = 16;
/** Admission calls in flight to one ledger from one isolate before arrivals queue behind them. */
export const MAX_ADMIT_CALLS = 4;
/** While a block is about to come, a burst sends this many calls before queueing (see admitByCall). */
export const MAX_CALLS_WHILE_BLOCK_COMES = 16;
/** A request told to retry (another isolate's block may hold room) asks again at most this often. */
const RETRY_POLL_MS = 20;
/**
 * Longest a request keeps asking again, from the first "retry", before its refusal is final (the
 * ledger says retry only while a block is open or its closing report is due: about 3.25 s at most).
 */
export const MAX_RETRY_WAIT_MS = 5_000;

/** What `ctx.waitUntil` gives: work that outlives the response (closing a block when its time ends). */
export interface Background {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Admits one request: against this isolate's block for its limits when one is open and the request
 * fits (no call), otherwise through the account's ledger, asking for a block when the request can
 * close one (`background`). A refusal the ledger marks "retry" (another isolate's block may hold the
 * room) is asked again until that block's time has surely ended.
 */
export async function admitThrough(
  env: Bindings,
  accountId: string,
  cmd: AdmitCommand,
  background?: Background,
): Promise<AdmitOutcome> {
  const id = ledgerId(env, accountId);
  let retrySince: number | undefined;
  for (;;) {
    // Looked up again after every wait: an idle isolate state is forgotten (see `delivered`), and a
    // block granted into a forgotten copy would never admit, close or report (its room held 60 s).
    const blocks = blocksOf(id.toString());
    const local = blocks.admit(cmd, Date.now());
    if (local) {
      const want = background && blocks.renewal(cmd, Date.now());
      if (want) background.waitUntil(renew(env, accountId, id, cmd, want));
      return local;
    }
    const outcome = await admitByCall(env, accountId, id, cmd, background);
    if (outcome.ok || outcome.retryAt == null) return outcome;
    // Asked again for as long as the ledger says a block may still free room (it says so only while
    // one is open or its closing report is due), whatever the calls' latency; bounded in all. Counted
    // from the first "retry", not from the request's start: in a burst every request starts at once
    // and many wait seconds in the queue, so a clock started then gave up together while a block's
    // room was still coming back (fewer than floor(C/R) admitted across ingresses).
    retrySince ??= Date.now();
    if (Date.now() - retrySince >= MAX_RETRY_WAIT_MS) return { ok: false, rejection: outcome.rejection };
    const wait = Math.min(Math.max(outcome.retryAt - Date.now(), 1), RETRY_POLL_MS);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/**
 * Admits one request through the account's ledger. While fewer than MAX_ADMIT_CALLS calls to that
 * ledger are in flight from this isolate, or a block for it is about to come (asked for, the last ask
 * granted), it sends its own (with any queued admissions and what waits to ride along); otherwise it
 * queues, and when a call returns, the first in line sends every
 * queued admission as one call. Requests share only plain data (tickets, outcomes); each awaits its
 * own timers, never another request's promise. Under load this makes one Durable Object call per
 * batch of admissions.
 */
async function admitByCall(
  env: Bindings,
  accountId: string,
  id: DurableObjectId,
  cmd: AdmitCommand,
  background: Background | undefined,
): Promise<AdmitOutcome> {
  const key = id.toString();
  const lane = lanes.get(key) ?? { calls: new Set(), queue: [] };
  lanes.set(key, lane);
  const ticket: Ticket = { cmd };
  const limit = blocksOf(key).coming(cmd) ? MAX_CALLS_WHILE_BLOCK_COMES : MAX_ADMIT_CALLS;
  if (activeCalls(lane) >= limit) {
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
  // The state as it is now (a queued ticket may have waited while an idle one was forgotten); while
  // this call asks for a block it is not idle, so the grant lands in the state every request uses.
  const blocks = blocksOf(key);
  blocks.closeOpen();
  const want = background ? blocks.want(cmd) : undefined;
  let block: AdmitReply["block"];
  try {
    const reply = await carryingTo(env, id, (ledger, carried) =>
      ledger.admit(
        accountId,
        batch.map((t) => t.cmd),
        carried,
        want,
      ),
    );
    // An RPC result belongs to the request that made the call: hand the others plain copies.
    const plain = JSON.parse(JSON.stringify(reply)) as AdmitReply;
    batch.forEach((t, i) => {
      t.outcome = plain.outcomes[i];
    });
    block = plain.block;
  } catch (err) {
    ticket.failure = err;
    const copy = new Error(err instanceof Error ? err.message : String(err));
    for (const t of batch) if (t !== ticket) t.failure = copy;
  }
  if (want) {
    blocks.answered(cmd, block, call.sentAt, true);
    if (block && ticket.outcome?.ok) ticket.outcome = { ...ticket.outcome, blockId: block.blockId };
    if (block && background) background.waitUntil(closeWhenDue(env, id, block.blockId));
  }
  lane.calls.delete(call);
  const next = lane.queue.shift();
  if (next) next.leads = true;
  else if (lane.calls.size === 0) lanes.delete(key);
  if (ticket.outcome) return ticket.outcome;
  throw ticket.failure;
}

/** Asks for the next block ahead of time, in the background of a request admitted against the current one. */
async function renew(
  env: Bindings,
  accountId: string,
  id: DurableObjectId,
  template: AdmitCommand,
  want: BlockWant,
): Promise<void> {
  const sentAt = Date.now();
  let grant: BlockGrant | undefined;
  try {
    const reply = await carryingTo(env, id, (ledger, carried) =>
      ledger.block(accountId, template, carried, want),
    );
    grant = reply ? { blockId: reply.blockId, sizeMicros: reply.sizeMicros } : undefined;
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        message: "block renewal failed; requests go to the ledger",
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  }
  blocksOf(id.toString()).answered(template, grant, sentAt, false);
  if (grant) await closeWhenDue(env, id, grant.blockId);
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
  for (let poll = 1; !ticket.outcome && ticket.failure === undefined && !ticket.leads; poll *= 2) {
    if (Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(poll, MAX_POLL_MS)));
  }
}

/**
 * Settles a request. One held in a block here is settled at once, locally; its report rides on the
 * next call to the ledger, or is sent BLOCK_MS later if none carried it (by the first request to
 * settle since the block's last such wait). Any other settlement waits
 * up to SETTLE_COALESCE_MS; unless another call to the same ledger from this isolate carried it
 * meanwhile, it is sent then with everything else waiting. Never awaits another request's I/O, and
 * never throws.
 */
export async function settleSoon(env: Bindings, accountId: string, cmd: SettleCommand): Promise<void> {
  const id = ledgerId(env, accountId);
  const key = id.toString();
  const blocks = isolates.get(key);
  const local = blocks?.settle(cmd);
  if (blocks && local) {
    // One request per block waits to send the report if no call carried it meanwhile.
    if (!blocks.claimFlush(local.blockId)) return;
    await new Promise((resolve) => setTimeout(resolve, BLOCK_MS));
    if (blocks.releaseFlush(local.blockId)) await flush(env, id);
    return;
  }
  const ledger = env.LEDGER.get(id);
  const queue = waiting.get(key) ?? new Map<string, SettleCommand>();
  queue.set(cmd.generationId, cmd);
  waiting.set(key, queue);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_COALESCE_MS));
  while (waiting.get(key)?.has(cmd.generationId)) await send(key, ledger, take(key));
}
