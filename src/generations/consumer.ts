// The GENERATIONS queue's consumer (the global worker): writes each batch of generation records to
// D1, idempotently by generation id, then tells each account's ledger which records landed (late news
// for reservations reclaimed while their record was queued: docs/billing.md, "Reclaim").

import { ledgerFor } from "../billing/isolate-state";
import type { Bindings } from "../env";
import type { RecordNote } from "../ledger/types";
import { errorText, log } from "../lib/log";
import { type GenerationRecord, insertRecords, writeOne } from "./insert";

/**
 * The consumer's settings, as `[[queues.consumers]]` in wrangler.toml declares them (a test keeps the
 * two in agreement; docs/storage.md says why each is what it is).
 */
export const RECORDS_QUEUE = {
  queue: "gateway-generations",
  maxBatchSize: 100,
  maxBatchTimeoutSeconds: 1,
  maxRetries: 10,
  retryDelaySeconds: 10,
  deadLetterQueue: "gateway-generations-dlq",
} as const;

const idOf = (m: Message<GenerationRecord>) => (typeof m.body?.id === "string" ? m.body.id : null);

/**
 * One batch: all records in one D1 batch (a transaction); if it fails, each record on its own, so
 * one record that cannot be written holds back only itself. A record is acked once it is in D1 and
 * its ledger was told; otherwise retried (RECORDS_QUEUE.retryDelaySeconds later), and after the last
 * attempt the queue moves it to the dead-letter queue, logged here by generation id. Writing and
 * telling are both idempotent, so a redelivered batch lands once and charges nothing twice. Also
 * accepts batches of the dead-letter queue, so attaching it as a consumer replays them.
 */
export async function consumeRecords(batch: MessageBatch<GenerationRecord>, env: Bindings): Promise<void> {
  const failed = new Set<Message<GenerationRecord>>();
  try {
    await env.DB.batch(
      insertRecords(
        env.DB,
        batch.messages.map((m) => m.body),
      ),
    );
  } catch {
    for (const m of batch.messages) {
      if (!(await writeOne(env.DB, m.body, "generation record: queued write failed; retrying")))
        failed.add(m);
    }
  }

  const byAccount = new Map<string, Array<Message<GenerationRecord>>>();
  for (const m of batch.messages) {
    if (failed.has(m)) continue;
    const list = byAccount.get(m.body.accountId) ?? [];
    list.push(m);
    byAccount.set(m.body.accountId, list);
  }
  await Promise.all(
    [...byAccount].map(async ([accountId, messages]) => {
      try {
        await ledgerFor(env, accountId).recorded(messages.map((m) => noteOf(m.body)));
      } catch (err) {
        log("error", {
          message: "generation records: telling the ledger failed; retrying",
          generation_ids: messages.map(idOf),
          error: errorText(err),
        });
        for (const m of messages) failed.add(m);
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
        message: "generation record dead-lettered after its last attempt",
        generation_id: idOf(m),
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
