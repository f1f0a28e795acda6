// `npm run test:ingress`: one capped key burst through the global, europe and us ingresses at once
// (three local `wrangler dev` processes on one persisted state); exactly floor(C/R) admitted, no 5xx,
// settled usage == admitted × R == the sum of the answers' costs. Exits non-zero on any violation.
import { spawn } from "node:child_process";
import { closeSync, cpSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { quiet, seedLocalAccount } from "./lib/d1.mjs";

const BASE_PORT = Number(process.env.INGRESS_BURST_PORT ?? 28787);
const REQUESTS = Number(process.env.INGRESS_BURST_REQUESTS ?? 200);
const ROUNDS = Number(process.env.INGRESS_BURST_ROUNDS ?? 3);
const CAP_MICROS = 10_000; // $0.01
const DEADLINE_MS = 4 * 60_000;
const SETTLE_READS = Number(process.env.INGRESS_BURST_SETTLE_READS ?? 100);
const REGIONS = [
  { name: "global", env: null },
  { name: "europe", env: "europe" },
  { name: "us", env: "us" },
].map((r, i) => ({ ...r, port: BASE_PORT + i, base: `http://127.0.0.1:${BASE_PORT + i}/api/v1` }));

// 4,849 tokens at 0.02 micro-USD each: R = ceil(96.98) = 97, so C/R is not whole (floor 103, 9 left over).
// Token input and one provider make the admission's worst case equal the charge; with text input or a
// fallback provider the reservation exceeds the cost and the admitted count depends on timing.
const BODY = JSON.stringify({
  model: "sandbox/embed-small",
  input: Array.from({ length: 4_849 }, (_, i) => i % 1000),
  provider: { only: ["sandbox"] },
});

const started = Date.now();
const run = mkdtempSync(join(tmpdir(), "gateway-ingress-"));
const state = join(run, "state");
const logs = mkdtempSync(join(tmpdir(), "gateway-ingress-logs-"));
// The dev registry is per user unless told otherwise: a per-run one keeps other checkouts' workers out.
const env = { ...quiet, WRANGLER_REGISTRY_PATH: join(run, "registry") };

// wrangler dev rebuilds and restarts (Durable Objects included) when a watched source file changes, so
// an edit in this checkout mid-burst would fail the run: the workers serve a copy taken now instead.
const checkout = fileURLToPath(new URL("..", import.meta.url));
const app = join(run, "app");
const SOURCES = [
  "src",
  "schema",
  "regions",
  "catalog",
  "scripts",
  "wrangler.toml",
  "package.json",
  "tsconfig.json",
];
for (const entry of SOURCES) cpSync(join(checkout, entry), join(app, entry), { recursive: true });
symlinkSync(join(checkout, "node_modules"), join(app, "node_modules"), "dir");
process.chdir(app);
const servers = [];
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const micros = (usd) => Math.round(usd * 1_000_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stopServers() {
  for (const s of servers) {
    try {
      process.kill(-s.child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}
process.on("exit", stopServers);
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    stopServers();
    rmSync(run, { recursive: true, force: true });
    process.exit(130);
  });
const deadline = setTimeout(() => {
  console.error(`ingress burst FAILED: over the ${DEADLINE_MS / 1000} s deadline`);
  printLogs([]);
  stopServers();
  rmSync(run, { recursive: true, force: true });
  process.exit(1);
}, DEADLINE_MS);

async function startServers() {
  for (const r of REGIONS) {
    const answering = await fetch(`http://127.0.0.1:${r.port}/`).then(
      () => true,
      () => false,
    );
    if (answering)
      throw new Error(`port ${r.port} is in use: stop the server on it (or set INGRESS_BURST_PORT)`);
  }
  // One at a time: workerd processes opening the same persisted SQLite state at once can fail to start
  // ("Uncaught exception ... SQLITE_BUSY"), and the regional workers bind the global one's objects.
  for (const r of REGIONS) {
    const log = join(logs, `${r.name}.log`);
    const fd = openSync(log, "w");
    const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(r.port)];
    args.push("--inspector-port", String(r.port + 1000), "--persist-to", state);
    if (r.env) args.push("--env", r.env);
    const child = spawn("npx", args, { env, stdio: ["ignore", fd, fd], detached: true });
    closeSync(fd);
    const server = { region: r, child, log };
    servers.push(server);
    await serving(server);
  }
}

async function serving({ region, child, log }) {
  for (;;) {
    // wrangler dev holds requests while it builds, or after a failed build: look again every 2 s.
    const ok = await fetch(`${region.base}/openapi.json`, { signal: AbortSignal.timeout(2_000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    const text = readFileSync(log, "utf8").replace(ANSI_COLOUR, "");
    if (child.exitCode !== null)
      throw new Error(`wrangler dev (${region.name}) exited:\n${text.slice(-1500)}`);
    // A failed build leaves wrangler dev waiting for an edit that will not come to the copy.
    const failure = text.indexOf("Build failed");
    if (failure >= 0) throw new Error(`wrangler dev (${region.name}): ${text.slice(failure, failure + 600)}`);
    await sleep(300);
  }
}

const call = (region, path, key, init = {}) =>
  fetch(`${region.base}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...init.headers },
    signal: AbortSignal.timeout(60_000),
  });

async function createKey(managementKey, name, limit) {
  const res = await call(REGIONS[0], "/keys", managementKey, {
    method: "POST",
    body: JSON.stringify({ name, limit }),
  });
  if (res.status !== 201) throw new Error(`POST /keys answered ${res.status}: ${await res.text()}`);
  return (await res.json()).key;
}

async function embed(region, key, requestId) {
  try {
    const res = await call(region, "/embeddings", key, {
      method: "POST",
      body: BODY,
      headers: { "X-Request-Id": requestId },
    });
    const body = await res.json().catch(() => null);
    return { region: region.name, requestId, status: res.status, cost: body?.usage?.cost, body };
  } catch (error) {
    return { region: region.name, requestId, status: 0, body: String(error) };
  }
}

/** R from one request per ingress on an uncapped key (which also proves each ingress reaches the ledger). */
async function learnCost(managementKey) {
  const key = await createKey(managementKey, "burst probe", null);
  const costs = [];
  for (const r of REGIONS) {
    const answer = await embed(r, key, `burst-probe-${r.name}`);
    if (answer.status !== 200)
      throw new Error(`probe on ${r.name}: ${answer.status} ${JSON.stringify(answer.body)}`);
    costs.push(micros(answer.cost));
  }
  if (new Set(costs).size !== 1)
    throw new Error(`one body costs differently per ingress: ${costs.join(", ")}`);
  return costs[0];
}

/** GET /key through every ingress (each read also closes that isolate's blocks) until all agree and nothing is reserved. */
const MONEY_PATHS_ONLY = process.argv.includes("--money-paths");

async function settledUsage(key) {
  let previous;
  let last;
  let same = 0;
  for (let i = 0; i < SETTLE_READS; i++) {
    const reads = await Promise.all(
      REGIONS.map(async (r) => {
        const res = await call(r, "/key", key);
        if (res.status !== 200)
          throw new Error(`GET /key on ${r.name} answered ${res.status}: ${await res.text()}`);
        return res.json();
      }),
    );
    const figures = reads.map(({ data }) => ({
      usage: micros(data.usage),
      reserved: CAP_MICROS - micros(data.usage) - micros(data.limit_remaining),
    }));
    last = REGIONS.map((r, j) => `${r.name} usage ${figures[j].usage} reserved ${figures[j].reserved}`).join(
      ", ",
    );
    const usage = figures[0].usage;
    const settled = figures.every((f) => f.usage === usage && f.reserved === 0);
    same = settled && usage === previous ? same + 1 : 0;
    previous = usage;
    if (same >= 2) return { usage, reads: i + 1 };
    await sleep(250);
  }
  throw new Error(`usage never settled in ${SETTLE_READS} reads 250 ms apart (last: ${last}; micro-USD)`);
}

async function round(n, managementKey, R) {
  const key = await createKey(managementKey, `burst round ${n}`, CAP_MICROS / 1_000_000);
  const t0 = Date.now();
  const answers = await Promise.all(
    Array.from({ length: REQUESTS }, (_, i) => {
      const region = REGIONS[i % REGIONS.length];
      return embed(region, key, `burst-r${n}-${String(i).padStart(3, "0")}-${region.name}`);
    }),
  );
  const burstMs = Date.now() - t0;
  const settled = await settledUsage(key).catch((error) => ({
    error,
    usage: Number.NaN,
    reads: null,
  }));
  const expected = Math.floor(CAP_MICROS / R);
  const ok = answers.filter((a) => a.status === 200);
  const costSum = ok.reduce((s, a) => s + micros(a.cost), 0);
  const byRegion = REGIONS.map((r) => {
    const counts = {};
    for (const a of answers.filter((x) => x.region === r.name))
      counts[a.status] = (counts[a.status] ?? 0) + 1;
    return `${r.name} ${Object.entries(counts)
      .map(([s, c]) => `${s}x${c}`)
      .join(" ")}`;
  });
  const bad = answers.filter((a) => ![200, 402, 429].includes(a.status));
  const violations = [];
  // `--money-paths` (CI): only what issue 17 requires of every interleaving, i.e. answers are 200, 402 or
  // 429 and nothing is spent past the cap; exact admission and settling in time are reported as notes
  // (strict mode, the default, checks them too: see docs/reliability.md).
  const notes = [];
  const exact = MONEY_PATHS_ONLY ? notes : violations;
  if (bad.length) violations.push(`${bad.length} answers not 200/402/429`);
  if (costSum > CAP_MICROS) violations.push(`overspend: answers cost ${costSum} > cap ${CAP_MICROS}`);
  if (ok.length !== expected) exact.push(`admitted ${ok.length} != floor(C/R) ${expected}`);
  if (settled.error) exact.push(settled.error.message);
  else {
    if (settled.usage > CAP_MICROS) violations.push(`overspend: usage ${settled.usage} > cap ${CAP_MICROS}`);
    if (settled.usage !== ok.length * R)
      violations.push(`usage ${settled.usage} != admitted x R ${ok.length * R}`);
    if (costSum !== settled.usage)
      violations.push(`sum of answers' costs ${costSum} != usage ${settled.usage}`);
  }
  if (ok.some((a) => micros(a.cost) !== R)) violations.push("a 200 answer cost other than R");
  console.log(
    `round ${n}: ${byRegion.join(" | ")}; admitted ${ok.length} (floor(C/R) ${expected}); usage ${settled.usage} ` +
      `(expected ${ok.length * R}, sum of costs ${costSum}); burst ${burstMs} ms, ${settled.reads ? `settled after ${settled.reads} reads` : "not settled"}` +
      (violations.length ? `  VIOLATION: ${violations.join("; ")}` : "") +
      (notes.length ? `  note: ${notes.join("; ")}` : ""),
  );
  for (const a of bad.slice(0, 5)) console.log(`  ${a.requestId}: ${a.status} ${JSON.stringify(a.body)}`);
  return { violations, bad };
}

/**
 * From each wrangler log: the worker's error lines and the lines naming a failed request, each with
 * the runtime's own line for the same `reference` (workerd logs the SQLite detail only there), and a
 * count of the noise that is expected locally (busy SQLite under the abuse limiter, which fails open).
 */
function printLogs(bad) {
  const ids = bad.map((a) => a.requestId);
  for (const s of servers) {
    const lines = readFileSync(s.log, "utf8").replace(ANSI_COLOUR, "").split("\n");
    const errors = lines.filter((l) => l.includes('"level":"error"') || ids.some((id) => l.includes(id)));
    const limiter = lines.filter((l) => l.includes("abuse limiter failed")).length;
    const busy = lines.filter((l) => /SQLITE_BUSY/.test(l) && l.includes("sqlite.c++")).length;
    console.error(
      `--- wrangler dev (${s.region.name}): ${errors.length} error lines; runtime SQLITE_BUSY lines ${busy}; ` +
        `abuse limiter failed open ${limiter} times ---`,
    );
    for (const line of errors.slice(0, 12)) {
      const ref = /reference = (\w+)/.exec(line)?.[1];
      const at = ref ? lines.findIndex((l) => l.includes(`wdErrId = ${ref}`)) : -1;
      const detail = lines.slice(Math.max(0, at - 3), at).find((l) => l.includes("dbErrorMessage"));
      if (at >= 0) console.error(`  runtime (wdErrId ${ref}): ${(detail ?? lines[at]).trim().slice(0, 300)}`);
      console.error(`  ${line.slice(0, 700)}`);
    }
  }
  console.error(`(full wrangler logs kept in ${logs})`);
}

let failed = false;
const badAnswers = [];
try {
  const managementKey = seedLocalAccount({ state, dir: run, label: "ingress burst" });
  await startServers();
  const R = await learnCost(managementKey);
  console.log(
    `ingress burst: ${REQUESTS} concurrent embeddings per round on one key, cap C ${CAP_MICROS} micro-USD, ` +
      `R ${R}, across ${REGIONS.map((r) => `${r.name}:${r.port}`).join(", ")} (ready after ${Date.now() - started} ms)`,
  );
  for (let n = 1; n <= ROUNDS; n++) {
    const { violations, bad } = await round(n, managementKey, R);
    badAnswers.push(...bad);
    if (violations.length) failed = true;
  }
} catch (error) {
  console.error(`ingress burst FAILED: ${error.stack ?? error}`);
  failed = true;
}
clearTimeout(deadline);
if (failed) printLogs(badAnswers);
stopServers();
await sleep(500);
rmSync(run, { recursive: true, force: true });
if (!failed) rmSync(logs, { recursive: true, force: true });
console.log(
  `ingress burst ${failed ? "FAILED" : "passed"} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
process.exit(failed ? 1 : 0);
