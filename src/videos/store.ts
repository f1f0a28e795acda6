// The video_jobs rows in D1: what GET /videos/{id} reads, kept in step with the job's Durable Object.
import { and, desc, eq, type SQL } from "drizzle-orm";
import { getDb, tables } from "../db/client";
import { microsToUsd } from "../lib/money";
import type { VideoJobWire } from "../schemas/videos";
import { pollingUrl } from "./ids";
import type { VideoJobState } from "./state";

const { videoJobs } = tables;
export type VideoJobRow = typeof videoJobs.$inferSelect;

/** A retry with the same Idempotency-Key returns the original job only within this window. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export function jobToWire(
  row: Pick<VideoJobRow, "id" | "status" | "generationId" | "costMicros" | "isByok" | "error">,
): VideoJobWire {
  const wire: VideoJobWire = { id: row.id, polling_url: pollingUrl(row.id), status: row.status };
  const ended = row.status !== "pending" && row.status !== "in_progress";
  if (ended && row.generationId) wire.generation_id = row.generationId;
  // What the job cost, whenever it cost something: a job cancelled once a provider took it is charged
  // (docs/media.md), and says so here as on its generation record.
  if (row.status === "completed" || (ended && (row.costMicros ?? 0) > 0))
    wire.usage = { cost: microsToUsd(row.costMicros ?? 0), is_byok: row.isByok };
  if (row.error && row.status !== "completed") wire.error = row.error;
  return wire;
}

/** The workspace's jobs, newest first; one more than `limit` is read to tell whether more follow. */
export async function listWorkspaceJobs(
  d1: D1Database,
  caller: { accountId: string; workspaceId: string },
  page: { limit: number; offset: number; status?: VideoJobRow["status"] },
): Promise<{ rows: VideoJobRow[]; more: boolean }> {
  const where: SQL[] = [
    eq(videoJobs.accountId, caller.accountId),
    eq(videoJobs.workspaceId, caller.workspaceId),
  ];
  if (page.status) where.push(eq(videoJobs.status, page.status));
  const rows = await getDb(d1)
    .select()
    .from(videoJobs)
    .where(and(...where))
    .orderBy(desc(videoJobs.createdAt), desc(videoJobs.id))
    .limit(page.limit + 1)
    .offset(page.offset);
  return { rows: rows.slice(0, page.limit), more: rows.length > page.limit };
}

/**
 * The job, if it was submitted in the caller's workspace. A job is a workspace's resource (made with its
 * credentials, notifying its webhook): keys of another workspace, even of the same account, do not find it.
 */
export async function findWorkspaceJob(
  d1: D1Database,
  caller: { accountId: string; workspaceId: string },
  id: string,
): Promise<VideoJobRow | undefined> {
  return getDb(d1)
    .select()
    .from(videoJobs)
    .where(
      and(
        eq(videoJobs.id, id),
        eq(videoJobs.accountId, caller.accountId),
        eq(videoJobs.workspaceId, caller.workspaceId),
      ),
    )
    .get();
}

export async function findByIdempotencyKey(
  d1: D1Database,
  keyHash: string,
  key: string,
): Promise<VideoJobRow | undefined> {
  return getDb(d1)
    .select()
    .from(videoJobs)
    .where(and(eq(videoJobs.keyHash, keyHash), eq(videoJobs.idempotencyKey, key)))
    .get();
}

/** Frees an Idempotency-Key whose window has passed, so it can name a new job. */
export async function releaseIdempotencyKey(d1: D1Database, jobId: string): Promise<void> {
  await getDb(d1).update(videoJobs).set({ idempotencyKey: null }).where(eq(videoJobs.id, jobId));
}

/** Inserts the row; false when another request with the same Idempotency-Key won the race. */
export async function insertJob(d1: D1Database, row: typeof videoJobs.$inferInsert): Promise<boolean> {
  try {
    await getDb(d1).insert(videoJobs).values(row);
    return true;
  } catch (err) {
    if (
      row.idempotencyKey &&
      /UNIQUE constraint failed/i.test(String(err instanceof Error ? err.message : err))
    )
      return false;
    throw err;
  }
}

/** Mirrors the Durable Object's state into the row. */
export async function syncJob(d1: D1Database, s: VideoJobState): Promise<void> {
  await getDb(d1)
    .update(videoJobs)
    .set({
      status: s.status,
      provider: s.current?.provider ?? null,
      endpointId: s.current?.endpointId ?? null,
      isByok: s.isByok,
      generationId: s.generationId,
      costMicros: s.costMicros,
      error: s.error,
      updatedAt: new Date().toISOString(),
    })
    .where(eq(videoJobs.id, s.id));
}

/** The job's generation record, written once when it ends (a repeat is ignored). */
export async function recordJobGeneration(d1: D1Database, s: VideoJobState): Promise<void> {
  const status = s.status === "completed" ? "completed" : s.status === "cancelled" ? "cancelled" : "failed";
  await getDb(d1)
    .insert(tables.generations)
    .values({
      id: s.generationId,
      // Submitted then; written when the job ended.
      createdAt: new Date(s.createdAt).toISOString(),
      accountId: s.accountId,
      workspaceId: s.workspaceId,
      keyHash: s.keyHash,
      modality: "video",
      model: s.current?.modelSlug ?? s.model,
      provider: s.current?.provider ?? null,
      endpointId: s.current?.endpointId ?? null,
      isByok: s.isByok,
      status,
      usage: { video_seconds: s.status === "completed" ? s.billedDurationSeconds : 0 },
      costMicros: s.costMicros ?? 0,
      region: s.region,
      metadata: s.trace,
      flags: s.flags ?? null,
      user: s.user,
      error: s.error,
      sessionId: s.sessionId ?? null,
      streamed: false,
      upstreamId: s.current?.upstreamJobId ?? null,
      attempts: s.attempts ?? null,
      httpReferer: s.httpReferer ?? null,
      userAgent: s.userAgent ?? null,
      requestId: s.requestId ?? null,
      presetId: s.presetId ?? null,
      // A job's generation runs from its submission to its end.
      generationMs: Math.max(0, Date.now() - s.createdAt),
    })
    .onConflictDoNothing();
}
