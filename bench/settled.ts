// Helpers the in-workerd benchmarks share for reading their results.
import { env } from "cloudflare:test";
import { readLedgerStatus } from "../src/billing/usage";
import type { LedgerStatus } from "../src/ledger/types";

/** The ledger's status once the settlements that run after each response have landed (at most ~5 s). */
export async function settledStatus(accountId: string, keyHashes: string[]): Promise<LedgerStatus> {
  let status = await readLedgerStatus(env, accountId, keyHashes);
  for (let i = 0; i < 50 && status.account.reserved > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = await readLedgerStatus(env, accountId, keyHashes);
  }
  return status;
}
