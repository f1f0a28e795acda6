// The real ledger namespace with every call to an account's object recorded, for tests that count calls.
import { env } from "cloudflare:test";
import type { Bindings } from "../../src/env";

/** Each call: its method, the settlements it carried, and for `block` the keys it asked blocks for. */
type Calls = Array<{ method: string; settles: string[]; asks?: string[] }>;

/**
 * The real ledger namespace, with every call to the account's object recorded; `fail` makes a call
 * throw, `hold` delays it before it reaches the object (or never lets it through).
 */
export function countingEnv(
  fail?: (method: string) => boolean,
  hold?: (method: string, nth: number) => Promise<unknown>,
): { env: Bindings; calls: Calls; batches: number[] } {
  const calls: Calls = [];
  const batches: number[] = [];
  const record = async (method: string, settles: Array<{ generationId: string }> = [], asks?: string[]) => {
    calls.push({ method, settles: settles.map((s) => s.generationId), ...(asks ? { asks } : {}) });
    await hold?.(method, calls.length);
    if (fail?.(method)) throw new Error(`${method} failed (injected)`);
  };
  const namespace = {
    idFromName: (name: string) => env.LEDGER.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = env.LEDGER.get(id);
      return {
        admit: async (...args: Parameters<typeof stub.admit>) => {
          batches.push(args[1].length);
          await record("admit", args[2]?.settles);
          return stub.admit(...args);
        },
        status: async (...args: Parameters<typeof stub.status>) => {
          await record("status", args[2]?.settles);
          return stub.status(...args);
        },
        block: async (...args: Parameters<typeof stub.block>) => {
          await record(
            "block",
            args[2].settles,
            args[1].map((ask) => ask.template.keyHash),
          );
          return stub.block(...args);
        },
        settleAndReport: async (carried: Parameters<typeof stub.settleAndReport>[0]) => {
          await record("settleAndReport", carried.settles);
          return stub.settleAndReport(carried);
        },
      };
    },
  };
  return { env: { ...env, LEDGER: namespace as unknown as Bindings["LEDGER"] }, calls, batches };
}
