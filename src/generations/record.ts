// The generation record of an inference call: sent off the response path to the GENERATIONS queue
// (written to D1 by its consumer, consumer.ts), or straight to D1 when there is no queue or the send
// fails; and always before the settlement (the ledger charges reservations reclaimed without one
// from the records: docs/billing.md, "Reclaim").

import { type Reservation, settleInBackground } from "../billing/admission";
import type { Bindings } from "../env";
import { errorText, log } from "../lib/log";
import { type GenerationRecord, insertRecords, type RecordsMessage, writeOne } from "./insert";

export { type GenerationRecord, insertRecord, insertRecords } from "./insert";

/** The part of the execution context this needs (Hono's and Workers' contexts both fit). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/** How long a record waits in the isolate for others to share its send (or D1 call). */
export const RECORD_COALESCE_MS = 20;
/** At most this many records go in one send or one D1 call (and in one queue message). */
const MAX_RECORDS = 100;
/** Bytes of records per sendBatch, under Queues' 256 KB per batch. */
const MAX_SEND_BYTES = 200 * 1024;
/**
 * Bytes of records per queue message (Queues' 128 KB per message, with room for framing); a record
 * larger than this goes straight to D1.
 */
const MAX_MESSAGE_BYTES = 100 * 1024;

/** Where this isolate's records go: the queue, or D1 when there is none (see `sinkOf`). */
type Sink = { queue: Queue<RecordsMessage>; d1: D1Database } | { queue?: undefined; d1: D1Database };

/** A record handed over and not yet sent, with what runs once it landed (its settlement). */
interface Waiting {
  /** The binding that carries it (records share a call only with records bound the same way). */
  via: object;
  sink: Sink;
  record: GenerationRecord;
  bytes: number;
  settle: () => Promise<void>;
}

/** Records waiting in this isolate for the driver's next call. */
const pending: Waiting[] = [];

/** The request whose waitUntil makes this isolate's calls, and since when (see `handOver`). */
let driver: { since: number } | null = null;
/**
 * After this long the next request to hand a record over takes the driver's part: under steady load
 * the records never run out, and one request's waitUntil must not run on for ever.
 */
export const DRIVER_MS = 2_000;

/** The queue when bound; D1 otherwise (tools, harnesses without the binding). */
function sinkOf(env: Bindings): Sink {
  return env.GENERATIONS ? { queue: env.GENERATIONS, d1: env.DB } : { d1: env.DB };
}

/**
 * Hands the record over, and runs `settle` once it landed. Records made in this isolate within
 * RECORD_COALESCE_MS share one call (a sendBatch, or a D1 batch without a queue), made by one
 * request at a time, the driver, in its own waitUntil: it waits, sends every waiting record, and
 * goes on while records keep coming (for up to DRIVER_MS, then the next request takes over). Every
 * other request's work ends at once. (Each request waiting on its own timer, then polling for its
 * record's outcome, cost two or three isolate wake-ups per request: about a fifth of the gateway's
 * throughput in the bench.) A record too large for a queue message goes straight to D1 from its
 * own request.
 */
function handOver(sink: Sink, record: GenerationRecord, settle: () => Promise<void>): Promise<void> {
  const bytes = sink.queue ? JSON.stringify(record).length : 0;
  if (bytes > MAX_MESSAGE_BYTES)
    return writeOne(sink.d1, record, "generation record write failed").then(settle);
  pending.push({ via: sink.queue ?? sink.d1, sink, record, bytes, settle });
  if (driver && Date.now() - driver.since < DRIVER_MS) return Promise.resolve();
  return drive();
}

async function drive(): Promise<void> {
  const me = { since: Date.now() };
  driver = me;
  // Settlements may wait (a block's report waits up to BLOCK_MS for a call to carry it): they run
  // beside the sends, which never wait for them, and the driver's work ends once they are done.
  const settling: Promise<void>[] = [];
  try {
    while (pending.length > 0 && driver === me) {
      await new Promise((resolve) => setTimeout(resolve, RECORD_COALESCE_MS));
      while (pending.length > 0 && driver === me) settling.push(...(await sendBatch(pending[0]!.via)));
    }
  } finally {
    if (driver === me) driver = null;
  }
  await Promise.all(settling);
}

/**
 * Sends up to MAX_RECORDS waiting records bound for `via` in one call, then starts their settlements
 * (returned). A record whose call failed is written to D1 on its own (idempotent by id, so a send
 * that did land is no harm); one that still fails is logged with its generation id (never the body
 * or a credential).
 */
async function sendBatch(via: object): Promise<Promise<void>[]> {
  const mine: Waiting[] = [];
  let bytes = 0;
  for (let i = 0; i < pending.length && mine.length < MAX_RECORDS; ) {
    const p = pending[i]!;
    if (p.via !== via || (mine.length > 0 && bytes + p.bytes > MAX_SEND_BYTES)) {
      i++;
      continue;
    }
    pending.splice(i, 1);
    mine.push(p);
    bytes += p.bytes;
  }
  const sink = mine[0]?.sink;
  if (!sink) return [];
  const records = mine.map((w) => w.record);
  try {
    if (sink.queue) {
      const sizes = mine.map((w) => w.bytes);
      await sink.queue.sendBatch(packed(records, sizes).map((body) => ({ body, contentType: "json" })));
    } else await sink.d1.batch(insertRecords(sink.d1, records));
  } catch (err) {
    if (sink.queue) {
      log("error", {
        message: "generation records: queue send failed; writing them to D1",
        generation_ids: records.map((r) => r.id),
        error: errorText(err),
      });
    }
    await Promise.all(records.map((r) => writeOne(sink.d1, r, "generation record write failed")));
  }
  return mine.map((w) => w.settle());
}

/**
 * Records in as few messages as the message size allows: Queues bills and delivers per message, and
 * a message per record made the queue's own work (local and billed) grow with traffic ten times over.
 */
function packed(records: GenerationRecord[], sizes: number[]): RecordsMessage[] {
  const messages: RecordsMessage[] = [];
  let message: GenerationRecord[] = [];
  let bytes = 0;
  for (const [i, r] of records.entries()) {
    const size = sizes[i]!;
    if (message.length > 0 && bytes + size > MAX_MESSAGE_BYTES) {
      messages.push(message);
      message = [];
      bytes = 0;
    }
    message.push(r);
    bytes += size + 1;
  }
  if (message.length > 0) messages.push(message);
  return messages;
}

/**
 * The end of an inference call that was admitted: its generation record, then its settlement, in
 * that order. So every charge the ledger was told of has a record (in D1, or in the queue, whose
 * consumer tells the ledger once it wrote it), and a record whose settlement never arrived (the
 * isolate died in between) is charged when the ledger reclaims the reservation or, if the record was
 * still queued then, when the consumer reports it (docs/billing.md, "Reclaim"). `costMicros` and
 * `isByok` of the record are what is settled. Never throws; run it in waitUntil. It may end before
 * the record landed: the isolate's driver request then sends and settles it (see `handOver`).
 */
export async function finishGeneration(
  env: Bindings,
  reservation: Reservation,
  record: GenerationRecord,
): Promise<void> {
  const settle = () =>
    settleInBackground(env, reservation, {
      actualMicros: record.costMicros ?? 0,
      isByok: record.isByok ?? false,
    });
  const full = { ...record, blockId: reservation.blockId ?? null };
  // The tests read a record as soon as its own request's waitUntil is done: each request writes its
  // own, after the wait a handed-over record has (so settlements come as late as they do in production).
  if (env.GENERATION_RECORDS === "d1") {
    await new Promise((resolve) => setTimeout(resolve, RECORD_COALESCE_MS));
    await writeOne(env.DB, full, "generation record write failed");
    await settle();
    return;
  }
  await handOver(sinkOf(env), full, settle);
}
