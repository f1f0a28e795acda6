// The ledger Durable Object: one per account, the single truth for money and counters across regions.
import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../env";
import { type Window, windowStart } from "./windows";

export interface UsageFigures {
  total: number;
  daily: number;
  weekly: number;
  monthly: number;
}

export interface KeyUsageSnapshot {
  /** Micro-dollars spent on credits. */
  usage: UsageFigures;
  /** Micro-dollars spent through BYOK credentials. */
  byok: UsageFigures;
}

export class Ledger extends DurableObject<Bindings> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS charges (
      generation_id TEXT PRIMARY KEY,
      key_hash TEXT NOT NULL,
      amount_micros INTEGER NOT NULL,
      is_byok INTEGER NOT NULL,
      at INTEGER NOT NULL
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS charges_key_at ON charges(key_hash, at)");
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS free_requests (day INTEGER PRIMARY KEY, used INTEGER NOT NULL)",
    );
  }

  /** Free-model requests admitted today (UTC) for this account. */
  async freeRequestsToday(now = Date.now()): Promise<number> {
    const row = this.sql
      .exec<{ used: number }>("SELECT used FROM free_requests WHERE day = ?", windowStart("daily", now))
      .toArray()[0];
    return row?.used ?? 0;
  }

  /** Usage of each key: totals and the current daily, weekly and monthly windows. */
  async keyUsage(keyHashes: string[], now = Date.now()): Promise<Record<string, KeyUsageSnapshot>> {
    const starts: Record<Window, number> = {
      daily: windowStart("daily", now),
      weekly: windowStart("weekly", now),
      monthly: windowStart("monthly", now),
    };
    const out: Record<string, KeyUsageSnapshot> = {};
    for (const hash of keyHashes) {
      const figures = (byok: number): UsageFigures => {
        const row = this.sql
          .exec<{ total: number; daily: number; weekly: number; monthly: number }>(
            `SELECT COALESCE(SUM(amount_micros),0) AS total,
                    COALESCE(SUM(CASE WHEN at >= ? THEN amount_micros END),0) AS daily,
                    COALESCE(SUM(CASE WHEN at >= ? THEN amount_micros END),0) AS weekly,
                    COALESCE(SUM(CASE WHEN at >= ? THEN amount_micros END),0) AS monthly
             FROM charges WHERE key_hash = ? AND is_byok = ?`,
            starts.daily,
            starts.weekly,
            starts.monthly,
            hash,
            byok,
          )
          .one();
        return row;
      };
      out[hash] = { usage: figures(0), byok: figures(1) };
    }
    return out;
  }
}
