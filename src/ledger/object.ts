// The ledger Durable Object: one per account, the single truth for money and counters across regions.
import { DurableObject } from "cloudflare:workers";
import { creditsPurchasedMicros } from "../db/api-keys";
import { getDb } from "../db/client";
import { recordedCosts } from "../db/generations";
import { errorText, log } from "../lib/log";
import { LedgerCore, leaseFrom } from "./core";
import { freeLimitsFrom } from "./free-limits";
import { SqlLedgerStore } from "./sql-store";
import type {
  AdmitCommand,
  AdmitOutcome,
  AdmitReply,
  BlockAsk,
  BlockGrant,
  BlockWant,
  Carried,
  KeyUsage,
  LedgerStatus,
  RecordedCosts,
  RecordNote,
  SettleCommand,
  SettleResult,
} from "./types";

/**
 * The ledger's copy of credits purchased (D1 `credit_grants`) is re-read when older than this, and
 * whenever a reservation would otherwise fail for lack of balance, so a purchase is seen at once by
 * a request that needs it and by every other request within this time.
 */
export const PURCHASED_STALENESS_MS = 60_000;
/** Nothing carried. */
const NOTHING: Carried = { settles: [], reports: [] };
/** The answer to an admission made on an auth record older than the account's authority version. */
const STALE: AdmitOutcome = { ok: false, rejection: { reason: "stale_authority" } };
/** A reclaim whose generation records could not be read is tried again after this long. */
const RECLAIM_RETRY_MS = 30_000;
/** With no open reservation left, the alarm still runs this often while settled ids await pruning. */
const PRUNE_EVERY_MS = 86_400_000;

/** What the ledger reads of the worker's bindings (the worker's Bindings satisfy it). */
export interface LedgerEnv {
  DB: D1Database;
  /** JSON overrides of the free-model limits (see free-limits.ts). */
  FREE_MODEL_LIMITS?: string;
  /** A shorter default lease, for the local kill tests (see leaseFrom). */
  LEDGER_LEASE_MS?: string;
}

export class Ledger extends DurableObject<LedgerEnv> {
  private readonly store: SqlLedgerStore;
  private readonly core: LedgerCore;
  private alarmAt: number | null = null;
  /** The account's authority version (see raiseAuthority); kept in memory, stored on change. */
  private authority: number;
  private refreshing: Promise<void> | null = null;
  /** The reservations the alarm is reading generation records for, while it reads. */
  private reading: Set<string> | null = null;
  /** Of those, the blocks whose records the consumer reported meanwhile: the alarm reads them again. */
  private readonly heard = new Set<string>();
  /** The time source; tests replace it to cross window boundaries. */
  clock: () => number = () => Date.now();

  constructor(ctx: DurableObjectState, env: LedgerEnv) {
    super(ctx, env);
    this.store = new SqlLedgerStore(ctx.storage);
    this.core = new LedgerCore(
      this.store,
      freeLimitsFrom(env.FREE_MODEL_LIMITS),
      leaseFrom(env.LEDGER_LEASE_MS),
    );
    this.authority = this.store.authority();
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /**
   * Admission of one or more requests, in order: for each, limits checked and worst-case cost
   * reserved in one synchronous (atomic) step; a rejected one changes nothing. What the call carries
   * (other requests' settlements, block reports) is recorded first, so the room it frees counts.
   * With `want`, the first request may instead be granted a block and held in it (blocks.ts).
   * Idempotent by generation id: a request admitted before gets its reservation back.
   */
  async admit(
    accountId: string,
    cmds: AdmitCommand[],
    carried: Carried = NOTHING,
    want?: BlockWant,
  ): Promise<AdmitReply> {
    await this.freshen(accountId);
    const current = this.authority;
    const fresh = cmds.filter((c) => (c.authority ?? 0) >= current);
    // One transaction: the hot rows (account, meters) are written once for the whole call.
    const reply = this.store.transaction(() =>
      this.core.admitBatch(fresh, carried, fresh[0] === cmds[0] ? want : undefined, this.clock()),
    );
    if (fresh.length < cmds.length) {
      // Made on an auth record older than a revocation or lowered limit: the caller re-reads it.
      const admitted = [...reply.outcomes];
      reply.outcomes = cmds.map((c) => ((c.authority ?? 0) >= current ? admitted.shift()! : STALE));
    }
    const { outcomes } = reply;
    const short = (o: AdmitOutcome) => !o.ok && o.rejection.reason === "balance";
    if (outcomes.some(short)) {
      // Credits may have been bought since the copy was read: look once more before refusing.
      await this.refreshPurchased(accountId);
      this.store.transaction(() => {
        outcomes.forEach((o, i) => {
          if (short(o)) outcomes[i] = this.core.admit(cmds[i]!, this.clock());
        });
      });
    }
    if (reply.block || outcomes.some((o) => o.ok)) this.scheduleReclaim();
    return reply;
  }

  /**
   * Blocks asked for before the isolate's current ones run out, one per ask, in the order asked
   * (null: none granted). The carried work is recorded first, whatever is granted.
   */
  async block(accountId: string, asks: BlockAsk[], carried: Carried): Promise<(BlockGrant | null)[]> {
    await this.freshen(accountId);
    // A template made on an auth record older than the ledger's authority gets no block.
    const stale = (ask: BlockAsk) => (ask.template.authority ?? 0) < this.authority;
    const grants = this.store.transaction(() => this.core.blocks(asks, carried, this.clock(), stale));
    if (grants.some((g) => g)) this.scheduleReclaim();
    return grants.map((g) => g ?? null);
  }

  /**
   * A key, guardrail or assignment of the account changed in D1 (which now holds `version`): from now
   * on admissions made on an auth record older than that are refused as stale, so a revocation or a
   * lowered limit holds on every ingress at once (and within BLOCK_MS for isolates holding blocks).
   */
  async raiseAuthority(version: number): Promise<number> {
    if (version > this.authority) {
      this.store.putAuthority(version);
      this.authority = version;
    }
    return this.authority;
  }

  async settle(cmd: SettleCommand): Promise<SettleResult> {
    return this.store.transaction(() => this.core.settle(cmd, this.clock()));
  }

  /** Any number of settlements and block reports in one call; each is idempotent. */
  async settleAndReport(carried: Carried): Promise<void> {
    this.settleAndReportCarried(carried);
  }

  /**
   * Usage of any number of keys, the free-model daily counter and the account figures; with
   * `purchasedNow`, credits purchased are read from D1 first (GET /credits), otherwise when stale.
   */
  async status(
    accountId: string,
    keyHashes: string[],
    carried: Carried = NOTHING,
    purchasedNow = false,
  ): Promise<LedgerStatus> {
    this.settleAndReportCarried(carried);
    if (purchasedNow || this.isStale()) await this.refreshPurchased(accountId);
    const now = this.clock();
    const keys: Record<string, KeyUsage> = {};
    for (const hash of keyHashes) keys[hash] = this.core.keyUsage(hash, now);
    const { purchased, spent, reserved, balance } = this.core.account();
    return {
      keys,
      freeModelDaily: this.core.freeDaily(now),
      account: { purchased, spent, reserved, balance },
    };
  }

  /**
   * Late news from the generation records' consumer: records it wrote to D1 (see reclaim.ts,
   * `noteRecords`). A request's record settles it (idempotent); a block reclaimed before its records
   * landed is charged what they show beyond what it was charged; a block the alarm is reading for
   * right now is read again before the reclaim applies. Throws if D1 cannot be read: the consumer
   * reports again later.
   */
  async recorded(notes: RecordNote[]): Promise<void> {
    const blocks = this.store.transaction(() => this.core.noteRecords(notes, this.clock()));
    for (const n of notes) if (n.blockId && this.reading?.has(n.blockId)) this.heard.add(n.blockId);
    if (blocks.length === 0) return;
    const recorded = await recordedCosts(this.env.DB, blocks);
    this.store.transaction(() => this.core.chargeLateRecords(recorded, this.clock()));
  }

  override async alarm(): Promise<void> {
    const now = this.clock();
    const expired = this.store.expiredReservations(now).map((r) => r.generationId);
    let recorded: RecordedCosts;
    this.reading = new Set(expired);
    this.heard.clear();
    try {
      recorded = await recordedCosts(this.env.DB, expired);
      // A block's record reported while that read was under way may have landed after it: read again.
      while (this.heard.size > 0) {
        const again = [...this.heard];
        this.heard.clear();
        const fresh = await recordedCosts(this.env.DB, again);
        for (const id of again) {
          const spent = fresh.get(id);
          if (spent) recorded.set(id, spent);
          else recorded.delete(id);
        }
      }
    } catch (err) {
      // Reclaiming without the records would forgive what they show was spent: hold on and try again.
      log("error", {
        message: "ledger: reading generation records for a reclaim failed; retrying",
        reservations: expired.length,
        error: errorText(err),
      });
      this.alarmAt = now + RECLAIM_RETRY_MS;
      await this.ctx.storage.setAlarm(this.alarmAt);
      return;
    } finally {
      this.reading = null;
    }
    this.store.transaction(() => this.core.reclaim(now, recorded));
    const next = this.store.nextExpiry() ?? (this.store.hasSettled() ? now + PRUNE_EVERY_MS : null);
    this.alarmAt = next;
    if (next != null) await this.ctx.storage.setAlarm(Math.max(next, now + 1));
  }

  private settleAndReportCarried(carried: Carried): void {
    if (carried.settles.length === 0 && carried.reports.length === 0) return;
    this.store.transaction(() => this.core.settleAndReport(carried, this.clock()));
  }

  /**
   * Keeps the copy of credits purchased fresh without holding admissions up: the first read is
   * awaited; a stale copy is re-read in the background meanwhile. A stale copy can only be lower
   * than the truth (purchases only add), and a refusal for balance always re-reads first.
   */
  private async freshen(accountId: string): Promise<void> {
    if (this.store.account().purchasedReadAt === 0) return this.refreshPurchased(accountId);
    if (this.isStale()) {
      this.refreshPurchased(accountId).catch((err: unknown) =>
        log("error", {
          message: "ledger: reading credits purchased failed; the last copy stays",
          error: errorText(err),
        }),
      );
    }
  }

  private isStale(): boolean {
    return this.clock() - this.store.account().purchasedReadAt > PURCHASED_STALENESS_MS;
  }

  /** One D1 read, shared by every request waiting on it. */
  private refreshPurchased(accountId: string): Promise<void> {
    this.refreshing ??= creditsPurchasedMicros(getDb(this.env.DB), accountId)
      .then((total) => this.core.setPurchased(total, this.clock()))
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  private scheduleReclaim(): void {
    const next = this.store.nextExpiry();
    if (next == null || (this.alarmAt != null && this.alarmAt <= next)) return;
    this.alarmAt = next;
    void this.ctx.storage.setAlarm(next);
  }
}
