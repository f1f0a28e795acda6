// Queries on guardrails and their key/member assignments, and the mapping between rows and the wire.
import { and, count, desc, eq, inArray, isNull, type SQL, sql } from "drizzle-orm";
import { CUSTOM_FILTER_DEFAULT_LABEL, defaultBuiltinLabel } from "../guardrails/filters";
import { microsToUsdOrNull, usdToMicros } from "../lib/money";
import type { Guardrail, UpdateGuardrailBody } from "../schemas/guardrails";
import { type Db, tables } from "./client";

const { guardrails, workspaces, guardrailKeyAssignments, guardrailMemberAssignments, apiKeys } = tables;

export type GuardrailRow = typeof guardrails.$inferSelect;
export type GuardrailValues = Partial<typeof guardrails.$inferInsert>;

/** Name given to a workspace default guardrail materialised by a PATCH that sends none. */
export const DEFAULT_GUARDRAIL_NAME = "Workspace default";

export function guardrailToWire(row: GuardrailRow): Guardrail {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    name: row.name,
    description: row.description,
    limit_usd: microsToUsdOrNull(row.limitMicros),
    reset_interval: row.resetInterval,
    include_byok_in_budgets: row.includeByokInBudgets,
    allowed_data_regions: row.allowedDataRegions as Guardrail["allowed_data_regions"],
    allowed_models: row.allowedModels,
    ignored_models: row.ignoredModels,
    allowed_providers: row.allowedProviders,
    ignored_providers: row.ignoredProviders,
    content_filter_builtins: row.contentFilterBuiltins as Guardrail["content_filter_builtins"],
    content_filters: row.contentFilters,
    enable_free_model_publication: row.enableFreeModelPublication,
    enable_free_model_training: row.enableFreeModelTraining,
    enable_paid_model_training: row.enablePaidModelTraining,
    enforce_zdr: row.enforceZdr,
    enforce_zdr_vendor_a: row.enforceZdrVendorA,
    enforce_zdr_vendor_b: row.enforceZdrVendorB,
    enforce_zdr_vendor_c: row.enforceZdrVendorC,
    enforce_zdr_vendor_d: row.enforceZdrVendorD,
    enforce_zdr_other: row.enforceZdrOther,
    version: row.version,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

const ZDR_FIELDS = [
  ["enforce_zdr_vendor_a", "enforceZdrVendorA"],
  ["enforce_zdr_vendor_b", "enforceZdrVendorB"],
  ["enforce_zdr_vendor_c", "enforceZdrVendorC"],
  ["enforce_zdr_vendor_d", "enforceZdrVendorD"],
  ["enforce_zdr_other", "enforceZdrOther"],
] as const;

/**
 * The columns a (validated, normalised) body sets: omitted fields stay undefined (untouched), `null`
 * clears, collections replace. `enforce_zdr` is copied into each per-maker field the body leaves out.
 */
export function guardrailValues(body: UpdateGuardrailBody): GuardrailValues {
  const values: GuardrailValues = {
    name: body.name,
    description: body.description,
    limitMicros:
      body.limit_usd === undefined ? undefined : body.limit_usd === null ? null : usdToMicros(body.limit_usd),
    resetInterval: body.reset_interval,
    includeByokInBudgets: body.include_byok_in_budgets,
    allowedDataRegions: body.allowed_data_regions,
    allowedModels: body.allowed_models,
    ignoredModels: body.ignored_models,
    allowedProviders: body.allowed_providers,
    ignoredProviders: body.ignored_providers,
    contentFilterBuiltins:
      body.content_filter_builtins === undefined
        ? undefined
        : (body.content_filter_builtins?.map((f) => ({
            slug: f.slug,
            action: f.action,
            label: f.label ?? defaultBuiltinLabel(f.slug),
          })) ?? null),
    contentFilters:
      body.content_filters === undefined
        ? undefined
        : (body.content_filters?.map((f) => ({
            pattern: f.pattern,
            action: f.action,
            label: f.label ?? CUSTOM_FILTER_DEFAULT_LABEL,
          })) ?? null),
    enableFreeModelPublication: body.enable_free_model_publication,
    enableFreeModelTraining: body.enable_free_model_training,
    enablePaidModelTraining: body.enable_paid_model_training,
    enforceZdr: body.enforce_zdr,
  };
  for (const [wire, column] of ZDR_FIELDS) {
    values[column] = body[wire] ?? body.enforce_zdr ?? undefined;
  }
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as GuardrailValues;
}

export function findAccountGuardrail(db: Db, accountId: string, id: string) {
  return db
    .select()
    .from(guardrails)
    .where(and(eq(guardrails.accountId, accountId), eq(guardrails.id, id)))
    .get();
}

/** The live workspace of the account whose default guardrail id is `id`, if any. */
export function findDefaultOwner(db: Db, accountId: string, id: string) {
  return db
    .select({ id: workspaces.id })
    .from(workspaces)
    .where(
      and(
        eq(workspaces.accountId, accountId),
        eq(workspaces.defaultGuardrailId, id),
        isNull(workspaces.deletedAt),
      ),
    )
    .get();
}

export function findAccountWorkspace(db: Db, accountId: string, workspaceId: string) {
  return db
    .select({ id: workspaces.id, deletedAt: workspaces.deletedAt })
    .from(workspaces)
    .where(and(eq(workspaces.accountId, accountId), eq(workspaces.id, workspaceId)))
    .get();
}

export function insertGuardrail(
  db: Db,
  row: { id: string; accountId: string; workspaceId: string; name: string; now: string; version?: number },
  values: GuardrailValues,
) {
  return db
    .insert(guardrails)
    .values({
      ...values,
      id: row.id,
      accountId: row.accountId,
      workspaceId: row.workspaceId,
      name: values.name ?? row.name,
      version: row.version ?? 1,
      createdAt: row.now,
      updatedAt: row.now,
    })
    .onConflictDoNothing()
    .returning()
    .get();
}

/**
 * One UPDATE statement: the body's fields land together or not at all, so concurrent PATCHes never
 * interleave. With `expectedVersion` the update only applies to that version (optimistic concurrency).
 */
export function updateGuardrail(
  db: Db,
  accountId: string,
  id: string,
  values: GuardrailValues,
  now: string,
  expectedVersion?: number,
) {
  const where: SQL[] = [eq(guardrails.accountId, accountId), eq(guardrails.id, id)];
  if (expectedVersion !== undefined) where.push(eq(guardrails.version, expectedVersion));
  return db
    .update(guardrails)
    .set({ ...values, version: sql`${guardrails.version} + 1`, updatedAt: now })
    .where(and(...where))
    .returning()
    .get();
}

/** Deletes the guardrail and its assignments; false when the account has no such guardrail. */
export async function deleteGuardrail(db: Db, accountId: string, id: string): Promise<boolean> {
  // Guardrail ids are primary keys, so once ownership is checked the assignments are this guardrail's.
  if (!(await findAccountGuardrail(db, accountId, id))) return false;
  const [deleted] = await db.batch([
    db
      .delete(guardrails)
      .where(and(eq(guardrails.accountId, accountId), eq(guardrails.id, id)))
      .returning({ id: guardrails.id }),
    db.delete(guardrailKeyAssignments).where(eq(guardrailKeyAssignments.guardrailId, id)),
    db.delete(guardrailMemberAssignments).where(eq(guardrailMemberAssignments.guardrailId, id)),
  ]);
  return deleted.length > 0;
}

export async function listGuardrails(
  db: Db,
  accountId: string,
  q: { offset: number; limit: number; workspaceId?: string },
) {
  const where = and(
    eq(guardrails.accountId, accountId),
    q.workspaceId ? eq(guardrails.workspaceId, q.workspaceId) : undefined,
  );
  const [rows, [total]] = await db.batch([
    db
      .select()
      .from(guardrails)
      .where(where)
      .orderBy(desc(guardrails.createdAt), guardrails.id)
      .limit(q.limit)
      .offset(q.offset),
    db.select({ n: count() }).from(guardrails).where(where),
  ]);
  return { data: rows.map(guardrailToWire), total_count: total?.n ?? 0 };
}

// ---- assignments ----

const keyAssignmentId = (guardrailId: string, keyHash: string) =>
  `${guardrailId}:key:${keyHash.slice(0, 16)}`;
const memberAssignmentId = (guardrailId: string, userId: string) => `${guardrailId}:member:${userId}`;

export async function accountKeys(db: Db, accountId: string, hashes: string[]) {
  return db
    .select({ hash: apiKeys.hash, workspaceId: apiKeys.workspaceId })
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, accountId), inArray(apiKeys.hash, hashes)))
    .all();
}

export async function workspaceMembers(db: Db, accountId: string, workspaceId: string, userIds: string[]) {
  return db
    .select({ userId: tables.members.userId })
    .from(tables.members)
    .innerJoin(tables.users, eq(tables.users.id, tables.members.userId))
    .where(
      and(
        eq(tables.members.workspaceId, workspaceId),
        eq(tables.users.accountId, accountId),
        inArray(tables.members.userId, userIds),
      ),
    )
    .all();
}

/**
 * Assigns keys to a guardrail; null when the guardrail is gone. The insert and a check that the guardrail
 * still exists run in one batch (one transaction), so an assignment racing the guardrail's delete never
 * outlives it.
 */
export async function assignKeys(db: Db, guardrailId: string, hashes: string[], by: string | null) {
  const [rows, orphans] = await db.batch([
    db
      .insert(guardrailKeyAssignments)
      .values(hashes.map((keyHash) => ({ guardrailId, keyHash, assignedBy: by })))
      .onConflictDoNothing()
      .returning({ keyHash: guardrailKeyAssignments.keyHash }),
    db
      .delete(guardrailKeyAssignments)
      .where(and(eq(guardrailKeyAssignments.guardrailId, guardrailId), guardrailGone(guardrailId)))
      .returning({ keyHash: guardrailKeyAssignments.keyHash }),
  ]);
  return orphans.length > 0 ? null : rows.length;
}

const guardrailGone = (id: string) =>
  sql`NOT EXISTS (SELECT 1 FROM ${guardrails} WHERE ${guardrails.id} = ${id})`;

export async function unassignKeys(db: Db, guardrailId: string, hashes: string[]) {
  const rows = await db
    .delete(guardrailKeyAssignments)
    .where(
      and(
        eq(guardrailKeyAssignments.guardrailId, guardrailId),
        inArray(guardrailKeyAssignments.keyHash, hashes),
      ),
    )
    .returning({ keyHash: guardrailKeyAssignments.keyHash });
  return rows.length;
}

/** Assigns members to a guardrail; null when the guardrail is gone (see assignKeys). */
export async function assignMembers(
  db: Db,
  guardrailId: string,
  workspaceId: string,
  userIds: string[],
  by: string | null,
) {
  const [rows, orphans] = await db.batch([
    db
      .insert(guardrailMemberAssignments)
      .values(userIds.map((userId) => ({ guardrailId, userId, workspaceId, assignedBy: by })))
      .onConflictDoNothing()
      .returning({ userId: guardrailMemberAssignments.userId }),
    db
      .delete(guardrailMemberAssignments)
      .where(and(eq(guardrailMemberAssignments.guardrailId, guardrailId), guardrailGone(guardrailId)))
      .returning({ userId: guardrailMemberAssignments.userId }),
  ]);
  return orphans.length > 0 ? null : rows.length;
}

export async function unassignMembers(db: Db, guardrailId: string, userIds: string[]) {
  const rows = await db
    .delete(guardrailMemberAssignments)
    .where(
      and(
        eq(guardrailMemberAssignments.guardrailId, guardrailId),
        inArray(guardrailMemberAssignments.userId, userIds),
      ),
    )
    .returning({ userId: guardrailMemberAssignments.userId });
  return rows.length;
}

/** Key assignments of the account's guardrails, optionally of one guardrail, newest first. */
export async function listKeyAssignments(
  db: Db,
  accountId: string,
  page: { offset: number; limit: number; guardrailId?: string },
) {
  const where = and(
    eq(guardrails.accountId, accountId),
    page.guardrailId ? eq(guardrailKeyAssignments.guardrailId, page.guardrailId) : undefined,
  );
  const base = db
    .select({ a: guardrailKeyAssignments, name: apiKeys.name, label: apiKeys.label })
    .from(guardrailKeyAssignments)
    .innerJoin(guardrails, eq(guardrails.id, guardrailKeyAssignments.guardrailId))
    .innerJoin(apiKeys, eq(apiKeys.hash, guardrailKeyAssignments.keyHash))
    .where(where);
  const [rows, [total]] = await db.batch([
    base
      .orderBy(desc(guardrailKeyAssignments.createdAt), guardrailKeyAssignments.keyHash)
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(guardrailKeyAssignments)
      .innerJoin(guardrails, eq(guardrails.id, guardrailKeyAssignments.guardrailId))
      .innerJoin(apiKeys, eq(apiKeys.hash, guardrailKeyAssignments.keyHash))
      .where(where),
  ]);
  return {
    data: rows.map((r) => ({
      id: keyAssignmentId(r.a.guardrailId, r.a.keyHash),
      guardrail_id: r.a.guardrailId,
      key_hash: r.a.keyHash,
      key_name: r.name,
      key_label: r.label,
      assigned_by: r.a.assignedBy,
      created_at: r.a.createdAt,
    })),
    total_count: total?.n ?? 0,
  };
}

export async function listMemberAssignments(
  db: Db,
  accountId: string,
  page: { offset: number; limit: number; guardrailId?: string },
) {
  const where = and(
    eq(guardrails.accountId, accountId),
    page.guardrailId ? eq(guardrailMemberAssignments.guardrailId, page.guardrailId) : undefined,
  );
  const [rows, [total]] = await db.batch([
    db
      .select({ a: guardrailMemberAssignments })
      .from(guardrailMemberAssignments)
      .innerJoin(guardrails, eq(guardrails.id, guardrailMemberAssignments.guardrailId))
      .where(where)
      .orderBy(desc(guardrailMemberAssignments.createdAt), guardrailMemberAssignments.userId)
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(guardrailMemberAssignments)
      .innerJoin(guardrails, eq(guardrails.id, guardrailMemberAssignments.guardrailId))
      .where(where),
  ]);
  return {
    data: rows.map((r) => ({
      id: memberAssignmentId(r.a.guardrailId, r.a.userId),
      guardrail_id: r.a.guardrailId,
      user_id: r.a.userId,
      organization_id: accountId,
      assigned_by: r.a.assignedBy,
      created_at: r.a.createdAt,
    })),
    total_count: total?.n ?? 0,
  };
}
