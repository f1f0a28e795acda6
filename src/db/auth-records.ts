// Loads everything a request's authentication needs in one D1 batch: key, account, workspace, guardrails.
import { and, eq, inArray, or } from "drizzle-orm";
import type { EffectivePolicy, GuardrailRow } from "../guardrails/policy";
import type { Db } from "./client";
import { tables } from "./client";

const { apiKeys, accounts, workspaces, guardrails, guardrailKeyAssignments, guardrailMemberAssignments } =
  tables;

export type KeyRow = typeof apiKeys.$inferSelect;
export type AccountRow = typeof accounts.$inferSelect;
export type WorkspaceRow = typeof workspaces.$inferSelect;

/** An authenticated request's caller: its key's records and the policy its guardrails make. */
export interface AuthContext {
  key: KeyRow;
  account: AccountRow;
  workspace: WorkspaceRow | null;
  guardrails: GuardrailRow[];
  policy: EffectivePolicy;
}

export async function loadAuthRecords(db: Db, hash: string) {
  const key = await db.select().from(apiKeys).where(eq(apiKeys.hash, hash)).get();
  if (!key) return null;
  const memberGuardrails = db
    .select({ id: guardrailMemberAssignments.guardrailId })
    .from(guardrailMemberAssignments)
    .where(
      and(
        eq(guardrailMemberAssignments.userId, key.creatorUserId ?? ""),
        eq(guardrailMemberAssignments.workspaceId, key.workspaceId),
      ),
    );
  const keyGuardrails = db
    .select({ id: guardrailKeyAssignments.guardrailId })
    .from(guardrailKeyAssignments)
    .where(eq(guardrailKeyAssignments.keyHash, hash));
  const defaultGuardrail = db
    .select({ id: workspaces.defaultGuardrailId })
    .from(workspaces)
    .where(eq(workspaces.id, key.workspaceId));
  const [account, workspace, applied] = await db.batch([
    db.select().from(accounts).where(eq(accounts.id, key.accountId)),
    db.select().from(workspaces).where(eq(workspaces.id, key.workspaceId)),
    db
      .select()
      .from(guardrails)
      .where(
        and(
          eq(guardrails.accountId, key.accountId),
          or(
            inArray(guardrails.id, defaultGuardrail),
            inArray(guardrails.id, keyGuardrails),
            inArray(guardrails.id, memberGuardrails),
          ),
        ),
      ),
  ]);
  if (!account[0]) return null;
  return { key, account: account[0], workspace: workspace[0] ?? null, guardrails: applied };
}
