// State checks for rejected requests: both accounts' D1 rows, their ledgers, their video jobs, before and after.
import { env, runInDurableObject } from "cloudflare:test";
import { readLedgerStatus } from "../../src/billing/usage";
import type { VideoJob } from "../../src/videos/job";
import { stubOf } from "../helpers/videos";
import { type Fixture, type Rows, readRows, rowsDiff } from "./fixture";
import type { Operation } from "./openapi";

export interface Snapshot {
  rows: Rows;
  /** Null when background work of earlier cases (a paid request's block) may still change it. */
  ledger: string | null;
  jobs: string;
}

export async function snapshot(fx: Fixture, op: Operation, withLedger: boolean): Promise<Snapshot> {
  const rows = await readRows(fx);
  const ledger = withLedger
    ? JSON.stringify(
        await Promise.all([fx.a, fx.b].map((acct) => readLedgerStatus(env, acct.accountId, acct.keyHashes))),
      )
    : null;
  const jobs = op.path.startsWith("/videos")
    ? await Promise.all(
        [fx.a, fx.b].map((acct) =>
          runInDurableObject(stubOf(acct.videoJobId), async (job: VideoJob) =>
            JSON.stringify(await job.snapshot()),
          ),
        ),
      )
    : [];
  return { rows, ledger, jobs: jobs.join("\n") };
}

/** What changed between two snapshots, or null. */
export function snapshotDiff(before: Snapshot, after: Snapshot): string | null {
  const rows = rowsDiff(before.rows, after.rows);
  if (rows) return rows;
  if (before.ledger !== null && before.ledger !== after.ledger) {
    return `ledger changed:\n  before ${before.ledger}\n  after  ${after.ledger}`;
  }
  if (before.jobs !== after.jobs)
    return `video job changed:\n  before ${before.jobs}\n  after  ${after.jobs}`;
  return null;
}

/** Waits for `promise` at most `ms`, clearing the timer (workerd caps an isolate's live timers at 10,000). */
export async function settledOrTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: number | undefined;
  await Promise.race([
    promise,
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  if (timer !== undefined) clearTimeout(timer);
}

/** A case waits this long for its background work (waitUntil) before the next one starts. */
const SETTLE_WAIT_MS = 25;
/** Background work older than this is a paid request's block (held for a second): nothing waits for it. */
const QUIET_WAIT_MS = 100;

/** The background work of earlier cases, so a state check starts only once it can no longer change D1. */
export class Background {
  private readonly pending = new Map<Promise<void>, number>();

  /** Tracks a case's work and gives it a moment (most of it ends within milliseconds). */
  async add(settled: Promise<void>, wait = SETTLE_WAIT_MS): Promise<boolean> {
    const tracked = settled.then(() => {
      this.pending.delete(tracked);
    });
    this.pending.set(tracked, performance.now());
    await settledOrTimeout(tracked, wait);
    return !this.pending.has(tracked);
  }

  /**
   * Waits a little for young work; true when nothing is left. D1 writes happen early (generation
   * records within ~10 ms); only a block's close, a second later, moves the ledger.
   */
  async quiet(): Promise<boolean> {
    const young = [...this.pending].filter(([, at]) => performance.now() - at < QUIET_WAIT_MS);
    if (young.length) await settledOrTimeout(Promise.all(young.map(([p]) => p)), QUIET_WAIT_MS);
    return this.pending.size === 0;
  }

  /** True when the only work left is old (blocks): D1 is settled, the ledger may still move. */
  rowsSettled(): boolean {
    return [...this.pending.values()].every((at) => performance.now() - at >= QUIET_WAIT_MS);
  }

  drain(): Promise<unknown> {
    return Promise.all(this.pending.keys());
  }
}
