// Counting mode's Worker entry: src/index.ts as built, with its D1 and Durable Object bindings, its outbound
// fetch, its timers and its execution context wrapped to count (and time) every D1 query, object call, upstream
// call, timer that fired and waitUntil, each tagged with where it ran: on the request path (started and ended before the response was
// returned), in the background (ended after it, or read ahead by a cache), or inside the ledger / video
// object. No src hook needed: the wrappers sit between the runtime and the code, as the bindings themselves
// do (and one around the caches' read-ahead). Times are workerd's
// clock, which moves only with I/O: they show waits, not CPU.
import { AsyncLocalStorage } from "node:async_hooks";
import gateway, { Ledger as GatewayLedger, VideoJob as GatewayVideoJob } from "../../src/index";
import { RefreshAhead } from "../../src/lib/refresh-ahead";

// Whatever else src/index.ts exports (a Durable Object class added later) is served as it is, uncounted;
// the classes below take precedence over these names.
export * from "../../src/index";

type Env = Record<string, unknown> & { DB: D1Database; LEDGER: unknown; VIDEO_JOBS: unknown };
type Place =
  | "request_path"
  | "background"
  | "ledger_object"
  | "video_object"
  | "other_handler"
  | "outside_request";

interface Tally {
  count: number;
  ms: number;
}

interface Scope {
  responded: boolean;
  startedAt: number;
  upstreamAt?: number;
}
const requestScope = new AsyncLocalStorage<Scope>();
let tallies = new Map<string, Tally>();
let requests = 0;
let statuses: Record<string, number> = {};
let pendingWaitUntils = 0;

/** Where a call that just ended ran (see the header); `fixed` for calls made by an object. */
function placeOf(fixed?: Place): Place {
  if (fixed) return fixed;
  const scope = requestScope.getStore();
  if (!scope) return "outside_request";
  return scope.responded ? "background" : "request_path";
}

function record(kind: string, place: Place, label: string, ms: number): void {
  const key = `${kind}\t${place}\t${label}`;
  const t = tallies.get(key) ?? { count: 0, ms: 0 };
  t.count++;
  t.ms += ms;
  tallies.set(key, t);
}

/** Times `run` and records it once it settles (success or not), placed by when it ended. */
function timed<T>(kind: string, fixed: Place | undefined, label: string, run: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const done = () => record(kind, placeOf(fixed), label, performance.now() - t0);
  const promise = run();
  promise.then(done, done);
  return promise;
}

/** "select api_keys", "insert generations", "batch[2] select models": enough to see what a query is for. */
function sqlLabel(sql: string): string {
  const s = sql.replace(/\s+/g, " ").trim().toLowerCase();
  const verb = s.split(" ")[0] ?? "?";
  const table = /(?:from|into|update)\s+[`"]?([a-z_0-9]+)/.exec(s)?.[1] ?? "?";
  return `${verb} ${table}`;
}

class CountingStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    private readonly fixed?: Place,
  ) {}
  bind(...values: unknown[]): CountingStatement {
    return new CountingStatement(this.inner.bind(...values), this.sql, this.fixed);
  }
  private run_<T>(run: () => Promise<T>): Promise<T> {
    return timed("d1", this.fixed, sqlLabel(this.sql), run);
  }
  first(colName?: string) {
    return this.run_(() => (colName === undefined ? this.inner.first() : this.inner.first(colName)));
  }
  run() {
    return this.run_(() => this.inner.run());
  }
  all() {
    return this.run_(() => this.inner.all());
  }
  raw(options?: { columnNames?: boolean }) {
    return this.run_(() => (options?.columnNames ? this.inner.raw({ columnNames: true }) : this.inner.raw()));
  }
}

const innerOf = (statements: unknown[]) =>
  statements.map((s) => (s instanceof CountingStatement ? s.inner : (s as D1PreparedStatement)));
const batchLabel = (statements: unknown[]) =>
  `batch[${statements.length}] ${[
    ...new Set(statements.map((s) => (s instanceof CountingStatement ? sqlLabel(s.sql) : "?"))),
  ].join(", ")}`;

/** The D1 binding with every query (a batch is one) counted; `fixed` tags queries made by an object. */
function countingD1(db: D1Database, fixed?: Place): D1Database {
  const wrapped = {
    prepare: (sql: string) => new CountingStatement(db.prepare(sql), sql, fixed),
    batch: (statements: unknown[]) =>
      timed("d1", fixed, batchLabel(statements), () => db.batch(innerOf(statements))),
    exec: (sql: string) => timed("d1", fixed, `exec ${sqlLabel(sql)}`, () => db.exec(sql)),
    withSession: (constraint?: string) => {
      const session = db.withSession(constraint);
      return {
        prepare: (sql: string) => new CountingStatement(session.prepare(sql), sql, fixed),
        batch: (statements: unknown[]) =>
          timed("d1", fixed, batchLabel(statements), () => session.batch(innerOf(statements))),
        getBookmark: () => session.getBookmark(),
      };
    },
    dump: () => db.dump(),
  };
  return wrapped as unknown as D1Database;
}

/** The generation records' queue producer with its sends counted as `GENERATIONS.send[Batch]`. */
function countingQueue(queue: unknown, fixed?: Place): unknown {
  if (!queue) return queue;
  const q = queue as Queue;
  return {
    send: (body: unknown, options?: QueueSendOptions) =>
      timed("queue", fixed, "GENERATIONS.send", () => q.send(body, options)),
    sendBatch: (messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions) =>
      timed("queue", fixed, "GENERATIONS.sendBatch", () => q.sendBatch(messages, options)),
  };
}

/** A Durable Object stub whose method calls are counted as `BINDING.method`. */
function countingStub(stub: object, binding: string, fixed?: Place): object {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof prop !== "string" || prop === "then" || typeof value !== "function") return value;
      return (...args: unknown[]) =>
        timed("do", fixed, `${binding}.${prop}`, async () => Reflect.apply(value, target, args));
    },
  });
}

function countingNamespace(ns: object, binding: string, fixed?: Place): object {
  return new Proxy(ns, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getByName") {
        return (...args: unknown[]) =>
          countingStub(Reflect.apply(value, target, args) as object, binding, fixed);
      }
      return value.bind(target);
    },
  });
}

const wrappedEnvs = new Map<Place | undefined, WeakMap<object, Env>>();
/** The env with its stateful bindings counted; the same wrapper for the same env, as caches key on it. */
function countingEnv(env: Env, fixed?: Place): Env {
  const byEnv = wrappedEnvs.get(fixed) ?? new WeakMap<object, Env>();
  wrappedEnvs.set(fixed, byEnv);
  const known = byEnv.get(env);
  if (known) return known;
  const wrapped: Env = {
    ...env,
    DB: countingD1(env.DB, fixed),
    LEDGER: countingNamespace(env.LEDGER as object, "LEDGER", fixed),
    VIDEO_JOBS: countingNamespace(env.VIDEO_JOBS as object, "VIDEO_JOBS", fixed),
    GENERATIONS: countingQueue(env.GENERATIONS, fixed),
  };
  byEnv.set(env, wrapped);
  return wrapped;
}

// Upstream calls: adapters fetch through globalThis.fetch at call time.
const outboundFetch = globalThis.fetch;
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  const scope = requestScope.getStore();
  if (scope && scope.upstreamAt === undefined) scope.upstreamAt = performance.now();
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  return timed("upstream", undefined, `${method} ${url.pathname}`, () => outboundFetch(input, init));
};

// Timers that fire: each wakes the isolate (a callback run, its microtasks), as an I/O completion does.
// Counted when the callback runs, placed by when that is; an interval counts each tick.
const timerKinds = [
  ["setTimeout", globalThis.setTimeout],
  ["setInterval", globalThis.setInterval],
] as const;
for (const [name, original] of timerKinds) {
  (globalThis as Record<string, unknown>)[name] = (
    callback: (...args: unknown[]) => void,
    ms?: number,
    ...args: unknown[]
  ) =>
    original(
      (...given: unknown[]) => {
        record("timer", placeOf(), name, 0);
        callback(...given);
      },
      ms,
      ...args,
    );
}

// Isolate caches read again ahead of their end (src/lib/refresh-ahead.ts) read in a request's waitUntil,
// which nothing awaits; such a read often ends before the response (a stream's first byte), so placed by
// when it ended it would count as the request path. It runs in a scope of its own: background.
const check = RefreshAhead.prototype.check;
RefreshAhead.prototype.check = function (this: RefreshAhead<unknown>, key, expires, now, background, read) {
  const scope = requestScope.getStore();
  const aside = (current: () => boolean) =>
    requestScope.run({ responded: true, startedAt: scope?.startedAt ?? performance.now() }, () =>
      read(current),
    );
  return check.call(this, key, expires, now, background, aside);
};

function countingContext(ctx: ExecutionContext): ExecutionContext {
  return new Proxy(ctx, {
    get(target, prop) {
      if (prop === "waitUntil") {
        return (promise: Promise<unknown>) => {
          record("waitUntil", placeOf(), "waitUntil", 0);
          pendingWaitUntils++;
          const done = () => pendingWaitUntils--;
          promise.then(done, done);
          target.waitUntil(promise);
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function snapshot() {
  const rows = [...tallies].map(([key, t]) => {
    const [kind, place, label] = key.split("\t");
    return { kind, place, label, count: t.count, ms: Number(t.ms.toFixed(2)) };
  });
  return { requests, statuses, pending_wait_untils: pendingWaitUntils, rows };
}

export class Ledger extends GatewayLedger {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, countingEnv(env, "ledger_object") as never);
  }
}

export class VideoJob extends GatewayVideoJob {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, countingEnv(env, "video_object") as never);
  }
}

/**
 * The entry's other handlers (a queue consumer, a cron), if src/index.ts has them: same wrappers, their
 * calls placed under "other_handler".
 */
const entry = gateway as unknown as Record<string, unknown>;
const otherHandlers = Object.fromEntries(
  ["queue", "scheduled", "email", "tail"]
    .filter((name) => typeof entry[name] === "function")
    .map((name) => [
      name,
      (event: unknown, env: Env, ctx: ExecutionContext) =>
        (entry[name] as (e: unknown, env: Env, ctx: ExecutionContext) => unknown).call(
          gateway,
          event,
          countingEnv(env, "other_handler"),
          countingContext(ctx),
        ),
    ]),
);

export default {
  ...otherHandlers,
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/__bench/counts") return Response.json(snapshot());
    if (pathname === "/__bench/reset") {
      tallies = new Map();
      requests = 0;
      statuses = {};
      return new Response(null, { status: 204 });
    }
    requests++;
    const scope: Scope = { responded: false, startedAt: performance.now() };
    return requestScope.run(scope, async () => {
      try {
        const response = await gateway.fetch(request, countingEnv(env), countingContext(ctx));
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        return response;
      } finally {
        scope.responded = true;
        // Waits on the request path, split at the upstream call (its answer's headers count as "after").
        const end = performance.now();
        const upstreamAt = scope.upstreamAt ?? end;
        record("wait", "request_path", "request start -> upstream call", upstreamAt - scope.startedAt);
        record("wait", "request_path", "upstream call -> response", end - upstreamAt);
      }
    });
  },
};
