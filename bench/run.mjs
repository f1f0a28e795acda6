// `npm run bench`: issue 11's harness. The built gateway bundle and a passthrough Worker run in one workerd
// (Miniflare, wrangler.toml's bindings, the bench's own D1), both calling a mock upstream on loopback; load
// comes from a second process; arms alternate over rounds; medians and ranges are printed and written to
// bench/results/<date>.json. Flags:
//   --count            counting mode: D1 queries, Durable Object calls, upstream calls and waitUntils per request
//   --profile          CPU profile of every isolate while each arm runs, the gateway's by source file
//   --memory           workerd's resident memory, and the gateway isolate's V8 heap after a full collection,
//                      before and after 10k gateway requests (after a warm-up)
//   --quick            CI's keep-alive: timing and counting in one short pass (~1 min); figures mean little;
//                      results go to the temp directory, not bench/results
//   --rounds N, --seconds S, --only id,id   override the profile's rounds / seconds per phase; pick scenarios
//   --upstream-ms N    the mock holds each answer N ms (default 0: at once, so ratios compare CPU; a real
//                      provider's latency, say 100, shows what the overhead costs a caller)
//   --cpu              timing also gives workerd's CPU per request of each arm (background work waited out
//                      after each phase): steadier than req/s on a machine with a busy neighbour
//   --against REV      timing also runs the gateway built from git revision REV as a third arm, in the same
//                      workerd and rounds: each figure gets the paired ratio to it (an A/B of a change that
//                      the machine's drift, which moves req/s by a third between runs, cannot hide or fake)
//   --keys N           spread the valid-key arms over N keys of the account (default 1): past ~750 req/s one
//                      key trips the abuse limiter (6000 per 10 s), whose 429s then show as failed requests
// Exits non-zero only when the harness itself breaks (build, start, seeding, an arm never answering as
// expected); never on figures.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startMockUpstream } from "./harness/mock-upstream.mjs";
import { counting, memory, profiling, startLoadProcess, timing } from "./harness/modes.mjs";
import {
  countingDetail,
  countingTable,
  memoryTable,
  profileDetail,
  profileTable,
  timingTable,
} from "./harness/report.mjs";
import { BENCH_PROVIDER, BENCH_PROVIDER_KEY, SCENARIOS } from "./harness/scenarios.mjs";
import { applyMigrations, loadCatalog, seedAccount } from "./harness/seed.mjs";
import { buildBundle, COUNTING_ENTRY, startWorkers } from "./harness/workers.mjs";

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    count: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    memory: { type: "boolean", default: false },
    cpu: { type: "boolean", default: false },
    against: { type: "string" },
    rounds: { type: "string" },
    seconds: { type: "string" },
    only: { type: "string" },
    keys: { type: "string", default: "1" },
    "upstream-ms": { type: "string", default: "0" },
  },
});
const profile = flags.quick
  ? {
      rounds: 1,
      phaseMs: 1_000,
      warmupMs: 300,
      warmupRequests: 16,
      countRequests: 64,
      settleMs: 200,
      memoryWarmup: 100,
      memoryRequests: 500,
    }
  : {
      rounds: 5,
      phaseMs: 8_000,
      warmupMs: 2_000,
      warmupRequests: 200,
      countRequests: 2_000,
      settleMs: 1_500,
      memoryWarmup: 20_000,
      memoryRequests: 10_000,
    };
if (flags.rounds) profile.rounds = Number(flags.rounds);
if (flags.seconds) profile.phaseMs = Number(flags.seconds) * 1000;
const modes = flags.quick
  ? ["timing", "counting"]
  : [
      ...(flags.count ? ["counting"] : []),
      ...(flags.profile ? ["profile"] : []),
      ...(flags.memory ? ["memory"] : []),
    ];
if (modes.length === 0) modes.push("timing");
const only = flags.only?.split(",");
const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.id));

/** Well-formed (so it reaches the key lookup) but never issued. */
const INVALID_KEY = `sk-gw-v1-${"0".repeat(64)}`;
const root = new URL("..", import.meta.url).pathname;
const started = new Date();
const date = started.toISOString().slice(0, 10);
const profilesDir = join(tmpdir(), "gateway-bench-profiles");
const log = (line) => process.stdout.write(`${line}\n`);
/** The commit measured, and whether src/ differed from it. */
function revision() {
  const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
  try {
    return {
      commit: git("rev-parse", "--short", "HEAD"),
      src_changed: git("status", "--porcelain", "src") !== "",
    };
  } catch {
    return { commit: "unknown" };
  }
}
const seconds = (since) => Number(((performance.now() - since) / 1000).toFixed(1));

/** What one arm of a scenario sends, for the load process. */
function armSpec(base, scenario, arm, apiKeys) {
  const req = scenario[arm];
  const headers = { "content-type": "application/json" };
  if (req.key === "valid") headers.authorization = `Bearer ${apiKeys[0]}`;
  if (req.key === "invalid") headers.authorization = `Bearer ${INVALID_KEY}`;
  // With several keys, request i goes with key i mod N.
  const authorizations =
    req.key === "valid" && apiKeys.length > 1 ? apiKeys.map((k) => `Bearer ${k}`) : undefined;
  const streamed = scenario.figure === "stream" || scenario.figure === "completion";
  return {
    tool: streamed ? "stream" : "autocannon",
    url: `${base}${req.path}`,
    method: "POST",
    headers,
    body: JSON.stringify(req.body),
    connections: scenario.concurrency,
    ...(authorizations ? { authorizations } : {}),
  };
}

/**
 * A checkout of `rev` for --against: a detached git worktree in the run's directory, sharing this
 * checkout's node_modules (removed with the run).
 */
function checkoutOf(rev) {
  const dir = join(work, "against-src");
  execFileSync("git", ["worktree", "add", "--detach", "--force", dir, rev], { cwd: root, stdio: "ignore" });
  cleanup.push(() =>
    execFileSync("git", ["worktree", "remove", "--force", dir], { cwd: root, stdio: "ignore" }),
  );
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  return dir;
}

/** One request per arm before any load: a wrong status here means the harness is broken, not slow. */
async function checkArm(spec, status, label) {
  const res = await fetch(spec.url, { method: spec.method, headers: spec.headers, body: spec.body });
  const body = Buffer.from(await res.arrayBuffer()).toString();
  if (res.status !== status)
    throw new Error(`${label}: expected ${status}, got ${res.status}: ${body.slice(0, 500)}`);
}

/** Adds one mode's section to the day's results file (the quick pass writes to the temp directory). */
function writeResults(section, data) {
  const file = flags.quick
    ? join(tmpdir(), `gateway-bench-quick-${date}.json`)
    : join(root, "bench/results", `${date}.json`);
  mkdirSync(join(file, ".."), { recursive: true });
  const existing = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  writeFileSync(file, `${JSON.stringify({ ...existing, date, [section]: data }, null, 2)}\n`);
  return file;
}

const PRINT = {
  timing: (results) => timingTable(results),
  counting: (results) => `${countingTable(results)}\n\n${countingDetail(results)}`,
  profile: (results) => `${profileTable(results)}\n\n${profileDetail(results)}`,
  memory: (results) => memoryTable(results),
};

// The run's state (D1, objects, queues) lives in memory-backed files where the machine has them: workerd
// runs every isolate on one thread, and a local SQLite commit waiting on the disk stalls them all
// (measured: p99 at concurrency 1 +10.7 ms on disk, +6.2 ms on tmpfs); Cloudflare's storage does not
// sync to the ingress machine's disk, so that stall is the simulator's, not the gateway's. Not in memory
// mode: files on tmpfs that SQLite maps count in workerd's resident memory, and grow with the records.
const memoryBacked = existsSync("/dev/shm") && !modes.includes("memory");
const work = mkdtempSync(join(memoryBacked ? "/dev/shm" : tmpdir(), "gateway-bench-"));
const cleanup = [];
let exitCode = 0;
try {
  const t0 = performance.now();
  const mock = await startMockUpstream({ delayMs: Number(flags["upstream-ms"]) });
  cleanup.push(() => mock.close());
  const counted = modes.includes("counting");
  const timed = modes.some((m) => m !== "counting");
  log(
    `building with wrangler deploy --dry-run: ${[timed && "the gateway", counted && COUNTING_ENTRY].filter(Boolean).join(" and ")}...`,
  );
  // What is measured is what was built: the revision is read now, not when the results are written
  // (an edit made while the bench runs is not in its figures).
  const built = revision();
  const againstSrc = flags.against && timed ? checkoutOf(flags.against) : undefined;
  const [gatewayBundle, countingBundle, againstBundle] = await Promise.all([
    timed ? buildBundle(join(work, "gateway")) : undefined,
    counted ? buildBundle(join(work, "counting"), COUNTING_ENTRY) : undefined,
    againstSrc ? buildBundle(join(work, "against"), undefined, againstSrc) : undefined,
  ]);
  const workers = await startWorkers({
    bundles: { gateway: gatewayBundle, counting: countingBundle, against: againstBundle },
    upstreamUrl: mock.url,
    persistDir: join(work, "state"),
    providerSlug: BENCH_PROVIDER,
    providerKey: BENCH_PROVIDER_KEY,
    inspect: modes.includes("profile") || modes.includes("memory"),
  });
  cleanup.push(() => workers.mf.dispose());
  const gatewayUrl = workers.urls.gateway ?? workers.urls.counting;
  const db = await workers.mf.getD1Database("DB", gatewayBundle ? "gateway" : "counting");
  await applyMigrations(db);
  const apiKeys = await seedAccount(db, Number(flags.keys));

  // Scenarios whose route the gateway does not have yet are skipped (its route guard answers 404 first).
  const skipped = new Map();
  for (const s of scenarios.filter((s) => s.optional)) {
    const res = await fetch(`${gatewayUrl}${s.gateway.path}`, { method: "POST" });
    await res.arrayBuffer();
    if (res.status === 404) skipped.set(s.id, `the gateway answers 404 for POST ${s.gateway.path}`);
  }
  const active = scenarios.filter((s) => !skipped.has(s.id));
  const models = new Map(
    active.filter((s) => s.model).map((s) => [s.model(mock.url).slug, s.model(mock.url)]),
  );
  await loadCatalog(db, [...models.values()]);

  const armsOf = (s) => ({
    gateway: armSpec(
      s.gateway.via === "passthrough" ? workers.urls.passthrough : gatewayUrl,
      s,
      "gateway",
      apiKeys,
    ),
    passthrough: armSpec(workers.urls.passthrough, s, "passthrough", apiKeys),
    ...(workers.urls.against && s.gateway.via !== "passthrough"
      ? { against: armSpec(workers.urls.against, s, "gateway", apiKeys) }
      : {}),
  });
  for (const s of active) {
    await checkArm(armsOf(s).gateway, s.status, `${s.id} gateway`);
    await checkArm(armsOf(s).passthrough, 200, `${s.id} passthrough`);
  }
  log(
    `ready in ${seconds(t0)} s: ${Object.entries(workers.urls)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}, upstream ${mock.url}`,
  );

  if (modes.includes("profile")) mkdirSync(profilesDir, { recursive: true });
  const load = startLoadProcess();
  cleanup.push(() => load.stop());
  const upstreamCount = () => Object.values(mock.counts).reduce((a, b) => a + b, 0);
  /** Generation records in the gateway's D1 (timing mode checks them against the answers). */
  const records = async () => (await db.prepare("SELECT count(*) AS n FROM generations").first()).n;
  const files = new Set();
  for (const mode of modes) {
    const tMode = performance.now();
    const load0 = loadavg();
    const results = [];
    for (const s of scenarios) {
      const base = {
        id: s.id,
        title: s.title,
        figure: s.figure,
        concurrency: s.concurrency,
        status: s.status,
      };
      // A reference scenario has no gateway in it: only its timing means something.
      if (s.reference && mode !== "timing") continue;
      if (skipped.has(s.id)) {
        results.push({ ...base, target: s.target, skipped: skipped.get(s.id) });
        continue;
      }
      const t = performance.now();
      const args = {
        scenario: s,
        arms: armsOf(s),
        load,
        profile,
        date,
        profilesDir,
        records,
        cpu: flags.cpu,
      };
      const measured =
        mode === "counting"
          ? await counting({ ...args, countingUrl: workers.urls.counting, upstreamCount })
          : mode === "profile"
            ? await profiling({ ...args, inspector: workers.inspector, bundles: { gateway: gatewayBundle } })
            : mode === "memory"
              ? await memory({ ...args, inspector: workers.inspector })
              : await timing(args);
      log(`${mode} ${s.id}: ${seconds(t)} s`);
      results.push({ ...base, ...(mode === "timing" ? { target: s.target } : {}), ...measured });
    }
    const meta = {
      started_at: started.toISOString(),
      revision: built,
      ...(flags.against ? { against: flags.against } : {}),
      wall_s: seconds(tMode),
      profile: flags.quick ? "quick" : "full",
      keys: Number(flags.keys),
      upstream_ms: Number(flags["upstream-ms"]),
      ...(mode === "counting"
        ? { requests_per_scenario: profile.countRequests }
        : mode === "memory"
          ? { warmup_requests: profile.memoryWarmup, requests_per_scenario: profile.memoryRequests }
          : { rounds: profile.rounds, phase_ms: profile.phaseMs, warmup_ms: profile.warmupMs }),
      machine: {
        cpus: cpus().length,
        loadavg_before: load0,
        loadavg_after: loadavg(),
        node: process.version,
      },
    };
    log(`\n${PRINT[mode](results)}\n`);
    files.add(writeResults(mode, { ...meta, scenarios: results }));
  }
  log(
    `${seconds(t0)} s in all; load average now ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}; results in ${[...files].join(", ")}`,
  );
} catch (error) {
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  exitCode = 1;
} finally {
  for (const close of cleanup.reverse()) await Promise.resolve(close()).catch(() => {});
  rmSync(work, { recursive: true, force: true });
}
process.exit(exitCode);
