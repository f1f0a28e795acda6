// Queries on api_keys and the wire mapping shared by GET /key and the keys API.
import { and, desc, eq, sql } from "drizzle-orm";
import type { KeyUsage } from "../ledger/types";
import { microsToUsd, microsToUsdOrNull } from "../lib/money";
import type { ApiKey } from "../schemas/keys";
import type { KeyRow } from "./auth-records";
import { type Db, tables } from "./client";

const { apiKeys, creditGrants } = tables;

const ZERO = { total: 0, daily: 0, weekly: 0, monthly: 0 };

/**
 * The condition under which key `hash` of the account may be disabled, deleted or given an expiry: it
 * is not a management key, or another enabled management key without an expiry remains (one that
 * expires would leave the account locked out when it does: two keys given expiries in turn did). In the
 * statement's own WHERE, so two requests that each remove one of the last two keys cannot both succeed.
 */
export function leavesAManagementKey(accountId: string, hash: string) {
  return sql`(${apiKeys.isManagement} = 0 OR EXISTS (SELECT 1 FROM api_keys other
    WHERE other.account_id = ${accountId} AND other.is_management = 1 AND other.disabled = 0
      AND other.hash <> ${hash} AND other.expires_at IS NULL))`;
}

/** Credit left under the key's cap: the limit minus spend in the current window and open reservations. */
export function limitRemainingMicros(key: KeyRow, snapshot: KeyUsage | undefined): number | null {
  if (key.limitMicros == null) return null;
  if (!snapshot) return key.limitMicros;
  const window = key.limitReset;
  const pick = (f: KeyUsage["usage"]) => (window ? f[window] : f.total);
  const used =
    pick(snapshot.usage) +
    snapshot.reserved.credits +
    (key.includeByokInLimit ? pick(snapshot.byok) + snapshot.reserved.byok : 0);
  return Math.max(0, key.limitMicros - used);
}

export function usageWire(snapshot: KeyUsage | undefined) {
  const u = snapshot?.usage ?? ZERO;
  const b = snapshot?.byok ?? ZERO;
  return {
    usage: microsToUsd(u.total),
    usage_daily: microsToUsd(u.daily),
    usage_weekly: microsToUsd(u.weekly),
    usage_monthly: microsToUsd(u.monthly),
    byok_usage: microsToUsd(b.total),
    byok_usage_daily: microsToUsd(b.daily),
    byok_usage_weekly: microsToUsd(b.weekly),
    byok_usage_monthly: microsToUsd(b.monthly),
  };
}

export function capWire(key: KeyRow, snapshot: KeyUsage | undefined) {
  return {
    limit: microsToUsdOrNull(key.limitMicros),
    limit_remaining: microsToUsdOrNull(limitRemainingMicros(key, snapshot)),
    limit_reset: key.limitReset,
    include_byok_in_limit: key.includeByokInLimit,
  };
}

export function apiKeyToWire(key: KeyRow, snapshot: KeyUsage | undefined): ApiKey {
  return {
    hash: key.hash,
    name: key.name,
    label: key.label,
    disabled: key.disabled,
    ...capWire(key, snapshot),
    ...usageWire(snapshot),
    allowed_data_regions: key.allowedDataRegions as ApiKey["allowed_data_regions"],
    is_management_key: key.isManagement,
    is_provisioning_key: key.isProvisioning,
    is_free_tier: key.isFreeTier,
    creator_user_id: key.creatorUserId,
    external_user: key.externalUser,
    expires_at: key.expiresAt,
    workspace_id: key.workspaceId,
    created_at: key.createdAt,
    updated_at: key.updatedAt,
  };
}

export async function creditsPurchasedMicros(db: Db, accountId: string): Promise<number> {
  const row = await db
    .select({ total: sql<number>`COALESCE(SUM(${creditGrants.amountMicros}), 0)` })
    .from(creditGrants)
    .where(eq(creditGrants.accountId, accountId))
    .get();
  return row?.total ?? 0;
}

export function findAccountKey(db: Db, accountId: string, hash: string) {
  return db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, accountId), eq(apiKeys.hash, hash)))
    .get();
}

export function listAccountKeys(
  db: Db,
  accountId: string,
  opts: { includeDisabled: boolean; offset: number; limit: number; workspaceId?: string },
) {
  const filters = [eq(apiKeys.accountId, accountId)];
  if (!opts.includeDisabled) filters.push(eq(apiKeys.disabled, false));
  if (opts.workspaceId) filters.push(eq(apiKeys.workspaceId, opts.workspaceId));
  return db
    .select()
    .from(apiKeys)
    .where(and(...filters))
    .orderBy(desc(apiKeys.createdAt), apiKeys.hash)
    .limit(opts.limit)
    .offset(opts.offset)
    .all();
}

/**
 * Whether an operator revoked this key with the admin CLI (`keys revoke`, kept in admin_audit): such a
 * key stays revoked, whatever a management key of the account asks.
 */
export async function revokedByOperator(db: Db, accountId: string, hash: string): Promise<boolean> {
  const { adminAudit } = tables;
  const row = await db
    .select({ id: adminAudit.id })
    .from(adminAudit)
    .where(
      and(
        eq(adminAudit.accountId, accountId),
        eq(adminAudit.action, "management_key.revoke"),
        sql`json_extract(${adminAudit.detail}, '$.hash') = ${hash}`,
      ),
    )
    .get();
  return row !== undefined;
}
