// The isolate's key cache survives a flood of bad tokens: a key in use keeps its record and costs no D1 read.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import app from "../src/app";
import { AUTH_CACHE_MAX_ENTRIES, invalidateAuthCache } from "../src/middleware/auth";
import { createAccount } from "./helpers/accounts";
import { BASE } from "./helpers/http";

/** The binding, counting batches: only a found key's records are loaded with one. */
function countingDb() {
  const counts = { batches: 0 };
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch") counts.batches++;
      const value: unknown = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, counts };
}

/** A D1 that finds nothing, at once: the flood's lookups cost no SQLite work, so the test stays within the TTL. */
function emptyDb(): D1Database {
  const statement = {
    bind: () => statement,
    first: async () => null,
    raw: async () => [],
    all: async () => ({ success: true, results: [], meta: {} }),
    run: async () => ({ success: true, results: [], meta: {} }),
  };
  return { prepare: () => statement, batch: async () => [] } as unknown as D1Database;
}

async function fetchKey(token: string, db: D1Database): Promise<number> {
  const ctx = createExecutionContext();
  const req = new Request(`${BASE}/key`, { headers: { Authorization: `Bearer ${token}` } });
  const res = await app.fetch(req, { ...env, REGION: "global", DB: db }, ctx);
  await waitOnExecutionContext(ctx);
  await res.body?.cancel();
  return res.status;
}

describe("auth cache", () => {
  it("keeps a key in use cached through more distinct bad tokens than the cache holds", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    invalidateAuthCache();
    const { db, counts } = countingDb();
    const nothing = emptyDb();
    expect(await fetchKey(acct.apiKey, db)).toBe(200);
    expect(counts.batches).toBe(1);

    // Past the cache's size, in rounds; the valid key is used between rounds, as a real client's would be.
    // (The whole flood must take well under AUTH_CACHE_TTL_MS, or the record expires on its own.)
    const rounds = 5;
    for (let round = 0; round < rounds; round++) {
      const statuses = await Promise.all(
        Array.from({ length: Math.ceil((AUTH_CACHE_MAX_ENTRIES + 500) / rounds) }, () =>
          fetchKey(`sk-bad-${crypto.randomUUID()}`, nothing),
        ),
      );
      expect(statuses.every((s) => s === 401)).toBe(true);
      expect(await fetchKey(acct.apiKey, db)).toBe(200);
    }
    // Its record was read from D1 once, before the flood.
    expect(counts.batches).toBe(1);
  });
});
