// Reads from the account's ledger for the management and key routes: one Durable Object call for any number of keys.
import type { Bindings } from "../env";
import type { LedgerStatus } from "../ledger/object";
import type { KeyUsage } from "../ledger/types";
import { carrying } from "./ledger-client";

export async function readKeyUsage(
  env: Bindings,
  accountId: string,
  keyHashes: string[],
): Promise<Record<string, KeyUsage>> {
  if (keyHashes.length === 0) return {};
  return (await readLedgerStatus(env, accountId, keyHashes)).keys;
}

/** Key usage, the free-model daily counter and the account's money figures, live. */
export async function readLedgerStatus(
  env: Bindings,
  accountId: string,
  keyHashes: string[],
): Promise<LedgerStatus> {
  // This isolate's blocks close first, so the read sees only real reservations from here.
  return carrying(
    env,
    accountId,
    async (ledger, carried) => ledger.status(accountId, keyHashes, carried),
    true,
  );
}
