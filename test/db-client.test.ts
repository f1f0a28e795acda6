// D1 access retries with bounded, jittered backoff on SQLITE_BUSY only, and still works against the real binding.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, isBusyError, tables, withBusyRetry } from "../src/db/client";

const BUSY = "D1_ERROR: database is locked: SQLITE_BUSY";

/** A D1 whose every query fails with `error` for the first `failures` calls, then answers `result`. */
function flakyD1(failures: number, error = BUSY) {
  const counts = { calls: 0, prepared: [] as string[] };
  const answer = async <T>(result: T): Promise<T> => {
    counts.calls++;
    if (counts.calls <= failures) throw new Error(error);
    return result;
  };
  const statement = {
    bind: () => statement,
    first: () => answer({ n: 1 }),
    run: () => answer({ success: true, results: [], meta: {} }),
    all: () => answer({ success: true, results: [{ n: 1 }], meta: {} }),
    raw: () => answer([[1]]),
  };
  const d1 = {
    prepare: (sql: string) => {
      counts.prepared.push(sql);
      return statement;
    },
    batch: () => answer([{ success: true, results: [], meta: {} }]),
    exec: () => answer({ count: 1, duration: 0 }),
  };
  // Only the methods the wrapper calls; the rest of the binding's surface is never reached.
  return { d1: d1 as unknown as D1Database, counts };
}

function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe("D1 busy retry", () => {
  it("retries a busy statement until it succeeds, with growing jittered waits", async () => {
    const { d1, counts } = flakyD1(3);
    const { waits, sleep } = recordingSleep();
    const db = withBusyRetry(d1, { sleep });
    const result = await db.prepare("SELECT 1 AS n").bind().all<{ n: number }>();
    expect(result.results).toEqual([{ n: 1 }]);
    expect(counts.calls).toBe(4);
    expect(waits).toHaveLength(3);
    // Each wait lies in the upper half of a doubling ceiling: 100, 200, 400 ms.
    waits.forEach((ms, i) => {
      const ceiling = 100 * 2 ** i;
      expect(ms).toBeGreaterThanOrEqual(ceiling / 2);
      expect(ms).toBeLessThanOrEqual(ceiling);
    });
  });

  it.each([
    ["first", (db: D1Database) => db.prepare("q").first()],
    ["run", (db: D1Database) => db.prepare("q").run()],
    ["raw", (db: D1Database) => db.prepare("q").raw()],
    ["batch", (db: D1Database) => db.batch([db.prepare("q")])],
    ["exec", (db: D1Database) => db.exec("q")],
  ])("retries %s too", async (_name, query) => {
    const { d1, counts } = flakyD1(2);
    const { sleep } = recordingSleep();
    await expect(query(withBusyRetry(d1, { sleep }))).resolves.toBeDefined();
    expect(counts.calls).toBe(3);
  });

  it("surfaces the busy error after the bounded attempts, having waited at most ~1.5 s", async () => {
    const { d1, counts } = flakyD1(Number.POSITIVE_INFINITY);
    const { waits, sleep } = recordingSleep();
    const db = withBusyRetry(d1, { sleep });
    await expect(db.prepare("SELECT 1").run()).rejects.toThrow(BUSY);
    expect(counts.calls).toBe(5);
    expect(waits).toHaveLength(4);
    expect(waits.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1500);
  });

  it("does not retry other errors", async () => {
    const { d1, counts } = flakyD1(1, "D1_ERROR: UNIQUE constraint failed: accounts.id: SQLITE_CONSTRAINT");
    const { waits, sleep } = recordingSleep();
    await expect(withBusyRetry(d1, { sleep }).prepare("INSERT").run()).rejects.toThrow(/UNIQUE/);
    expect(counts.calls).toBe(1);
    expect(waits).toEqual([]);
  });

  it("recognises busy errors in the message or its cause only", () => {
    expect(isBusyError(new Error(BUSY))).toBe(true);
    expect(isBusyError(new Error("query failed", { cause: new Error(BUSY) }))).toBe(true);
    expect(isBusyError(new Error("D1_ERROR: no such table: nope"))).toBe(false);
    expect(isBusyError("database is locked")).toBe(false);
  });

  it("keeps queries and batches working against the real binding", async () => {
    const id = crypto.randomUUID();
    const db = getDb(env.DB);
    await db.batch([
      db.insert(tables.accounts).values({ id, name: "busy-retry" }),
      db.update(tables.accounts).set({ name: "busy-retry-2" }).where(eq(tables.accounts.id, id)),
    ]);
    const [row] = await db.select().from(tables.accounts).where(eq(tables.accounts.id, id));
    expect(row?.name).toBe("busy-retry-2");
    // A constraint failure through the wrapper is still the binding's error, at once.
    await expect(db.insert(tables.accounts).values({ id, name: "dup" })).rejects.toThrow();
  });
});
