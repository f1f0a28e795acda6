// Reads key usage from the account's ledger: one Durable Object call for any number of keys.
import type { Bindings } from "../env";
import type { KeyUsageSnapshot } from "./ledger";

export function ledgerFor(env: Bindings, accountId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(accountId));
}

export async function readKeyUsage(
  env: Bindings,
  accountId: string,
  keyHashes: string[],
): Promise<Record<string, KeyUsageSnapshot>> {
  if (keyHashes.length === 0) return {};
  return ledgerFor(env, accountId).keyUsage(keyHashes);
}
