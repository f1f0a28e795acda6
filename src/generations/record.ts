// The generation record of an inference call: sent off the response path to the GENERATIONS queue
// (written to D1 by its consumer, consumer.ts), or straight to D1 when there is no queue or the send
// fails; and always before the settlement (the ledger charges reservations reclaimed without one
// from the records: docs/billing.md, "Reclaim").

import { type Reservation, settleInBackground } from "../billing/admission";
import { answerEnded } from "../billing/ledger-client";
import type { Bindings } from "../env";
import { errorText, log } from "../lib/log";
import { type GenerationRecord, insertRecords, type RecordsMessage, writeOne } from "./insert";

export { type GenerationRecord, insertRecord, insertRecords } from "./insert";

/** The part of the execution context this needs (Hono's and Workers' contexts both fit). */
export interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * How long a record waits in the isolate for others to share its send. The queue waits longer: it
 * delivers and bills per message, and each delivery costs the consumer a D1 batch and a ledger call,
 * so fuller, fewer messages cost less (at 20 ms, the bench's consumer batches stalled about 1 in 100
 * requests by milliseconds: p99 at concurrency 1 went from +5.5 to +2.6 ms at 50 ms). A D1 write (no
 * queue: the tests, tools) goes sooner, so a record is readable soon after its request.
 */
export const RECORD_COALESCE_MS = { queue: 50, d1: 20 } as const;
/** At most this many records go in one send or one D1 call (and in one queue message). */
const MAX_RECORDS = 100;
/** Bytes of records per sendBatch, under Queues' 256 KB per batch. */
const MAX_SEND_BYTES = 200 * 1024;
/**
 * Bytes of records per queue message (Queues' 128 KB per message, with room for framing); a record
 * larger than this goes straight to D1.
 */
const MAX_MESSAGE_BYTES = 100 * 1024;
const MAX_POLL_MS = 16;

/** Where this isolate's records go: the queue, or D1 when there is none (see `sinkOf`). */
type Sink = { queue: Queue<RecordsMessage>; d1: D1Database } | { queue?: undefined; d1: D1Database };

/** Records waiting in this isolate, with where each goes (keyed by the binding that carries it). */
const pending: Array<{ via: object; sink: Sink; record: GenerationRecord; bytes: number }> = [];
/** What became of a record sent by another request's call, until its own request reads it. */
const written = new Map<string, "ok" | "failed">();

/**
 * The queue when bound, unless GENERATION_RECORDS is "d1" (the tests, which read a record as soon
 * as its request's waitUntil work is done); D1 otherwise (tools, harnesses without the binding).
 */
function sinkOf(env: Bindings): Sink {
  return env.GENERATIONS && env.GENERATION_RECORDS !== "d1"
    ? { queue: env.GENERATIONS, d1: env.DB }
    : { d1: env.DB };
}

/**
 * Sends the record, sharing one call (a sendBatch, or a D1 batch without a queue) with the other
 * records of this isolate made within RECORD_COALESCE_MS (per sink): whichever request finds records waiting
 * sends them all; the others see their outcome in plain data, polling with their own timers
 * (workerd forbids awaiting another request's promise). A record whose call failed is written
 * straight to D1 by its own request (idempotent by id, so a send that did land is no harm), and a
 * record that still fails is logged with its generation id (never the body or a credential).
 */
export async function writeRecord(sink: Sink, record: GenerationRecord): Promise<void> {
  const via = sink.queue ?? sink.d1;
  const bytes = sink.queue ? JSON.stringify(record).length : 0;
  if (bytes > MAX_MESSAGE_BYTES) {
    await writeOne(sink.d1, record, "generation record write failed");
    return;
  }
  pending.push({ via, sink, record, bytes });
  await new Promise((resolve) => setTimeout(resolve, RECORD_COALESCE_MS[sink.queue ? "queue" : "d1"]));
  for (let poll = 1; ; poll = Math.min(poll * 2, MAX_POLL_MS)) {
    const outcome = written.get(record.id);
    if (outcome) {
      written.delete(record.id);
      if (outcome === "failed") await writeOne(sink.d1, record, "generation record write failed");
      return;
    }
    if (pending.some((p) => p.record === record)) await sendBatch(via);
    else await new Promise((resolve) => setTimeout(resolve, poll));
  }
}

/** Sends up to MAX_RECORDS waiting records bound for `via` in one call, and notes each one's outcome. */
async function sendBatch(via: object): Promise<void> {
  const mine: GenerationRecord[] = [];
  const sizes: number[] = [];
  let sink: Sink | undefined;
  let bytes = 0;
  for (let i = 0; i < pending.length && mine.length < MAX_RECORDS; ) {
    const p = pending[i]!;
    if (p.via !== via || (mine.length > 0 && bytes + p.bytes > MAX_SEND_BYTES)) {
      i++;
      continue;
    }
    pending.splice(i, 1);
    mine.push(p.record);
    sizes.push(p.bytes);
    sink = p.sink;
    bytes += p.bytes;
  }
  if (!sink) return;
  let outcome: "ok" | "failed" = "ok";
  try {
    if (sink.queue)
      await sink.queue.sendBatch(packed(mine, sizes).map((body) => ({ body, contentType: "json" })));
    else await sink.d1.batch(insertRecords(sink.d1, mine));
  } catch (err) {
    outcome = "failed";
    if (sink.queue) {
      log("error", {
        message: "generation records: queue send failed; writing them to D1",
        generation_ids: mine.map((r) => r.id),
        error: errorText(err),
      });
    }
  }
  for (const r of mine) written.set(r.id, outcome);
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
 * `isByok` of the record are what is settled. Never throws; run it in waitUntil.
 */
export async function finishGeneration(
  env: Bindings,
  reservation: Reservation,
  record: GenerationRecord,
): Promise<void> {
  // The answer has ended: a refused admission that starts now waits for this settlement (ledger-client).
  answerEnded(env, reservation.accountId, reservation.generationId);
  await writeRecord(sinkOf(env), { ...record, blockId: reservation.blockId ?? null });
  await settleInBackground(env, reservation, {
    actualMicros: record.costMicros ?? 0,
    isByok: record.isByok ?? false,
  });
}
