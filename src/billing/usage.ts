// Reads from the account's ledger for GET /key, GET /credits and the management key routes: one path,
// one Durable Object call for any number of keys, this isolate's blocks closed and waiting work carried.
import type { Bindings } from "../env";
import type { KeyUsage, LedgerStatus } from "../ledger/types";
import { carrying } from "./isolate-state";

export async function readKeyUsage(
  env: Bindings,
  accountId: string,
  keyHashes: string[],
): Promise<Record<string, KeyUsage>> {
  if (keyHashes.length === 0) return {};
  return (await readLedgerStatus(env, accountId, keyHashes)).keys;
}

/** The account's money figures with credits purchased read from D1 now (GET /credits). */
export async function readCredits(env: Bindings, accountId: string): Promise<LedgerStatus["account"]> {
  return (await readLedgerStatus(env, accountId, [], { purchasedNow: true })).account;
}

/** Key usage, the free-model daily counter and the account's money figures, live. */
export async function readLedgerStatus(
  env: Bindings,
  accountId: string,
  keyHashes: string[],
  { purchasedNow = false } = {},
): Promise<LedgerStatus> {
  // This isolate's blocks close first, so the read sees only real reservations from here.
  return carrying(
    env,
    accountId,
    async (ledger, carried) => ledger.status(accountId, keyHashes, carried, purchasedNow),
    true,
  );
}
