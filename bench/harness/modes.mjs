// What the harness does with one scenario in each mode: timing (arms alternated over rounds), counting (the
// counting gateway's tallies per request) and profiling (CPU profiles of every isolate while an arm runs).
// Load comes from the load process (load-child.mjs), one phase at a time.
import { execFileSync, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  collectedHeapMb,
  inspectorTargets,
  profileWhile,
  summarizeProfile,
  writeProfile,
} from "./profile.mjs";
import { figuresOf, perRequest } from "./report.mjs";

/** The load process: one fork for the whole run, phases sent over IPC, one at a time. */
export function startLoadProcess() {
  const child = fork(new URL("./load-child.mjs", import.meta.url), {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let next = 0;
  const waiting = new Map();
  child.on("message", ({ id, result, error }) => {
    const w = waiting.get(id);
    waiting.delete(id);
    if (error) w.reject(new Error(`load process: ${error}`));
    else w.resolve(result);
  });
  child.on("exit", (code) => {
    for (const w of waiting.values()) w.reject(new Error(`load process exited (${code})`));
  });
  return {
    run: (spec) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        child.send({ id, spec });
      }),
    stop: () => child.kill(),
  };
}

/** Responses that are not the arm's expected status, plus connection errors and timeouts. */
function failedIn(phase, status) {
  const unexpected = Object.entries(phase.statuses)
    .filter(([code]) => Number(code) !== status)
    .reduce((n, [, c]) => n + c, 0);
  return unexpected + phase.errors + phase.timeouts;
}

/**
 * A phase where everything that came back failed means the harness is broken (a route, the seed, the
 * mock); one where nothing came back in time is only slow (a loaded machine): that is a figure, not a break.
 */
function assertWorking(scenario, arm, phase, status) {
  const good = Number(phase.statuses[status] ?? 0);
  if (good > 0 || phase.failed === 0) return;
  const limited = phase.statuses[429] ? " (429s: the abuse limiter? try --keys N)" : "";
  throw new Error(
    `${scenario.id}/${arm}: no response with status ${status} in a whole phase${limited}: ` +
      `statuses ${JSON.stringify(phase.statuses)}, errors ${phase.errors}, timeouts ${phase.timeouts}`,
  );
}

/**
 * Warm-up of each arm, then `rounds` rounds of gateway, passthrough; paired figures over the rounds. Then,
 * for a gateway arm answered 200, the generation records in D1 (`records()` counts them) are checked
 * against the answers: a change that leaves records unsent does less work per request, and its figures
 * would flatter it. With `cpu`, each phase also gives workerd's CPU per request (its background work waited
 * out after the phase): a figure that, unlike req/s, a busy neighbour on the machine hardly moves.
 */
export async function timing({ scenario, arms, load, profile, records, cpu = false }) {
  const expected = { gateway: scenario.status, against: scenario.status, passthrough: 200 };
  // With --against, the other revision's gateway runs right after this one in every round.
  const names = arms.against ? ["gateway", "against", "passthrough"] : ["gateway", "passthrough"];
  const checked = records && !scenario.reference && scenario.status === 200;
  const before = checked ? await records() : 0;
  let answered = 0;
  for (const arm of names) {
    const warm = await load.run({ ...arms[arm], durationMs: profile.warmupMs });
    if (arm !== "passthrough") answered += Number(warm.statuses[200] ?? 0);
  }
  const rounds = [];
  for (let r = 0; r < profile.rounds; r++) {
    const round = {};
    for (const arm of names) {
      const cpuBefore = cpu ? workerdCpuMs() : 0;
      round[arm] = await load.run({ ...arms[arm], durationMs: profile.phaseMs });
      if (cpu) {
        // The arm's background work (records, the consumer, ledger reports) is its own: wait it out.
        await new Promise((r) => setTimeout(r, profile.settleMs));
        round[arm].cpu_ms_per_request = (workerdCpuMs() - cpuBefore) / Math.max(1, round[arm].responses);
      }
      round[arm].failed = failedIn(round[arm], expected[arm]);
      assertWorking(scenario, arm, round[arm], expected[arm]);
    }
    answered += Number(round.gateway.statuses[200] ?? 0) + Number(round.against?.statuses[200] ?? 0);
    rounds.push(round);
  }
  const failed = rounds.reduce(
    (n, r) => n + r.gateway.failed + r.passthrough.failed + (r.against?.failed ?? 0),
    0,
  );
  const written = checked ? (await recordsOnceSettled(records, before + answered)) - before : undefined;
  if (written !== undefined && written < answered) {
    throw new Error(
      `${scenario.id}: ${answered} requests answered 200 but ${written} generation records reached D1 ` +
        "(waited until the count stopped growing for 3 s, 30 s at most): records are being lost or left unsent, " +
        "and the figures would flatter that",
    );
  }
  return {
    rounds,
    figures: figuresOf(rounds, scenario.chunks),
    failed,
    ...(checked ? { records: written } : {}),
  };
}

/** The record count once it reached `want`, or stopped growing for 3 s (the consumer's batches wait 1 s), or after 30 s. */
async function recordsOnceSettled(records, want) {
  const end = Date.now() + 30_000;
  let last = await records();
  let still = Date.now();
  while (last < want && Date.now() < end && Date.now() - still < 3_000) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await records();
    if (now !== last) still = Date.now();
    last = now;
  }
  return last;
}

/**
 * The counting gateway's arm at the scenario's concurrency: a warm-up (caches filled, the ledger's blocks
 * flowing), then `countRequests` counted requests, read once their background work is done.
 */
export async function counting({ scenario, arms, load, profile, countingUrl, upstreamCount }) {
  const counts = (path, method = "GET") => fetch(`${countingUrl}/__bench/${path}`, { method });
  const arm = { ...arms.gateway, url: arms.gateway.url.replace(/^http:\/\/[^/]+/, countingUrl) };
  await load.run({ ...arm, amount: Math.max(scenario.concurrency, profile.warmupRequests) });
  await settle(counts, profile.settleMs);
  await (await counts("reset", "POST")).arrayBuffer();
  const before = upstreamCount();
  const phase = await load.run({ ...arm, amount: profile.countRequests });
  if (phase.responses === 0) throw new Error(`${scenario.id}: the counting gateway never answered`);
  const snapshot = await settle(counts, profile.settleMs);
  return { counts: perRequest(snapshot, upstreamCount() - before) };
}

/**
 * The counts once background work is done: no waitUntil pending at two looks `gapMs` apart (the full
 * profile waits past a ledger block's lifetime, 1 s, so its closing call is counted too).
 */
async function settle(counts, gapMs) {
  for (let quiet = 0, i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, quiet ? gapMs : 100));
    const snap = await (await counts("counts")).json();
    quiet = snap.pending_wait_untils === 0 ? quiet + 1 : 0;
    if (quiet === 2) return snap;
  }
  throw new Error("the counting gateway's background work never finished");
}

/**
 * Every isolate in workerd profiled over one phase of each arm (only that arm's load runs): CPU ms per
 * request in the arm's own Worker and in the simulators it called, and where the Worker's own time goes.
 */
export async function profiling({ scenario, arms, load, profile, inspector, bundles, profilesDir, date }) {
  const out = {};
  const targets = await inspectorTargets(inspector);
  for (const arm of ["gateway", "passthrough"]) {
    await load.run({ ...arms[arm], durationMs: profile.warmupMs });
    let phase;
    const profiles = await profileWhile(inspector, targets, async () => {
      phase = await load.run({ ...arms[arm], durationMs: profile.phaseMs });
    });
    const own = `core:user:${arm}`;
    const file = join(profilesDir, `${date}-${scenario.id}-${arm}.cpuprofile`);
    writeProfile(file, profiles[own]);
    const perRequestMs = (ms) => Number((ms / Math.max(1, phase.responses)).toFixed(3));
    const isolates = {};
    for (const [id, p] of Object.entries(profiles)) {
      const busy = summarizeProfile(p, undefined, 0).busy_ms;
      if (busy > 0) isolates[id] = perRequestMs(busy);
    }
    out[arm] = {
      responses: phase.responses,
      rps: phase.rps,
      cpu_ms_per_request: Number(
        Object.values(isolates)
          .reduce((a, b) => a + b, 0)
          .toFixed(3),
      ),
      isolates_cpu_ms_per_request: isolates,
      ...summarizeProfile(profiles[own], bundles[arm]),
      file,
    };
  }
  return { profile: out };
}

/** The workerd processes this run started (Miniflare's children), by pid. */
function workerdPids() {
  try {
    return execFileSync("pgrep", ["-P", String(process.pid), "workerd"], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** CPU time (user + system) of the run's workerd processes so far, ms (Linux /proc, clock ticks of 10 ms). */
function workerdCpuMs() {
  let ticks = 0;
  for (const pid of workerdPids()) {
    // Fields after the command's closing parenthesis: state is the 1st, utime the 12th, stime the 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

/** Resident memory of the run's workerd processes, MB (Linux /proc). */
function workerdRssMb() {
  let kb = 0;
  for (const pid of workerdPids()) {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return kb / 1024;
}

/**
 * Memory growth of workerd over `memoryRequests` gateway requests after a warm-up (issue 11's target:
 * <= 5 MB over 10k). RSS is read once background work has had time to finish; the passthrough arm is
 * not loaded, so growth is the gateway's (and its simulators'). Beside it, the gateway isolate's V8 heap
 * after a full collection at each reading (through the inspector): what the gateway's JavaScript kept.
 */
export async function memory({ scenario, arms, load, profile, inspector }) {
  if (workerdPids().length === 0) return { skipped: "no workerd process found (pgrep -P)" };
  const health = `${new URL(arms.gateway.url).origin}/health`;
  const poke = () => fetch(health).then((r) => r.arrayBuffer());
  await load.run({ ...arms.gateway, amount: profile.memoryWarmup });
  // The heap is read after a full collection, so its growth is what the gateway kept, not where V8's own
  // collections happened to fall (RSS, without that, ranged -6..+91 MB over runs of one commit).
  const settled = async () => {
    await new Promise((r) => setTimeout(r, profile.settleMs));
    const heap = await collectedHeapMb(inspector, "core:user:gateway", poke);
    return { rss: workerdRssMb(), heap };
  };
  const before = await settled();
  const phase = await load.run({ ...arms.gateway, amount: profile.memoryRequests });
  const after = await settled();
  void scenario;
  const mb = (x) => Number(x.toFixed(1));
  return {
    requests: phase.responses,
    rss_before_mb: mb(before.rss),
    rss_after_mb: mb(after.rss),
    growth_mb: mb(after.rss - before.rss),
    heap_before_mb: mb(before.heap),
    heap_after_mb: mb(after.heap),
    heap_growth_mb: mb(after.heap - before.heap),
  };
}
