// The isolate's key cache: it survives a flood of bad tokens (a key in use keeps its record and costs
// no D1 read), a key in steady use never waits on D1 (its record is read again ahead of its end), and
// a read that started before a change cleared the cache does not put the old record back. Requests go
// to an inference route, whose admission the ledger checks: there the copy serves up to
// AUTH_CACHE_TTL_MS (other routes read it again after UNADMITTED_MAX_AGE_MS; test/authority.test.ts).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import app from "../src/app";
import {
  AUTH_CACHE_MAX_ENTRIES,
  AUTH_CACHE_TTL_MS,
  AUTH_REFRESH_AHEAD_MS,
  invalidateAuthCache,
} from "../src/middleware/auth";
import { createAccount } from "./helpers/accounts";
import { clockAhead, countingDb, emptyDb, failingDb, heldDb, waitedOnD1 } from "./helpers/d1";
import { BASE } from "./helpers/http";

/** Authenticated, then refused for its empty body: the request stops before any D1 read of its own. */
const PAST_AUTH = 400;

function keyRequest(token: string, db: D1Database) {
  const ctx = createExecutionContext();
  const req = new Request(`${BASE}/embeddings`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: "{}",
  });
  return { ctx, answer: app.fetch(req, { ...env, REGION: "global", DB: db }, ctx) };
}

async function fetchKey(token: string, db: D1Database): Promise<number> {
  const { ctx, answer } = keyRequest(token, db);
  const res = await answer;
  await waitOnExecutionContext(ctx);
  await res.body?.cancel();
  return res.status;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("auth cache", () => {
  it("keeps a key in use cached through more distinct bad tokens than the cache holds", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    invalidateAuthCache();
    const { db, counts } = countingDb();
    const nothing = emptyDb();
    expect(await fetchKey(acct.apiKey, db)).toBe(PAST_AUTH);
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
      expect(await fetchKey(acct.apiKey, db)).toBe(PAST_AUTH);
    }
    // Its record was read from D1 once, before the flood.
    expect(counts.batches).toBe(1);
  });

  it("reads a record near its end again in the background: the request that finds it does not wait on D1", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    invalidateAuthCache();
    expect(await fetchKey(acct.apiKey, env.DB)).toBe(PAST_AUTH);

    // Inside the record's last AUTH_REFRESH_AHEAD_MS: the request answers from the cached copy while
    // its read of D1 is still held; the read runs in its waitUntil.
    clockAhead(AUTH_CACHE_TTL_MS - AUTH_REFRESH_AHEAD_MS / 2);
    const held = heldDb();
    const { ctx, answer } = keyRequest(acct.apiKey, held.db);
    const res = await Promise.race([answer, waitedOnD1()]);
    expect(res).toBeInstanceOf(Response);
    expect((res as Response).status).toBe(PAST_AUTH);
    await (res as Response).body?.cancel();
    expect(held.counts.batches).toBe(1);
    held.release();
    await waitOnExecutionContext(ctx);

    // Past the first copy's end, the refreshed one serves: no D1 read at all (this binding fails).
    clockAhead(AUTH_CACHE_TTL_MS + 1_000);
    expect(await fetchKey(acct.apiKey, failingDb())).toBe(PAST_AUTH);
  });

  it("does not cache a record read before the cache was cleared (a key changed meanwhile)", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    invalidateAuthCache();
    const held = heldDb();
    const { ctx, answer } = keyRequest(acct.apiKey, held.db);
    while (held.counts.batches === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    // A change in this isolate clears the cache while the read is in flight.
    invalidateAuthCache();
    held.release();
    expect((await answer).status).toBe(PAST_AUTH);
    await waitOnExecutionContext(ctx);
    // The next request reads D1 again rather than trust the copy read before the change.
    const { db, counts } = countingDb();
    expect(await fetchKey(acct.apiKey, db)).toBe(PAST_AUTH);
    expect(counts.batches).toBe(1);
  });
});
