// The catalog and a workspace's BYOK records, like key records (auth-cache.test.ts), are read again
// in the background of the request that finds their copy near its end: that request does not wait on
// D1, and the next ones use the new copy.
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CATALOG_REFRESH_AHEAD_MS, CATALOG_TTL_MS, getCatalog } from "../src/catalog/cache";
import {
  BYOK_CACHE_TTL_MS,
  BYOK_REFRESH_AHEAD_MS,
  invalidateByokCache,
  workspaceByok,
} from "../src/inference/context";
import { clockAhead, emptyDb, failingDb, heldDb, waitedOnD1 } from "./helpers/d1";

/** A request's background (ctx.waitUntil), awaited by the test. */
function background() {
  const pending: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => void pending.push(p), done: () => Promise.all(pending) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("isolate caches read again ahead of their end", () => {
  it("the catalog", async () => {
    // Far past any copy earlier tests cached: this read is on the request path and starts the copy.
    const start = 1_000 * CATALOG_TTL_MS;
    clockAhead(start);
    const first = await getCatalog(env.DB);

    clockAhead(start + CATALOG_TTL_MS - CATALOG_REFRESH_AHEAD_MS / 2);
    const held = heldDb();
    const bg = background();
    expect(await Promise.race([getCatalog(held.db, bg), waitedOnD1()])).toBe(first);
    expect(held.counts.batches).toBe(1);
    // A second request meanwhile starts no second read.
    expect(await getCatalog(held.db, bg)).toBe(first);
    expect(held.counts.batches).toBe(1);
    held.release();
    await bg.done();

    // Past the first copy's end the new one serves, with no read at all.
    clockAhead(start + CATALOG_TTL_MS + 1_000);
    const next = await getCatalog(failingDb());
    expect(next).not.toBe(first);
    expect(next.models.map((m) => m.slug)).toEqual(first.models.map((m) => m.slug));
  });

  it("a workspace's BYOK records, unless a change cleared the cache while they were read", async () => {
    const workspace = `ws-${crypto.randomUUID()}`;
    const rows = await workspaceByok(emptyDb(), workspace);
    expect(rows).toEqual([]);

    clockAhead(BYOK_CACHE_TTL_MS - BYOK_REFRESH_AHEAD_MS / 2);
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const counts = { queries: 0 };
    const bg = background();
    expect(await Promise.race([workspaceByok(emptyDb(gate, counts), workspace, bg), waitedOnD1()])).toBe(
      rows,
    );
    expect(counts.queries).toBe(1);
    release();
    await bg.done();
    clockAhead(BYOK_CACHE_TTL_MS + 1_000);
    const refreshed = await workspaceByok(failingDb(), workspace);
    expect(refreshed).not.toBe(rows);

    // A BYOK change in this isolate while a background read is under way: its answer is not kept.
    // (The new copy was read at TTL - AHEAD/2, so it ends at 2 TTL - AHEAD/2: AHEAD/2 before that.)
    clockAhead(2 * BYOK_CACHE_TTL_MS - BYOK_REFRESH_AHEAD_MS);
    const held = { queries: 0 };
    let releaseHeld = () => {};
    const heldGate = new Promise<void>((resolve) => {
      releaseHeld = resolve;
    });
    const bg2 = background();
    expect(await Promise.race([workspaceByok(emptyDb(heldGate, held), workspace, bg2), waitedOnD1()])).toBe(
      refreshed,
    );
    expect(held.queries).toBe(1);
    invalidateByokCache(workspace);
    releaseHeld();
    await bg2.done();
    const after = { queries: 0 };
    await workspaceByok(emptyDb(undefined, after), workspace);
    expect(after.queries).toBe(1);
  });
});
