// Test fixtures: a fresh account with a workspace, a user, a management key and a regular key.
import { env } from "cloudflare:test";
import { getDb, tables } from "../../src/db/client";
import { newApiKey } from "../../src/lib/api-keys";
import { encryptByokKey } from "../../src/lib/byok-crypto";
import { usdToMicros } from "../../src/lib/money";

export interface TestAccount {
  accountId: string;
  workspaceId: string;
  userId: string;
  defaultGuardrailId: string;
  managementKey: string;
  apiKey: string;
  apiKeyHash: string;
}

export interface KeyOptions {
  allowedDataRegions?: string[];
  limitUsd?: number | null;
  limitReset?: "daily" | "weekly" | "monthly" | null;
  includeByokInLimit?: boolean;
  expiresAt?: string | null;
  disabled?: boolean;
  isFreeTier?: boolean;
  isManagement?: boolean;
  name?: string;
}

export async function createKey(
  account: Omit<TestAccount, "managementKey" | "apiKey" | "apiKeyHash">,
  opts: KeyOptions = {},
) {
  const { key, hash, label } = await newApiKey();
  await getDb(env.DB)
    .insert(tables.apiKeys)
    .values({
      hash,
      label,
      accountId: account.accountId,
      workspaceId: account.workspaceId,
      name: opts.name ?? "test key",
      isManagement: opts.isManagement ?? false,
      isFreeTier: opts.isFreeTier ?? false,
      disabled: opts.disabled ?? false,
      expiresAt: opts.expiresAt ?? null,
      limitMicros: opts.limitUsd == null ? null : usdToMicros(opts.limitUsd),
      limitReset: opts.limitReset ?? null,
      includeByokInLimit: opts.includeByokInLimit ?? false,
      allowedDataRegions: opts.allowedDataRegions ?? ["global", "europe", "us"],
      creatorUserId: account.userId,
    });
  return { key, hash, label };
}

export async function createAccount(opts: { creditsUsd?: number } = {}): Promise<TestAccount> {
  const db = getDb(env.DB);
  const accountId = `acct_${crypto.randomUUID()}`;
  const workspaceId = crypto.randomUUID();
  const userId = `user_${crypto.randomUUID()}`;
  const defaultGuardrailId = crypto.randomUUID();
  await db.batch([
    db
      .insert(tables.accounts)
      .values({ id: accountId, name: "Test account", defaultWorkspaceId: workspaceId }),
    db.insert(tables.workspaces).values({
      id: workspaceId,
      accountId,
      name: "Default",
      slug: "default",
      defaultGuardrailId,
    }),
    db.insert(tables.users).values({ id: userId, accountId, email: `${userId}@example.com` }),
    db.insert(tables.members).values({ workspaceId, userId, role: "admin" }),
  ]);
  if (opts.creditsUsd) {
    await db.insert(tables.creditGrants).values({
      id: crypto.randomUUID(),
      accountId,
      amountMicros: usdToMicros(opts.creditsUsd),
    });
  }
  const base = { accountId, workspaceId, userId, defaultGuardrailId };
  const management = await createKey(base, { isManagement: true, name: "management" });
  const regular = await createKey(base, { name: "regular" });
  return { ...base, managementKey: management.key, apiKey: regular.key, apiKeyHash: regular.hash };
}

/** Gives the account's workspace its own key for `provider` (BYOK), sealed as the BYOK routes would. */
export async function addByok(
  acct: { accountId: string; workspaceId: string },
  provider: string,
  apiKey: string,
  fields: Partial<typeof tables.byokCredentials.$inferInsert> = {},
) {
  const id = crypto.randomUUID();
  const sealed = await encryptByokKey(
    env,
    { workspaceId: acct.workspaceId, provider, credentialId: id },
    apiKey,
  );
  await getDb(env.DB)
    .insert(tables.byokCredentials)
    .values({
      id,
      accountId: acct.accountId,
      workspaceId: acct.workspaceId,
      provider,
      name: provider,
      label: "sk-...key",
      ...sealed,
      ...fields,
    });
  return id;
}

/** Writes the workspace's default guardrail (which binds every key of it) with `fields`. */
export async function defaultGuardrail(
  acct: TestAccount,
  fields: Partial<typeof tables.guardrails.$inferInsert>,
) {
  await getDb(env.DB)
    .insert(tables.guardrails)
    .values({
      id: acct.defaultGuardrailId,
      accountId: acct.accountId,
      workspaceId: acct.workspaceId,
      name: "Team policy",
      ...fields,
    });
}
