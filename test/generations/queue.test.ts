// Generation records through the GENERATIONS queue: the consumer writes each record once however often
// a batch is delivered or fails, the ledger still charges a record that was queued when its reservation
// was reclaimed, and the producer falls back to D1 when it cannot send.
import {
  createExecutionContext,
  createMessageBatch,
  env,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import app from "../../src/app";
import { dropIsolateState, ledgerFor } from "../../src/billing/ledger-client";
import { getDb, tables } from "../../src/db/client";
import type { Bindings } from "../../src/env";
import { RECORDS_QUEUE } from "../../src/generations/consumer";
import type { GenerationRecord, RecordsMessage } from "../../src/generations/insert";
import { finishGeneration, writeRecord } from "../../src/generations/record";
import worker from "../../src/index";
import { UNCLAIMED_BLOCK_MS } from "../../src/ledger/blocks";
import { LEASE_MS } from "../../src/ledger/core";
import wranglerToml from "../../wrangler.toml?raw";
import { countingEnv } from "../billing/counting-env";
import { createAccount, type TestAccount } from "../helpers/accounts";
import { BASE } from "../helpers/http";

const record = (acct: TestAccount, over: Partial<GenerationRecord> = {}): GenerationRecord => ({
  id: `gen-${crypto.randomUUID()}`,
  accountId: acct.accountId,
  workspaceId: acct.workspaceId,
  keyHash: acct.apiKeyHash,
  modality: "embeddings",
  model: "sandbox/embed-small",
  provider: "sandbox",
  isByok: false,
  status: "completed",
  usage: { prompt_tokens: 5 },
  costMicros: 120,
  region: "global",
  ...over,
});

/** Delivers the records as the queue would (attempt `attempts`) and answers what the consumer acked and retried. */
async function deliver(records: GenerationRecord[], attempts = 1, queue: string = RECORDS_QUEUE.queue) {
  const batch = createMessageBatch<GenerationRecord>(
    queue,
    records.map((body) => ({ id: `msg-${body.id}`, timestamp: new Date(), attempts, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.explicitAcks.map((id) => id.slice(4)).sort(),
    retried: result.retryMessages.map((m) => m.msgId.slice(4)).sort(),
  };
}

/** Delivers packed messages (each a list of records, as producers send them); acked and retried by message index. */
async function deliverPacked(messages: GenerationRecord[][], attempts = 1) {
  const batch = createMessageBatch<RecordsMessage>(
    RECORDS_QUEUE.queue,
    messages.map((body, i) => ({ id: `msg-${i}`, timestamp: new Date(), attempts, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.explicitAcks.map((id) => Number(id.slice(4))).sort(),
    retried: result.retryMessages.map((m) => Number(m.msgId.slice(4))).sort(),
  };
}

/** Each record's request admitted by the ledger, with a reservation of `worstCaseMicros`. */
async function reserve(acct: TestAccount, records: GenerationRecord[], worstCaseMicros: number) {
  const admitted = await ledgerFor(env, acct.accountId).admit(
    acct.accountId,
    records.map((r) => ({
      generationId: r.id,
      keyHash: acct.apiKeyHash,
      cap: null,
      budgets: [],
      worstCaseMicros,
      byok: false,
      freeModel: false,
    })),
  );
  expect(admitted.outcomes.every((o) => o.ok)).toBe(true);
}

/** Each record's request admitted by the ledger (10,000 micro-USD worst case), then its lease ended and reclaimed. */
async function reserveThenReclaim(acct: TestAccount, records: GenerationRecord[]) {
  const ledger = ledgerFor(env, acct.accountId);
  await reserve(acct, records, 10_000);
  await runInDurableObject(ledger, (instance) => {
    instance.clock = () => Date.now() + LEASE_MS + 1_000;
  });
  expect(await runDurableObjectAlarm(ledger)).toBe(true);
}

async function rows(ids: string[]) {
  return getDb(env.DB).select().from(tables.generations).where(inArray(tables.generations.id, ids));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the consumer", () => {
  it("writes a batch delivered twice once, and acks it both times", async () => {
    const acct = await createAccount();
    const batch = Array.from({ length: 5 }, (_, i) => record(acct, { costMicros: 100 + i }));
    const ids = batch.map((r) => r.id).sort();
    expect(await deliver(batch)).toEqual({ acked: ids, retried: [] });
    // The redelivery carries other values: the first write stands.
    expect(await deliver(batch.map((r) => ({ ...r, costMicros: 9_999 })))).toEqual({
      acked: ids,
      retried: [],
    });
    const stored = await rows(ids);
    expect(stored.map((r) => r.id).sort()).toEqual(ids);
    expect(stored.map((r) => r.costMicros).sort()).toEqual([100, 101, 102, 103, 104]);
  });

  it("retries only the record whose D1 write failed mid-batch; redelivered, every record lands exactly once", async () => {
    const acct = await createAccount();
    const batch = Array.from({ length: 6 }, () => record(acct));
    const poisoned = batch[3]!.id;
    // D1 itself fails the write at the fourth row of the batch's insert (so the batch's transaction
    // is rolled back), and again for that record alone, until the trigger is dropped.
    const trigger = `fail_${crypto.randomUUID().replaceAll("-", "")}`;
    await env.DB.exec(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON generations WHEN NEW.id = '${poisoned}' BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END`,
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const ids = batch.map((r) => r.id);
    try {
      const first = await deliver(batch);
      expect(first.retried).toEqual([poisoned]);
      expect(first.acked).toEqual(ids.filter((id) => id !== poisoned).sort());
      expect((await rows(ids)).map((r) => r.id).sort()).toEqual(first.acked);
      // The last attempt's failure is logged by generation id: the queue dead-letters it.
      const last = await deliver([batch[3]!], RECORDS_QUEUE.maxRetries + 1);
      expect(last.retried).toEqual([poisoned]);
      const logged = errors.mock.calls.map((c) => String(c[0]));
      expect(logged.some((l) => l.includes("dead-lettered") && l.includes(poisoned))).toBe(true);
      expect(logged.join("\n")).not.toContain(acct.apiKey);
    } finally {
      await env.DB.exec(`DROP TRIGGER ${trigger}`);
    }
    // The queue redelivers what was retried; a redelivery of the whole batch changes nothing either.
    expect(await deliver([batch[3]!], 2)).toEqual({ acked: [poisoned], retried: [] });
    expect(await deliver(batch, 2)).toEqual({ acked: [...ids].sort(), retried: [] });
    const stored = await rows(ids);
    expect(stored.map((r) => r.id).sort()).toEqual([...ids].sort());
  });

  it("writes packed messages once each; a message with a record D1 refuses is retried whole, and lands once", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const ledger = ledgerFor(env, acct.accountId);
    const messages = [0, 1, 2].map((m) =>
      Array.from({ length: 4 }, (_, i) => record(acct, { costMicros: 1_000 * (m + 1) + i })),
    );
    const all = messages.flat();
    // Reserved, then reclaimed before any record landed: each record the consumer reports is late news.
    await reserveThenReclaim(acct, all);

    const poisoned = messages[1]![2]!.id;
    const trigger = `fail_${crypto.randomUUID().replaceAll("-", "")}`;
    await env.DB.exec(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON generations WHEN NEW.id = '${poisoned}' BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END`,
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await deliverPacked(messages)).toEqual({ acked: [0, 2], retried: [1] });
      const last = await deliverPacked([messages[1]!], RECORDS_QUEUE.maxRetries + 1);
      expect(last.retried).toEqual([0]);
      const logged = errors.mock.calls.map((c) => String(c[0]));
      expect(logged.some((l) => l.includes("dead-lettered") && l.includes(poisoned))).toBe(true);
    } finally {
      await env.DB.exec(`DROP TRIGGER ${trigger}`);
    }
    // The other messages' records landed and were charged; the retried message's other records landed
    // but were not reported to the ledger until its message is acked.
    const landed = (await rows(all.map((r) => r.id))).map((r) => r.id).sort();
    expect(landed).toEqual(
      all
        .filter((r) => r.id !== poisoned)
        .map((r) => r.id)
        .sort(),
    );
    const sum = (rs: GenerationRecord[]) => rs.reduce((n, r) => n + (r.costMicros ?? 0), 0);
    const partly = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(partly.account.spent).toBe(sum(messages[0]!) + sum(messages[2]!));

    // Redelivered (the retried message, then everything again): every record once, charged once.
    expect(await deliverPacked([messages[1]!], 2)).toEqual({ acked: [0], retried: [] });
    expect(await deliverPacked(messages, 2)).toEqual({ acked: [0, 1, 2], retried: [] });
    expect((await rows(all.map((r) => r.id))).map((r) => r.id).sort()).toEqual(all.map((r) => r.id).sort());
    const after = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(after.account).toMatchObject({ spent: sum(all), reserved: 0 });
  });

  it("replays batches of the dead-letter queue the same way", async () => {
    const acct = await createAccount();
    const r = record(acct);
    expect(await deliver([r], 1, RECORDS_QUEUE.deadLetterQueue)).toEqual({ acked: [r.id], retried: [] });
    expect(await rows([r.id])).toHaveLength(1);
  });
});

/** A queue that keeps what is sent to it, as the real one does until its consumer runs: its records, and its messages. */
function holdingQueue() {
  const held: GenerationRecord[] = [];
  const messages: RecordsMessage[] = [];
  const keep = (body: RecordsMessage) => {
    messages.push(structuredClone(body));
    held.push(...(Array.isArray(body) ? body : [body]).map((r) => structuredClone(r)));
  };
  const queue = {
    send: async (body: RecordsMessage) => keep(body),
    sendBatch: async (sent: Iterable<MessageSendRequest<RecordsMessage>>) => {
      for (const m of sent) keep(m.body);
    },
  };
  return { held, messages, queue: queue as unknown as Queue<RecordsMessage> };
}

async function embed(acct: TestAccount, appEnv: Bindings, n: number) {
  const ctx = createExecutionContext();
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      app.fetch(
        new Request(`${BASE}/embeddings`, {
          method: "POST",
          headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
          body: JSON.stringify({ model: "sandbox/embed-small", input: `text number ${i} to embed` }),
        }),
        { ...appEnv, REGION: "global" },
        ctx,
      ),
    ),
  );
  const costs = await Promise.all(
    answers.map(async (res) => {
      expect(res.status).toBe(200);
      return ((await res.json()) as { usage: { cost: number } }).usage.cost;
    }),
  );
  await waitOnExecutionContext(ctx);
  return Math.round(costs.reduce((sum, c) => sum + c, 0) * 1_000_000);
}

describe("a record still queued when its reservation is reclaimed", () => {
  it("is charged when the consumer writes it (requests admitted against a block, reports lost)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    // The isolate's reports never reach the ledger and its records wait in the queue; then it dies.
    const counted = countingEnv((method) => method === "settleAndReport");
    const { held, messages, queue } = holdingQueue();
    const reported = await embed(
      acct,
      { ...counted.env, GENERATION_RECORDS: undefined, GENERATIONS: queue },
      24,
    );
    dropIsolateState();
    expect(held).toHaveLength(24);
    // Made together, the records went out packed: fewer messages than records, each a list.
    expect(messages.length).toBeLessThan(24);
    expect(messages.every((m) => Array.isArray(m) && m.length > 0)).toBe(true);
    expect(held.filter((r) => r.blockId != null).length).toBeGreaterThan(0);
    expect(await rows(held.map((r) => r.id))).toHaveLength(0);

    // The lease ends and the alarm reclaims: D1 holds no record yet, so the block is charged nothing.
    const ledger = ledgerFor(env, acct.accountId);
    await runInDurableObject(ledger, (instance) => {
      instance.clock = () => Date.now() + Math.max(LEASE_MS, UNCLAIMED_BLOCK_MS) + 1_000;
    });
    expect(await runDurableObjectAlarm(ledger)).toBe(true);
    const reclaimed = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(reclaimed.keys[acct.apiKeyHash]!.reserved).toEqual({ credits: 0, byok: 0 });
    expect(reclaimed.keys[acct.apiKeyHash]!.usage.total).toBeLessThan(reported);

    // The consumer writes the records and reports them: the key is charged exactly what was answered,
    // and a redelivery charges nothing more.
    expect((await deliver(held.slice(0, 10))).retried).toEqual([]);
    expect((await deliver(held.slice(10))).retried).toEqual([]);
    expect((await deliver(held)).retried).toEqual([]);
    const after = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(after.keys[acct.apiKeyHash]!.usage.total).toBe(reported);
    expect(after.account).toMatchObject({ spent: reported, reserved: 0 });
  });

  it("is charged when the consumer writes it (a request's own reservation, its settlement lost)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const ledger = ledgerFor(env, acct.accountId);
    const r = record(acct, { costMicros: 4_321 });
    await reserveThenReclaim(acct, [r]);
    const reclaimed = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(reclaimed.account).toMatchObject({ spent: 0, reserved: 0 });

    expect(await deliver([r])).toEqual({ acked: [r.id], retried: [] });
    expect(await deliver([r])).toEqual({ acked: [r.id], retried: [] });
    const after = await ledger.status(acct.accountId, [acct.apiKeyHash]);
    expect(after.account).toMatchObject({ spent: 4_321, reserved: 0 });
    // The isolate was only slow: its own settlement arriving now charges nothing more.
    expect(await ledger.settle({ generationId: r.id, actualMicros: 4_321, byok: false })).toMatchObject({
      status: "duplicate",
    });
  });
});

describe("the producer", () => {
  it("sends concurrent records in one call, and settles each only once its record was handed over", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const counted = countingEnv();
    // One log for both: the queue's sends and the ledger's calls, in the order they happened.
    const queue = {
      sendBatch: async (messages: Array<{ body: RecordsMessage }>) => {
        counted.calls.push({
          method: "sendBatch",
          settles: messages.flatMap((m) => [m.body].flat().map((r) => r.id)),
        });
      },
    } as unknown as Queue<RecordsMessage>;
    const testEnv = { ...counted.env, GENERATION_RECORDS: undefined, GENERATIONS: queue };
    const records = Array.from({ length: 5 }, (_, i) => record(acct, { costMicros: 100 + i }));
    await reserve(acct, records, 1_000);
    await Promise.all(
      records.map((r) =>
        finishGeneration(
          testEnv,
          {
            accountId: acct.accountId,
            generationId: r.id,
            keyHash: acct.apiKeyHash,
            reservedMicros: 1_000,
            byok: false,
          },
          r,
        ),
      ),
    );
    const ids = records.map((r) => r.id).sort();
    expect(counted.calls[0]).toEqual({ method: "sendBatch", settles: expect.any(Array) });
    expect([...counted.calls[0]!.settles].sort()).toEqual(ids);
    // Every settlement went after the send, and each record was settled once.
    const settled = counted.calls.slice(1).flatMap((c) => c.settles);
    expect(counted.calls.slice(1).every((c) => c.method !== "sendBatch")).toBe(true);
    expect(settled.sort()).toEqual(ids);
    const status = await ledgerFor(env, acct.accountId).status(acct.accountId, []);
    expect(status.account).toMatchObject({ spent: 100 + 101 + 102 + 103 + 104, reserved: 0 });
  });

  it("waits longer for the queue than for D1: records 30 ms apart share a send, but not a D1 write", async () => {
    const acct = await createAccount();
    const sends: string[][] = [];
    const queue = {
      sendBatch: async (messages: Array<{ body: RecordsMessage }>) => {
        sends.push(messages.flatMap((m) => [m.body].flat().map((r) => r.id)));
      },
    } as unknown as Queue<RecordsMessage>;
    const writes: number[] = [];
    const d1 = new Proxy(env.DB, {
      get: (target, name) =>
        name === "batch"
          ? (statements: D1PreparedStatement[]) => {
              writes.push(statements.length);
              return target.batch(statements);
            }
          : Reflect.get(target, name).bind(target),
    });
    // Timers fire in the order of their deadlines: the second record is made before the first one's
    // wait ends exactly when the wait is longer than 30 ms.
    const twoApart = async (sink: Parameters<typeof writeRecord>[0]) => {
      const first = writeRecord(sink, record(acct));
      await new Promise((resolve) => setTimeout(resolve, 30));
      await Promise.all([first, writeRecord(sink, record(acct))]);
    };
    await twoApart({ queue, d1 });
    expect(sends.map((ids) => ids.length)).toEqual([2]);
    expect(writes).toEqual([]);
    await twoApart({ d1 });
    expect(writes).toHaveLength(2);
  });

  it("writes the records to D1 itself when the queue refuses them, logged by generation id", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const failing = {
      send: async () => {
        throw new Error("queue unavailable (injected)");
      },
      sendBatch: async () => {
        throw new Error("queue unavailable (injected)");
      },
    } as unknown as Queue<GenerationRecord>;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const reported = await embed(acct, { ...env, GENERATION_RECORDS: undefined, GENERATIONS: failing }, 3);
    const stored = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.keyHash, acct.apiKeyHash));
    expect(stored).toHaveLength(3);
    expect(stored.reduce((sum, r) => sum + r.costMicros, 0)).toBe(reported);
    const logged = errors.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("queue send failed"));
    expect(logged.length).toBeGreaterThan(0);
    for (const r of stored) expect(logged.join("\n")).toContain(r.id);
  });

  it("sends through the real local queue, whose consumer writes the records to D1", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const reported = await embed(acct, { ...env, GENERATION_RECORDS: undefined }, 3);
    const read = () =>
      getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.keyHash, acct.apiKeyHash));
    // Delivered after the batch timeout (1 s) at most: the delay GET /generation shows.
    const until = Date.now() + 10_000;
    let stored = await read();
    while (stored.length < 3 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      stored = await read();
    }
    expect(stored).toHaveLength(3);
    expect(stored.reduce((sum, r) => sum + r.costMicros, 0)).toBe(reported);
  });
});

describe("wrangler.toml", () => {
  it("declares the consumer on the global worker with the settings the code assumes", () => {
    const top = wranglerToml.split(/^\[env\./m)[0]!;
    const consumer = top.split("[[queues.consumers]]")[1]!.split(/^\[/m)[0]!;
    expect(consumer).toMatch(new RegExp(`^queue = "${RECORDS_QUEUE.queue}"`, "m"));
    expect(consumer).toMatch(new RegExp(`^max_batch_size = ${RECORDS_QUEUE.maxBatchSize}$`, "m"));
    expect(consumer).toMatch(
      new RegExp(`^max_batch_timeout = ${RECORDS_QUEUE.maxBatchTimeoutSeconds}$`, "m"),
    );
    expect(consumer).toMatch(new RegExp(`^max_retries = ${RECORDS_QUEUE.maxRetries}$`, "m"));
    expect(consumer).toMatch(new RegExp(`^retry_delay = ${RECORDS_QUEUE.retryDelaySeconds}$`, "m"));
    expect(consumer).toMatch(new RegExp(`^dead_letter_queue = "${RECORDS_QUEUE.deadLetterQueue}"$`, "m"));
    expect(wranglerToml.match(/\[\[queues\.consumers\]\]|consumers\s*=/g)).toHaveLength(1);
  });

  it("gives every regional deployment the producer binding", () => {
    const blocks = wranglerToml.split(/^\[env\.\w+\]\s*$/m);
    expect(blocks).toHaveLength(3);
    expect(blocks[0]).toMatch(
      /\[\[queues\.producers\]\]\s*binding = "GENERATIONS"\s*queue = "gateway-generations"/,
    );
    for (const block of blocks.slice(1))
      expect(block).toContain(
        `queues = { producers = [{ binding = "GENERATIONS", queue = "${RECORDS_QUEUE.queue}" }] }`,
      );
  });
});
