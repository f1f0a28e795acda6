// Runs one operation's fuzz property: each case sent in-process, its response checked, state compared on a sample.
import fc from "fast-check";
import { inject, vi } from "vitest";
import { invalidateByokCache } from "../../src/inference/context";
import { invalidateAuthCache } from "../../src/middleware/auth";
import { FAILING_SANDBOX } from "./domain";
import { type Fixture, readRows, restoreRows, stopJob } from "./fixture";
import { type JsonSchema, type Operation, operationName } from "./openapi";
import { type Observed, problemWith, servedOperation, upstreamReached } from "./properties";
import { requestArbitrary } from "./requests";
import { describeCase, send } from "./send";
import { Background, snapshot, snapshotDiff } from "./state";

declare module "vitest" {
  export interface ProvidedContext {
    FUZZ_RUNS: string;
    FUZZ_SEED: string;
  }
}

export const fuzzRuns = () => Number.parseInt(inject("FUZZ_RUNS") || "1000", 10);

/** One case in this many (of those that may change state) is checked against a full state snapshot. */
const SNAPSHOT_EVERY = 10;
/** A checked case waits this long for its own background work before the state is read again. */
const CHECKED_SETTLE_MS = 2_000;

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Every fetch fails at once: fuzzing never reaches the internet, and counts upstream attempts. */
export function cutTheNetwork() {
  const state = { calls: 0 };
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async () => {
    state.calls++;
    throw new TypeError("fuzz: the network is off");
  });
  return { state, restore: () => spy.mockRestore() };
}

export interface RouteReport {
  seed: number;
  runs: number;
  statuses: Map<number, number>;
  undocumented: Set<number>;
  snapshots: number;
  ms: number;
}

export async function fuzzOperation(
  op: Operation,
  fx: Fixture,
  resolve: (s: JsonSchema) => JsonSchema,
  network: { calls: number },
  operations: Operation[],
): Promise<RouteReport> {
  const runs = fuzzRuns();
  const given = inject("FUZZ_SEED");
  const seed = given ? Number.parseInt(given, 10) : Math.floor(Math.random() * 2 ** 31);
  console.log(`fuzz ${operationName(op)}: seed=${seed} runs=${runs} (replay: FUZZ_SEED=${seed})`);
  const started = Date.now();
  const baseline = await readRows(fx);
  const background = new Background();
  const statuses = new Map<number, number>();
  /** Statuses the operation answered that its document does not list (the suite fails on any). */
  const undocumented = new Set<number>();
  let sinceSnapshot = 0;
  let snapshots = 0;

  const undo = async () => {
    await background.drain();
    await restoreRows(fx, baseline);
    invalidateAuthCache();
    invalidateByokCache();
  };

  const property = fc.asyncProperty(requestArbitrary(op, fx, resolve), async (c) => {
    // The method actually sent decides: a GET operation's case may go out as a DELETE.
    const mutating = MUTATING.has(c.method);
    // A state check needs the earlier cases' D1 writes done; the ledger is compared only when no
    // paid request's block (closed a second later, in the background) is still open.
    let check = mutating && ++sinceSnapshot >= SNAPSHOT_EVERY;
    const quiet = check && (await background.quiet());
    check &&= quiet || background.rowsSettled();
    if (check) sinceSnapshot = 0;
    const before = check ? await snapshot(fx, op, quiet) : undefined;

    const callsBefore = network.calls;
    const sent = await send(c);
    const ownWorkDone = await background.add(sent.settled, check ? CHECKED_SETTLE_MS : undefined);
    statuses.set(sent.status, (statuses.get(sent.status) ?? 0) + 1);
    // A URL with dot segments may reach another operation: that one's document judges the answer.
    const served = servedOperation(op, c, operations);
    if (c.method === served.method && !served.statuses.includes(sent.status)) undocumented.add(sent.status);

    const bodyText = typeof c.body?.body === "string" ? c.body.body : "";
    const observed: Observed = {
      ...sent,
      upstreamFailed: network.calls > callsBefore || FAILING_SANDBOX.some((m) => bodyText.includes(m)),
    };
    const problem = problemWith(served, c, observed, fx.secrets);
    if (problem) throw new Error(`${problem}\n  ${describeCase(c, sent)}`);

    const ok = sent.status < 300;
    // A job a case started is ended at once: no job steps in the background while state is compared.
    if (ok && c.method === "POST" && op.path === "/videos") await stopJob(JSON.parse(sent.text).id);
    // A management change that succeeded is undone, so the fixture's keys and resources keep working
    // (inference changes only what is never restored: generations, jobs and the ledger).
    if (ok && mutating && !op.inference) await undo();
    if (before && !ok && ownWorkDone && !upstreamReached(observed)) {
      snapshots++;
      const change = snapshotDiff(before, await snapshot(fx, op, before.ledger !== null));
      if (change) throw new Error(`state changed on a ${sent.status}: ${change}\n  ${describeCase(c, sent)}`);
    }
  });

  try {
    await fc.assert(property, { numRuns: runs, seed, endOnFailure: true });
  } finally {
    // A failed run leaves the fixture as the next operation expects it too.
    await undo();
  }
  return { seed, runs, statuses, undocumented, snapshots, ms: Date.now() - started };
}

export function reportLine(op: Operation, r: RouteReport): string {
  const statuses = [...r.statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}:${n}`)
    .join(" ");
  const gaps = r.undocumented.size ? `; not in the document: ${[...r.undocumented].sort().join(", ")}` : "";
  return `fuzz ${operationName(op)}: ${r.runs} cases in ${r.ms} ms, ${r.snapshots} state checks; ${statuses}${gaps}`;
}
