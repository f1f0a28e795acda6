// Reads over an account's generation records: GET /activity's daily totals and GET /generations' listing.
import { and, desc, eq, gte, inArray, isNotNull, lt, type SQL, sql } from "drizzle-orm";
import { getDb, tables } from "./client";
import type { GenerationRow } from "./generations";

const g = tables.generations;

/** Days GET /activity covers: today (UTC, still running) and the 29 before it. */
export const ACTIVITY_DAYS = 30;

/** The first UTC day (YYYY-MM-DD) of the activity window that ends on `now`'s day. */
export function activityWindowStart(now: Date): string {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  start.setUTCDate(start.getUTCDate() - (ACTIVITY_DAYS - 1));
  return start.toISOString().slice(0, 10);
}

/** The UTC day after `day` (YYYY-MM-DD). */
export function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

export interface ActivityFilter {
  accountId: string;
  /** Inclusive first day and exclusive last day, YYYY-MM-DD. */
  from: string;
  until: string;
  keyHash?: string;
  workspaceId?: string;
  /** Only generations of keys this user created. */
  userId?: string;
  byWorkspace: boolean;
}

export interface ActivityRow {
  date: string;
  model: string;
  provider: string;
  endpointId: string;
  workspaceId: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  creditMicros: number;
  byokMicros: number;
}

const day = sql<string>`substr(${g.createdAt}, 1, 10)`;
const tokens = (name: string) =>
  sql<number>`coalesce(sum(cast(json_extract(${g.usage}, ${`$.${name}`}) as integer)), 0)`;

/**
 * Generation records summed per day, model, provider endpoint (and workspace when asked), newest day
 * first. Records no provider served (failed or cancelled before an answer: no endpoint, no cost) are left out.
 */
export async function readActivity(d1: D1Database, f: ActivityFilter): Promise<ActivityRow[]> {
  const db = getDb(d1);
  const where: SQL[] = [
    eq(g.accountId, f.accountId),
    gte(g.createdAt, f.from),
    lt(g.createdAt, f.until),
    isNotNull(g.endpointId),
  ];
  if (f.keyHash) where.push(eq(g.keyHash, f.keyHash));
  if (f.workspaceId) where.push(eq(g.workspaceId, f.workspaceId));
  if (f.userId) {
    const k = tables.apiKeys;
    const keys = db
      .select({ hash: k.hash })
      .from(k)
      .where(and(eq(k.accountId, f.accountId), eq(k.creatorUserId, f.userId)));
    where.push(inArray(g.keyHash, keys));
  }
  const workspace = f.byWorkspace ? g.workspaceId : sql<string>`''`;
  const rows = await db
    .select({
      date: day,
      model: g.model,
      provider: sql<string>`coalesce(${g.provider}, '')`,
      endpointId: sql<string>`${g.endpointId}`,
      workspaceId: workspace,
      requests: sql<number>`count(*)`,
      promptTokens: tokens("prompt_tokens"),
      completionTokens: tokens("completion_tokens"),
      reasoningTokens: tokens("reasoning_tokens"),
      creditMicros: sql<number>`coalesce(sum(case when ${g.isByok} then 0 else ${g.costMicros} end), 0)`,
      byokMicros: sql<number>`coalesce(sum(case when ${g.isByok} then ${g.costMicros} else 0 end), 0)`,
    })
    .from(g)
    .where(and(...where))
    .groupBy(day, g.model, g.provider, g.endpointId, workspace)
    .orderBy(desc(day), g.model, g.endpointId);
  return rows.map((r) => ({
    ...r,
    requests: Number(r.requests),
    promptTokens: Number(r.promptTokens),
    completionTokens: Number(r.completionTokens),
    reasoningTokens: Number(r.reasoningTokens),
    creditMicros: Number(r.creditMicros),
    byokMicros: Number(r.byokMicros),
  }));
}

export interface GenerationListFilter {
  accountId: string;
  model?: string;
  status?: GenerationRow["status"];
  keyHash?: string;
  limit: number;
  offset: number;
}

/** An account's generation records, newest first; one more than `limit` is read to tell whether more follow. */
export async function listGenerations(
  d1: D1Database,
  f: GenerationListFilter,
): Promise<{ rows: GenerationRow[]; more: boolean }> {
  const where: SQL[] = [eq(g.accountId, f.accountId)];
  if (f.model) where.push(eq(g.model, f.model));
  if (f.status) where.push(eq(g.status, f.status));
  if (f.keyHash) where.push(eq(g.keyHash, f.keyHash));
  const rows = await getDb(d1)
    .select()
    .from(g)
    .where(and(...where))
    .orderBy(desc(g.createdAt), desc(g.id))
    .limit(f.limit + 1)
    .offset(f.offset);
  return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
}
