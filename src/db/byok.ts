// Queries on BYOK credentials and their wire mapping; the sealed key never leaves this module's rows.
import { and, asc, count, eq, inArray } from "drizzle-orm";
import type { ByokCredential } from "../schemas/byok";
import { type Db, tables } from "./client";

const { byokCredentials, apiKeys, users } = tables;

export type ByokRow = typeof byokCredentials.$inferSelect;
export type ByokValues = Partial<typeof byokCredentials.$inferInsert>;

export function byokToWire(row: ByokRow): ByokCredential {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    provider: row.provider,
    name: row.name,
    label: row.label,
    disabled: row.disabled,
    is_byok_only: row.isByokOnly,
    is_fallback: row.isFallback,
    is_required: row.isRequired,
    sort_order: row.sortOrder,
    allowed_api_key_hashes: row.allowedApiKeyHashes,
    allowed_models: row.allowedModels,
    allowed_user_ids: row.allowedUserIds,
    declared_zdr: row.declaredZdr,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

export function findAccountByok(db: Db, accountId: string, id: string) {
  return db
    .select()
    .from(byokCredentials)
    .where(and(eq(byokCredentials.accountId, accountId), eq(byokCredentials.id, id)))
    .get();
}

export async function listByok(
  db: Db,
  q: { accountId: string; workspaceId: string; provider?: string; offset: number; limit: number },
) {
  const where = and(
    eq(byokCredentials.accountId, q.accountId),
    eq(byokCredentials.workspaceId, q.workspaceId),
    q.provider ? eq(byokCredentials.provider, q.provider) : undefined,
  );
  const [rows, [total]] = await db.batch([
    db
      .select()
      .from(byokCredentials)
      .where(where)
      .orderBy(asc(byokCredentials.sortOrder), asc(byokCredentials.createdAt), asc(byokCredentials.id))
      .limit(q.limit)
      .offset(q.offset),
    db.select({ n: count() }).from(byokCredentials).where(where),
  ]);
  return { data: rows.map(byokToWire), total_count: total?.n ?? 0 };
}

/** The subset of `hashes` that are keys of the account. */
export async function knownKeyHashes(db: Db, accountId: string, hashes: string[]): Promise<Set<string>> {
  const rows = await db
    .select({ hash: apiKeys.hash })
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, accountId), inArray(apiKeys.hash, hashes)))
    .all();
  return new Set(rows.map((r) => r.hash));
}

/** The subset of `ids` that are users of the account. */
export async function knownUserIds(db: Db, accountId: string, ids: string[]): Promise<Set<string>> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), inArray(users.id, ids)))
    .all();
  return new Set(rows.map((r) => r.id));
}

export function insertByok(db: Db, row: typeof byokCredentials.$inferInsert) {
  return db.insert(byokCredentials).values(row).returning().get();
}

export function updateByok(db: Db, accountId: string, id: string, values: ByokValues) {
  return db
    .update(byokCredentials)
    .set(values)
    .where(and(eq(byokCredentials.accountId, accountId), eq(byokCredentials.id, id)))
    .returning()
    .get();
}

export async function deleteByok(db: Db, accountId: string, id: string) {
  const rows = await db
    .delete(byokCredentials)
    .where(and(eq(byokCredentials.accountId, accountId), eq(byokCredentials.id, id)))
    .returning({ workspaceId: byokCredentials.workspaceId });
  return rows[0] ?? null;
}
