// D1 bindings for tests of isolate caches: counting, empty, held until released, failing; and a clock
// moved ahead of real time.
import { env } from "cloudflare:test";
import { vi } from "vitest";

/** The binding, with `batch` replaced (other members pass through to the real one). */
function withBatch(batch: (target: D1Database, statements: D1PreparedStatement[]) => Promise<unknown>) {
  return new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch") return (statements: D1PreparedStatement[]) => batch(target, statements);
      const value: unknown = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The binding, counting batches (a key's records and the catalog are each loaded with one). */
export function countingDb() {
  const counts = { batches: 0 };
  const db = withBatch((target, statements) => {
    counts.batches++;
    return target.batch(statements);
  });
  return { db, counts };
}

/** The binding, with every batch held until `release()`. */
export function heldDb() {
  const counts = { batches: 0 };
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const db = withBatch(async (target, statements) => {
    counts.batches++;
    await gate;
    return target.batch(statements);
  });
  return { db, counts, release };
}

/** A binding whose every batch fails: a read on it shows in the test. */
export const failingDb = () =>
  withBatch(async () => {
    throw new Error("D1 read on the request path");
  });

/**
 * A D1 that finds nothing; every query answers once `gate` settles (at once without one). Cheap: a
 * flood of lookups on it costs no SQLite work.
 */
export function emptyDb(gate?: Promise<unknown>, counts = { queries: 0 }): D1Database {
  const answer = async <T>(value: T) => {
    counts.queries++;
    await gate;
    return value;
  };
  const statement = {
    bind: () => statement,
    first: () => answer(null),
    raw: () => answer([]),
    all: () => answer({ success: true, results: [], meta: {} }),
    run: () => answer({ success: true, results: [], meta: {} }),
  };
  return { prepare: () => statement, batch: () => answer([]) } as unknown as D1Database;
}

/** Date.now() from now on is the real time plus `ms` (undo with vi.restoreAllMocks()). */
export function clockAhead(ms: number): void {
  vi.restoreAllMocks();
  const real = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => real() + ms);
}

/** Resolves with "waited on D1" after 2 s: raced against a call that should not wait. */
export const waitedOnD1 = () =>
  new Promise<"waited on D1">((resolve) => setTimeout(() => resolve("waited on D1"), 2_000));
