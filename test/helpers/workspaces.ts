// Test fixtures: a further workspace of an existing account, with its own member, management key and regular key.
import { env } from "cloudflare:test";
import { getDb, tables } from "../../src/db/client";
import { createKey, type TestAccount } from "./accounts";

/** The account's other workspace, shaped like a TestAccount so the same helpers (createKey, addByok) apply. */
export type TestWorkspace = TestAccount;

/** A user of the account who is a member of `workspaceId` only. */
export async function addMember(acct: { accountId: string; workspaceId: string }): Promise<string> {
  const userId = `user_${crypto.randomUUID()}`;
  const db = getDb(env.DB);
  await db.batch([
    db.insert(tables.users).values({ id: userId, accountId: acct.accountId, email: `${userId}@example.com` }),
    db.insert(tables.members).values({ workspaceId: acct.workspaceId, userId, role: "member" }),
  ]);
  return userId;
}

/** A second (non-default) workspace of the account: its own default guardrail id, member and keys. */
export async function addWorkspace(acct: Pick<TestAccount, "accountId">): Promise<TestWorkspace> {
  const workspaceId = crypto.randomUUID();
  const defaultGuardrailId = crypto.randomUUID();
  await getDb(env.DB)
    .insert(tables.workspaces)
    .values({
      id: workspaceId,
      accountId: acct.accountId,
      name: "Second",
      slug: `ws-${workspaceId}`,
      defaultGuardrailId,
    });
  const userId = await addMember({ accountId: acct.accountId, workspaceId });
  const base = { accountId: acct.accountId, workspaceId, userId, defaultGuardrailId };
  const management = await createKey(base, { isManagement: true, name: "management" });
  const regular = await createKey(base, { name: "regular" });
  return { ...base, managementKey: management.key, apiKey: regular.key, apiKeyHash: regular.hash };
}
