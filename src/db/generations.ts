// Reads of generation records the ledger needs: what was spent under reservations it reclaims.
import { inArray, sql } from "drizzle-orm";
import type { RecordedCosts } from "../billing/ledger-types";
import { getDb, tables } from "./client";

/**
 * What the generation records say was spent under each of these reservation ids: a generation's own
 * record, or every record admitted against a block (by bucket). Ids with no record are absent.
 */
export async function recordedCosts(d1: D1Database, ids: string[]): Promise<RecordedCosts> {
  const out: RecordedCosts = new Map();
  if (ids.length === 0) return out;
  const g = tables.generations;
  const add = (id: string, byok: boolean, micros: number) => {
    const spent = out.get(id) ?? { credits: 0, byok: 0 };
    if (byok) spent.byok += micros;
    else spent.credits += micros;
    out.set(id, spent);
  };
  const db = getDb(d1);
  // D1 binds at most 100 parameters a statement.
  for (let i = 0; i < ids.length; i += 90) {
    const chunk = ids.slice(i, i + 90);
    const [own, blocks] = await db.batch([
      db.select({ id: g.id, byok: g.isByok, cost: g.costMicros }).from(g).where(inArray(g.id, chunk)),
      db
        .select({ id: g.blockId, byok: g.isByok, cost: sql<number>`sum(${g.costMicros})` })
        .from(g)
        .where(inArray(g.blockId, chunk))
        .groupBy(g.blockId, g.isByok),
    ]);
    for (const r of own) add(r.id, r.byok, r.cost);
    for (const r of blocks) if (r.id) add(r.id, r.byok, Number(r.cost));
  }
  return out;
}
