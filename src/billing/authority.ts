// Revocations and lowered limits reach every ingress at once: the account's authority version, raised in
// D1 by each change to a key, guardrail or assignment and pushed to the ledger, which refuses admissions
// made on an older cached auth record (see docs/billing.md, "Authority").
import { eq, sql } from "drizzle-orm";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { errorText, log } from "../lib/log";
import { invalidateAuthCache } from "../middleware/auth";
import { ledgerFor } from "./ledger-client";

/**
 * Call after a management change that can revoke access, re-scope a key or lower a limit has been
 * written to D1. Order matters: D1 first (so a reader that sees the new version sees the change),
 * then the ledger (so from its answer on, every older cached record is refused at admission).
 */
export async function authorityChanged(env: Bindings, accountId: string): Promise<void> {
  invalidateAuthCache();
  await raiseAuthority(env, accountId);
}

/** The D1 version raised, then the ledger told; other isolates learn it at their next admission call. */
export async function raiseAuthority(env: Bindings, accountId: string): Promise<void> {
  const { accounts } = tables;
  const [row] = await getDb(env.DB)
    .update(accounts)
    .set({ authorityVersion: sql`${accounts.authorityVersion} + 1` })
    .where(eq(accounts.id, accountId))
    .returning({ version: accounts.authorityVersion });
  if (!row) return;
  try {
    await ledgerFor(env, accountId).raiseAuthority(row.version);
  } catch (err) {
    // The change stands in D1; isolates still re-read it when their cache entry expires (AUTH_CACHE_TTL_MS).
    log("error", {
      message: "authority: the ledger could not be told of a change; cached auth records expire on their own",
      account_id: accountId,
      error: errorText(err),
    });
  }
}
