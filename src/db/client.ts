// The Drizzle client over the D1 binding, whose queries retry briefly when SQLite reports it is busy.
import { drizzle } from "drizzle-orm/d1";
import * as tables from "../../schema/tables";

export interface BusyRetryOptions {
  /** Tries in all, the first included. */
  attempts: number;
  /** Ceiling of the first wait; it doubles per retry and each wait is jittered within its upper half. */
  baseDelayMs: number;
  sleep: (ms: number) => Promise<void>;
}

/** 5 tries waiting at most 100 + 200 + 400 + 800 ms: a busy database costs at most ~1.5 s before the error surfaces. */
const DEFAULT_RETRY: BusyRetryOptions = {
  attempts: 5,
  baseDelayMs: 100,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Local `wrangler dev` processes sharing one SQLite file answer "D1_ERROR: database is locked:
 * SQLITE_BUSY" while another holds the write lock; a read then fails as "D1_ERROR: Failed to get
 * session commit token" (Miniflare's D1 wraps the same busy error, whose transaction rolled back).
 * Only these are retried: the statement did not run, so running it again is safe; any other error
 * (constraints, syntax) is final.
 */
export function isBusyError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    if (/SQLITE_BUSY|database is locked|Failed to get session commit token/i.test(e.message)) return true;
  }
  return false;
}

async function retryBusy<T>(run: () => Promise<T>, options: BusyRetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= options.attempts || !isBusyError(err)) throw err;
      const ceiling = options.baseDelayMs * 2 ** (attempt - 1);
      await options.sleep(ceiling / 2 + Math.random() * (ceiling / 2));
    }
  }
}

class RetryingStatement implements D1PreparedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly options: BusyRetryOptions,
  ) {}

  bind(...values: unknown[]): D1PreparedStatement {
    return new RetryingStatement(this.inner.bind(...values), this.options);
  }
  first<T = unknown>(colName: string): Promise<T | null>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  first<T>(colName?: string): Promise<T | null> {
    return retryBusy(
      () => (colName === undefined ? this.inner.first<T>() : this.inner.first<T>(colName)),
      this.options,
    );
  }
  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return retryBusy(() => this.inner.run<T>(), this.options);
  }
  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return retryBusy(() => this.inner.all<T>(), this.options);
  }
  raw<T = unknown[]>(options: { columnNames: true }): Promise<[string[], ...T[]]>;
  raw<T = unknown[]>(options?: { columnNames?: false }): Promise<T[]>;
  raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<[string[], ...T[]] | T[]> {
    return retryBusy<[string[], ...T[]] | T[]>(
      () => (options?.columnNames ? this.inner.raw<T>({ columnNames: true }) : this.inner.raw<T>()),
      this.options,
    );
  }
}

/** The binding's batch needs its own statements back, not the wrappers. */
function unwrap(statements: D1PreparedStatement[]): D1PreparedStatement[] {
  return statements.map((s) => (s instanceof RetryingStatement ? s.inner : s));
}

class RetryingD1 implements D1Database {
  constructor(
    private readonly inner: D1Database,
    private readonly options: BusyRetryOptions,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new RetryingStatement(this.inner.prepare(query), this.options);
  }
  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    // A batch is one transaction: when busy none of it ran, so it is retried whole.
    return retryBusy(() => this.inner.batch<T>(unwrap(statements)), this.options);
  }
  exec(query: string): Promise<D1ExecResult> {
    return retryBusy(() => this.inner.exec(query), this.options);
  }
  withSession(constraintOrBookmark?: D1SessionBookmark | D1SessionConstraint): D1DatabaseSession {
    const session = this.inner.withSession(constraintOrBookmark);
    return {
      prepare: (query) => new RetryingStatement(session.prepare(query), this.options),
      batch: <T>(statements: D1PreparedStatement[]) =>
        retryBusy(() => session.batch<T>(unwrap(statements)), this.options),
      getBookmark: () => session.getBookmark(),
    };
  }
  dump(): Promise<ArrayBuffer> {
    return this.inner.dump();
  }
}

/** The binding with every query retried on busy errors only; `options` exist for tests. */
export function withBusyRetry(d1: D1Database, options: Partial<BusyRetryOptions> = {}): D1Database {
  return d1 instanceof RetryingD1 ? d1 : new RetryingD1(d1, { ...DEFAULT_RETRY, ...options });
}

function makeDb(d1: D1Database) {
  return drizzle(withBusyRetry(d1), { schema: tables });
}
export type Db = ReturnType<typeof makeDb>;

/** One Drizzle client per D1 binding in the isolate: building one walks the whole schema. */
const clients = new WeakMap<D1Database, Db>();

export function getDb(d1: D1Database): Db {
  let db = clients.get(d1);
  if (!db) {
    db = makeDb(d1);
    clients.set(d1, db);
  }
  return db;
}
export { tables };
