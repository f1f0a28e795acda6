// The GENERATIONS queue's consumer (the global worker): writes each batch of generation records to
// D1, idempotently by generation id, then tells each account's ledger which records landed (late news
// for reservations reclaimed while their record was queued: docs/billing.md, "Reclaim").

import { ledgerFor } from "../billing/isolate-state";
import type { Bindings } from "../env";
import type { RecordNote } from "../ledger/types";
import { errorText, log } from "../lib/log";
import { type GenerationRecord, insertRecords, type RecordsMessage, writeOne } from "./insert";

/**
 * The consumer's settings, as `[[queues.consumers]]` in wrangler.toml declares them (a test keeps the
 * two in agreement; docs/storage.md says why each is what it is).
 */
export const RECORDS_QUEUE = {
  queue: "gateway-generations",
  maxBatchSize: 10,
  maxBatchTimeoutSeconds: 1,
  maxRetries: 10,
  retryDelaySeconds: 10,
  deadLetterQueue: "gateway-generations-dlq",
} as const;

/** A message's records (a packed message's list, or the one record of an older producer's message). */
const recordsOf = (m: Message<RecordsMessage>): GenerationRecord[] =>
  Array.isArray(m.body) ? m.body : m.body ? [m.body] : [];
const idsOf = (m: Message<RecordsMessage>) =>
  recordsOf(m).map((r) => (typeof r?.id === "string" ? r.id : null));

/**
 * One batch: all its messages' records in one D1 batch (a transaction); if it fails, each record on
 * its own, so one record that cannot be written holds back only its message. A message is acked once
 * all its records are in D1 and their ledgers were told; otherwise retried whole
 * (RECORDS_QUEUE.retryDelaySeconds later), and after the last attempt the queue moves it to the
 * dead-letter queue, logged here by generation ids. Writing and telling are both idempotent, so a
 * redelivered message lands once and charges nothing twice. Also accepts batches of the dead-letter
 * queue, so attaching it as a consumer replays them.
 */
export async function consumeRecords(batch: MessageBatch<RecordsMessage>, env: Bindings): Promise<void> {
  const failed = new Set<Message<RecordsMessage>>();
  const entries = batch.messages.flatMap((m) => recordsOf(m).map((record) => ({ m, record })));
  try {
    await env.DB.batch(
      insertRecords(
        env.DB,
        entries.map((e) => e.record),
      ),
    );
  } catch {
    for (const { m, record } of entries) {
      if (!(await writeOne(env.DB, record, "generation record: queued write failed; retrying")))
        failed.add(m);
    }
  }

  const byAccount = new Map<string, Array<{ m: Message<RecordsMessage>; record: GenerationRecord }>>();
  for (const e of entries) {
    if (failed.has(e.m)) continue;
    const list = byAccount.get(e.record.accountId) ?? [];
    list.push(e);
    byAccount.set(e.record.accountId, list);
  }
  await Promise.all(
    [...byAccount].map(async ([accountId, list]) => {
      try {
        await ledgerFor(env, accountId).recorded(list.map((e) => noteOf(e.record)));
      } catch (err) {
        log("error", {
          message: "generation records: telling the ledger failed; retrying",
          generation_ids: list.map((e) => e.record.id),
          error: errorText(err),
        });
        for (const e of list) failed.add(e.m);
      }
    }),
  );

  for (const m of batch.messages) {
    if (!failed.has(m)) {
      m.ack();
      continue;
    }
    if (m.attempts > RECORDS_QUEUE.maxRetries && batch.queue !== RECORDS_QUEUE.deadLetterQueue) {
      log("error", {
        message: "generation records dead-lettered after their last attempt",
        generation_ids: idsOf(m),
        attempts: m.attempts,
        queue: RECORDS_QUEUE.deadLetterQueue,
      });
    }
    m.retry();
  }
}

function noteOf(r: GenerationRecord): RecordNote {
  return {
    generationId: r.id,
    blockId: r.blockId ?? null,
    costMicros: Math.max(0, Math.ceil(r.costMicros ?? 0)),
    byok: r.isByok ?? false,
  };
}
