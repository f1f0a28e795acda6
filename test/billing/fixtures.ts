// Billing test fixtures: auth contexts as the middleware builds them, guardrail budgets, credits, a ledger clock.
import { env, runInDurableObject } from "cloudflare:test";
import { ledgerFor } from "../../src/billing/ledger-client";
import type { AuthContext } from "../../src/db/auth-records";
import { loadAuthRecords } from "../../src/db/auth-records";
import { getDb, tables } from "../../src/db/client";
import { effectivePolicy } from "../../src/guardrails/policy";
import { ApiError } from "../../src/lib/errors";
import { usdToMicros } from "../../src/lib/money";
import type { TestAccount } from "../helpers/accounts";

export async function authFor(keyHash: string): Promise<AuthContext> {
  const records = await loadAuthRecords(getDb(env.DB), keyHash);
  if (!records) throw new Error(`no key ${keyHash}`);
  return { ...records, policy: effectivePolicy(records.guardrails) };
}

export async function addCredits(accountId: string, usd: number): Promise<void> {
  await getDb(env.DB)
    .insert(tables.creditGrants)
    .values({ id: crypto.randomUUID(), accountId, amountMicros: usdToMicros(usd) });
}

export async function addBudget(
  acct: TestAccount,
  keyHash: string,
  opts: {
    name: string;
    limitUsd: number;
    reset?: "daily" | "weekly" | "monthly" | null;
    includeByok?: boolean;
  },
): Promise<string> {
  const id = crypto.randomUUID();
  const db = getDb(env.DB);
  await db.insert(tables.guardrails).values({
    id,
    accountId: acct.accountId,
    workspaceId: acct.workspaceId,
    name: opts.name,
    limitMicros: usdToMicros(opts.limitUsd),
    resetInterval: opts.reset ?? null,
    includeByokInBudgets: opts.includeByok ?? false,
  });
  await db.insert(tables.guardrailKeyAssignments).values({ guardrailId: id, keyHash });
  return id;
}

/** Pins the account ledger's clock (epoch ms), so tests cross window boundaries deterministically. */
export async function setLedgerClock(accountId: string, at: number): Promise<void> {
  await runInDurableObject(ledgerFor(env, accountId), (ledger) => {
    ledger.clock = () => at;
  });
}

export const request = (over: Partial<import("../../src/billing/admission").AdmissionRequest> = {}) => ({
  generationId: crypto.randomUUID(),
  model: "sandbox/paid-model",
  isFreeModel: false,
  worstCaseMicros: 1_000,
  byok: false,
  exemptFromFreeLimits: false,
  ...over,
});

/** An admission's reservation, or the ApiError it was refused with. */
export async function outcome(
  p: Promise<import("../../src/billing/admission").Reservation>,
): Promise<import("../../src/billing/admission").Reservation | ApiError> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}
