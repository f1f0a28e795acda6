// The ledger client: admits a request against this isolate's block without a call when it fits,
// otherwise through the account's ledger (a request that finds enough calls in flight waits and looks
// again, so a block one of them brings admits it with no call), and settles in the background so
// settlements ride on the next call (see docs/billing.md, "The ledger client"). The isolate's state
// and the calls: isolate-state.ts.
import type { Bindings } from "../env";
import { BLOCK_MS } from "../ledger/blocks";
import type {
  AdmitCommand,
  AdmitOutcome,
  AdmitReply,
  BlockAsk,
  BlockGrant,
  Rejection,
  SettleCommand,
} from "../ledger/types";
import { errorText, log } from "../lib/log";
import type { Background } from "../lib/refresh-ahead";
import {
  blocksOf,
  carryingTo,
  closeWhenDue,
  flush,
  inFlight,
  isolates,
  ledgerId,
  send,
  settlementDone,
  settlingSince,
  take,
  unsettledSince,
  waiting,
} from "./isolate-state";

export { answerEnded, carrying, dropIsolateState, ledgerFor } from "./isolate-state";

/** How long a settlement waits for another call to its ledger before it sends one itself. */
export const SETTLE_COALESCE_MS = 20;
/**
 * An admission call older than this is presumed lost with its request (say, cancelled by a client
 * disconnect) and no longer counts as in flight; a request waits no longer than this behind calls.
 */
export const ADMIT_WAIT_MS = 5_000;
/**
 * A request waiting behind calls in flight looks again after 1 ms, then twice as long each time up
 * to this: dozens of requests polling every millisecond starve the very calls they wait for.
 */
const MAX_POLL_MS = 16;
/** Admission calls in flight to one ledger from one isolate before arrivals wait for them. */
export const MAX_ADMIT_CALLS = 4;
/** While a block is about to come, a burst sends this many calls before waiting (see admitThrough). */
export const MAX_CALLS_WHILE_BLOCK_COMES = 16;
/** A request told to retry (another isolate's block may hold room) asks again at most this often. */
const RETRY_POLL_MS = 20;
/**
 * Longest a request keeps asking again, from the first "retry", before its refusal is final (the
 * ledger says retry only while a block is open or its closing report is due: about 3.25 s at most).
 */
export const MAX_RETRY_WAIT_MS = 5_000;
/**
 * Longest a refused request waits for the settlements of answers that ended here before it started
 * (their records being written) before its refusal is final.
 */
export const ENDED_WAIT_MS = 1_000;
/** The refusals that room coming back can undo. */
const ROOM_REASONS = new Set<Rejection["reason"]>(["balance", "key_cap", "budget"]);

export type { Background } from "../lib/refresh-ahead";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Admits one request: against this isolate's block for its limits when one is open and the request
 * fits (no call), otherwise through the account's ledger, asking for a block when the request can
 * close one (`background`). While MAX_ADMIT_CALLS calls to that ledger are in flight from this
 * isolate (MAX_CALLS_WHILE_BLOCK_COMES while a block is about to come), it waits and looks again:
 * a block that has just arrived admits it with no call. Requests share only plain data; each awaits
 * its own timers, never another request's promise. A refusal the ledger marks "retry" (another
 * isolate's block may hold the room) is asked again until that block's time has surely ended.
 */
export async function admitThrough(
  env: Bindings,
  accountId: string,
  cmd: AdmitCommand,
  background?: Background,
): Promise<AdmitOutcome> {
  const id = ledgerId(env, accountId);
  const started = Date.now();
  let retrySince: number | undefined;
  let waitedForEnded = false;
  for (let poll = 1; ; ) {
    // Looked up again after every wait: an idle isolate state is forgotten (see `delivered`), and a
    // block granted into a forgotten copy would never admit, close or report (its room held 60 s).
    const blocks = blocksOf(id.toString());
    const local = blocks.admit(cmd, Date.now());
    if (local) {
      const asks = background ? blocks.renewals(cmd, Date.now()) : [];
      if (asks.length > 0) background?.waitUntil(renew(env, accountId, id, asks));
      return local;
    }
    const limit = blocks.coming(cmd) ? MAX_CALLS_WHILE_BLOCK_COMES : MAX_ADMIT_CALLS;
    // Bounded: one that waited ADMIT_WAIT_MS (others kept taking the free turns) sends its own.
    if (activeCalls(id.toString()) >= limit && Date.now() - started < ADMIT_WAIT_MS) {
      await sleep(Math.min(poll, MAX_POLL_MS));
      poll *= 2;
      continue;
    }
    const outcome = await admitByCall(env, accountId, id, cmd, background);
    if (
      !outcome.ok &&
      outcome.retryAt == null &&
      !waitedForEnded &&
      ROOM_REASONS.has(outcome.rejection.reason)
    ) {
      // An answer of this isolate ended before this request started, and its settlement has not
      // reached the ledger yet: its client may well be this one, sending its next request. Once every
      // such settlement is on its way (waiting to ride on the next call, or delivered), ask again.
      waitedForEnded = true;
      if (unsettledSince(id.toString(), started)) {
        for (let wait = 1; settlingSince(id.toString(), started) && Date.now() - started < ENDED_WAIT_MS; ) {
          await sleep(wait);
          wait = Math.min(wait * 2, MAX_POLL_MS);
        }
        poll = 1;
        continue;
      }
    }
    if (outcome.ok || outcome.retryAt == null) return outcome;
    retrySince ??= Date.now();
    // The room may be held by this isolate's own open blocks (another key's, or this key's too full
    // for the request): closed, their unused rest goes back with the next call, which goes at once.
    // Closing them only now, not before every call, keeps the blocks of an account's other keys
    // open while room is plentiful (closing them on every call made each key's requests call too).
    if (blocksOf(id.toString()).closeOpen()) continue;
    // Asked again for as long as the ledger says a block may still free room (it says so only while
    // one is open or its closing report is due), whatever the calls' latency; bounded in all. Counted
    // from the first "retry", not from the request's start: in a burst every request starts at once
    // and many wait seconds for their turn, so a clock started then gave up together while a block's
    // room was still coming back (fewer than floor(C/R) admitted across ingresses).
    if (Date.now() - retrySince >= MAX_RETRY_WAIT_MS) return { ok: false, rejection: outcome.rejection };
    await sleep(Math.min(Math.max(outcome.retryAt - Date.now(), 1), RETRY_POLL_MS));
    poll = 1;
  }
}

/**
 * One admission call to the account's ledger, carrying what waits to ride along; it asks for a block
 * when the request can close one and none is being asked for.
 */
async function admitByCall(
  env: Bindings,
  accountId: string,
  id: DurableObjectId,
  cmd: AdmitCommand,
  background: Background | undefined,
): Promise<AdmitOutcome> {
  const key = id.toString();
  const calls = inFlight.get(key) ?? new Set();
  inFlight.set(key, calls);
  const call = { sentAt: Date.now() };
  calls.add(call);
  // While the call asks for a block the state is not idle, so the grant lands in the state every
  // request uses.
  const blocks = blocksOf(key);
  const want = background ? blocks.want(cmd) : undefined;
  let reply: AdmitReply | undefined;
  try {
    reply = await carryingTo(env, id, (ledger, carried) => ledger.admit(accountId, [cmd], carried, want));
  } finally {
    calls.delete(call);
    if (calls.size === 0 && inFlight.get(key) === calls) inFlight.delete(key);
    if (want) blocks.answered(cmd, reply?.block, call.sentAt, true);
  }
  const outcome = reply.outcomes[0]!;
  const block = want && reply.block;
  if (!block || !outcome.ok) return outcome;
  if (background) background.waitUntil(closeWhenDue(env, id, block.blockId));
  return { ...outcome, blockId: block.blockId };
}

/**
 * Asks for the next blocks ahead of time (one call for every key's due block), in the background of
 * a request admitted against the current one.
 */
async function renew(env: Bindings, accountId: string, id: DurableObjectId, asks: BlockAsk[]): Promise<void> {
  const sentAt = Date.now();
  let grants: (BlockGrant | null)[] = [];
  try {
    const reply = await carryingTo(env, id, (ledger, carried) => ledger.block(accountId, asks, carried));
    // A ledger of the previous version (during a deploy) answers one grant or null: none taken.
    grants = Array.isArray(reply) ? reply : [];
  } catch (err) {
    log("error", { message: "block renewal failed; requests go to the ledger", error: errorText(err) });
  }
  const blocks = blocksOf(id.toString());
  asks.forEach((ask, i) => {
    blocks.answered(ask.template, grants[i] ?? undefined, sentAt, false);
  });
  await Promise.all(grants.map((grant) => grant && closeWhenDue(env, id, grant.blockId)));
}

/** Admission calls in flight to the ledger `key`, forgetting any older than ADMIT_WAIT_MS (lost with their request). */
function activeCalls(key: string): number {
  const calls = inFlight.get(key);
  if (!calls) return 0;
  const now = Date.now();
  for (const call of calls) if (now - call.sentAt >= ADMIT_WAIT_MS) calls.delete(call);
  return calls.size;
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
    settlementDone(key, cmd.generationId);
    // One request per ledger waits to send the reports if no call carried them meanwhile.
    if (!blocks.claimFlush()) return;
    await sleep(BLOCK_MS);
    if (blocks.releaseFlush()) await flush(env, id);
    return;
  }
  const ledger = env.LEDGER.get(id);
  const queue = waiting.get(key) ?? new Map<string, SettleCommand>();
  queue.set(cmd.generationId, cmd);
  waiting.set(key, queue);
  await sleep(SETTLE_COALESCE_MS);
  while (waiting.get(key)?.has(cmd.generationId)) await send(key, ledger, take(key));
}
