// `npm run bench`: issue 11's harness. The built gateway bundle and a passthrough Worker run in one workerd
// (Miniflare, wrangler.toml's bindings, the bench's own D1), both calling a mock upstream on loopback; load
// comes from a second process; arms alternate over rounds; medians and ranges are printed and written to
// bench/results/<date>.json. Flags:
//   --quick            one short round per arm (CI: proves the harness works; figures mean little)
//   --count            counting mode: D1 queries, Durable Object calls and waitUntils per request
//   --rounds N, --seconds S, --only id,id   override the profile / pick scenarios
// Exits non-zero only when the harness itself breaks (build, start, seeding, an arm never answering as
// expected); never on figures.
import { fork } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startMockUpstream } from "./harness/mock-upstream.mjs";
import { countingDetail, countingTable, figuresOf, perRequest, timingTable } from "./harness/report.mjs";
import { BENCH_PROVIDER, BENCH_PROVIDER_KEY, SCENARIOS } from "./harness/scenarios.mjs";
import { applyMigrations, loadCatalog, seedAccount } from "./harness/seed.mjs";
import { buildBundle, startWorkers } from "./harness/workers.mjs";

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    count: { type: "boolean", default: false },
    rounds: { type: "string" },
    seconds: { type: "string" },
    only: { type: "string" },
  },
});
const profile = flags.quick
  ? { rounds: 1, phaseMs: 2_000, warmupMs: 500, countRequests: 200 }
  : { rounds: 5, phaseMs: 8_000, warmupMs: 2_000, countRequests: 2_000 };
if (flags.rounds) profile.rounds = Number(flags.rounds);
if (flags.seconds) profile.phaseMs = Number(flags.seconds) * 1000;
const only = flags.only?.split(",");
const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.id));

/** Well-formed (so it reaches the key lookup) but never issued. */
const INVALID_KEY = `sk-gw-v1-${"0".repeat(64)}`;
const root = new URL("..", import.meta.url).pathname;
const started = new Date();
const log = (line) => process.stdout.write(`${line}\n`);

/** What one arm of a scenario sends, for the load process. */
function armSpec(base, scenario, arm, apiKey) {
  const req = scenario[arm];
  const headers = { "content-type": "application/json" };
  if (req.key === "valid") headers.authorization = `Bearer ${apiKey}`;
  if (req.key === "invalid") headers.authorization = `Bearer ${INVALID_KEY}`;
  const streamed = scenario.figure === "stream" || scenario.figure === "completion";
  return {
    tool: streamed ? "stream" : "autocannon",
    url: `${base}${req.path}`,
    method: "POST",
    headers,
    body: JSON.stringify(req.body),
    connections: scenario.concurrency,
  };
}

/** The load process: one fork for the whole run, phases sent over IPC, one at a time. */
function startLoadProcess() {
  const child = fork(join(root, "bench/harness/load-child.mjs"), {
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

/** One request per arm before any load: a wrong status here means the harness is broken, not slow. */
async function checkArm(spec, status, label) {
  const res = await fetch(spec.url, { method: spec.method, headers: spec.headers, body: spec.body });
  const body = await res.arrayBuffer();
  if (res.status !== status) {
    throw new Error(
      `${label}: expected ${status}, got ${res.status}: ${Buffer.from(body).toString().slice(0, 500)}`,
    );
  }
}

async function timing(scenario, arms, load) {
  const expected = { gateway: scenario.status, passthrough: 200 };
  for (const arm of ["gateway", "passthrough"])
    await load.run({ ...arms[arm], durationMs: profile.warmupMs });
  const rounds = [];
  for (let r = 0; r < profile.rounds; r++) {
    const round = {};
    for (const arm of ["gateway", "passthrough"]) {
      round[arm] = await load.run({ ...arms[arm], durationMs: profile.phaseMs });
      round[arm].failed = failedIn(round[arm], expected[arm]);
      if (round[arm].responses - round[arm].failed === 0) {
        throw new Error(`${scenario.id}/${arm}: no response with status ${expected[arm]} in a whole phase`);
      }
    }
    rounds.push(round);
  }
  const failed = rounds.reduce((n, r) => n + r.gateway.failed + r.passthrough.failed, 0);
  return { rounds, figures: figuresOf(rounds), failed };
}

async function counting(scenario, arms, load, gatewayBase, mock) {
  const counts = (path, method = "GET") => fetch(`${gatewayBase}/__bench/${path}`, { method });
  const spec = { ...arms.gateway, amount: profile.countRequests };
  // Caches filled and the ledger's blocks flowing before anything is counted.
  await load.run({ ...arms.gateway, amount: Math.max(4 * scenario.concurrency, 50) });
  await settle(counts);
  await counts("reset", "POST");
  const upstreamBefore = totalUpstream(mock);
  await load.run(spec);
  const snapshot = await settle(counts);
  return { counts: perRequest(snapshot, totalUpstream(mock) - upstreamBefore) };
}

const totalUpstream = (mock) => Object.values(mock.counts).reduce((a, b) => a + b, 0);

/** The counts once background work is done: no waitUntil pending, twice, past a block's lifetime (1 s). */
async function settle(counts) {
  for (let quiet = 0, i = 0; quiet < 2 && i < 100; i++) {
    await new Promise((r) => setTimeout(r, quiet ? 1_500 : 100));
    const snap = await (await counts("counts")).json();
    quiet = snap.pending_wait_untils === 0 ? quiet + 1 : 0;
    if (quiet === 2) return snap;
  }
  return (await counts("counts")).json();
}

function writeResults(section, data) {
  const date = started.toISOString().slice(0, 10);
  const file = flags.quick
    ? join(tmpdir(), `gateway-bench-quick-${date}.json`)
    : join(root, "bench/results", `${date}.json`);
  mkdirSync(join(file, ".."), { recursive: true });
  const existing = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  writeFileSync(file, `${JSON.stringify({ ...existing, date, [section]: data }, null, 2)}\n`);
  return file;
}

const work = mkdtempSync(join(tmpdir(), "gateway-bench-"));
const cleanup = [];
let exitCode = 0;
try {
  const t0 = performance.now();
  const mock = await startMockUpstream();
  cleanup.push(() => mock.close());
  const entry = flags.count ? "bench/harness/counting-entry.ts" : undefined;
  log(`building the gateway bundle (wrangler deploy --dry-run${entry ? `, entry ${entry}` : ""})...`);
  const bundle = buildBundle(join(work, "bundle"), entry);
  const workers = await startWorkers({
    bundle,
    upstreamUrl: mock.url,
    persistDir: join(work, "state"),
    providerSlug: BENCH_PROVIDER,
    providerKey: BENCH_PROVIDER_KEY,
  });
  cleanup.push(() => workers.mf.dispose());
  const db = await workers.mf.getD1Database("DB", "gateway");
  await applyMigrations(db);
  const [apiKey] = await seedAccount(db);

  // Scenarios whose route the gateway does not have yet are skipped (the route guard answers 404 first).
  const skipped = new Map();
  for (const s of scenarios.filter((s) => s.optional)) {
    const res = await fetch(`${workers.gateway}${s.gateway.path}`, { method: "POST" });
    await res.arrayBuffer();
    if (res.status === 404) skipped.set(s.id, `the gateway answers 404 for POST ${s.gateway.path}`);
  }
  const active = scenarios.filter((s) => !skipped.has(s.id));
  const models = new Map(
    active.filter((s) => s.model).map((s) => [s.model(mock.url).slug, s.model(mock.url)]),
  );
  await loadCatalog(db, [...models.values()]);

  const armsOf = (s) => ({
    gateway: armSpec(workers.gateway, s, "gateway", apiKey),
    passthrough: armSpec(workers.passthrough, s, "passthrough", apiKey),
  });
  for (const s of active) {
    await checkArm(armsOf(s).gateway, s.status, `${s.id} gateway`);
    await checkArm(armsOf(s).passthrough, 200, `${s.id} passthrough`);
  }
  log(
    `ready in ${((performance.now() - t0) / 1000).toFixed(1)} s: gateway ${workers.gateway}, passthrough ${workers.passthrough}, upstream ${mock.url}`,
  );

  const load = startLoadProcess();
  cleanup.push(() => load.stop());
  const load0 = loadavg();
  const results = [];
  for (const s of scenarios) {
    const base = {
      id: s.id,
      title: s.title,
      figure: s.figure,
      concurrency: s.concurrency,
      status: s.status,
      target: s.target,
    };
    if (skipped.has(s.id)) {
      log(`${s.id}: skipped (${skipped.get(s.id)})`);
      results.push({ ...base, skipped: skipped.get(s.id) });
      continue;
    }
    const t = performance.now();
    const measured = flags.count
      ? await counting(s, armsOf(s), load, workers.gateway, mock)
      : await timing(s, armsOf(s), load);
    log(`${s.id}: done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    results.push({ ...base, ...measured });
  }

  const meta = {
    started_at: started.toISOString(),
    wall_s: Number(((performance.now() - t0) / 1000).toFixed(1)),
    profile: flags.quick ? "quick" : "full",
    ...(flags.count
      ? { requests_per_scenario: profile.countRequests }
      : { rounds: profile.rounds, phase_ms: profile.phaseMs, warmup_ms: profile.warmupMs }),
    machine: { cpus: cpus().length, loadavg_before: load0, loadavg_after: loadavg(), node: process.version },
  };
  log("");
  if (flags.count) {
    log(countingTable(results));
    log("");
    log(countingDetail(results));
  } else {
    log(timingTable(results));
  }
  const file = writeResults(flags.count ? "counting" : "timing", { ...meta, scenarios: results });
  log(
    `\n${meta.wall_s} s in all; load average ${meta.machine.loadavg_before.map((x) => x.toFixed(1)).join(" ")} -> ${meta.machine.loadavg_after.map((x) => x.toFixed(1)).join(" ")}; results in ${file}`,
  );
} catch (error) {
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  exitCode = 1;
} finally {
  for (const close of cleanup.reverse()) await Promise.resolve(close()).catch(() => {});
  rmSync(work, { recursive: true, force: true });
}
process.exit(exitCode);
