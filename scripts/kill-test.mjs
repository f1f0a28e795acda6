// `npm run test:kill [-- --quick]`: the runtime killed mid-load and restarted on the same local state.
// One `wrangler dev` (global) with seeded keys; per round a fresh capped key, a paid video job submitted
// first, then 200 concurrent paid embeddings kept in flight until the runtime is killed (SIGKILL of the
// whole process tree, workerd included, or SIGTERM of it); the gateway is started again on the same
// state and, once the reservations' lease has passed, the round checks:
//   charges (the ledger's usage of the key) == the generation records' costs
//     == the costs the answered requests reported + the records of requests whose answer was lost,
//   every answered request has its record at the cost it reported, nothing left reserved, no overspend,
//   and the video job finishes after the restart and is billed exactly once.
// Generation records go through the GENERATIONS queue. A Cloudflare Queue outlives the Worker that sent
// to it, but Miniflare keeps a queue's messages in the memory of the workerd that consumes it; so the
// queue and its consumer live in a second `wrangler dev` (the us deployment, given the consumer in this
// run's copy of wrangler.toml; its Durable Object bindings reach the global one's ledgers) that is never
// killed: the killed gateway's sends are relayed to it through the dev registry, and while the gateway
// is down its consumer's ledger calls fail and are retried, as they would be on Cloudflare.
// The lease is shortened with LEDGER_LEASE_MS (see docs/billing.md, "Decisions"). Exits non-zero on any
// violation; every wrangler process it starts is killed on exit, failure included.
import { execFile, spawn } from "node:child_process";
import {
  closeSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { hashKey, quiet, seedLocalAccount, wrangler } from "./lib/d1.mjs";

const QUICK = process.argv.includes("--quick");
const PORT = Number(process.env.PORT ?? 8850);
const CONCURRENCY = Number(process.env.KILL_CONCURRENCY ?? 200);
/** How long the load runs before the kill. */
const LOAD_MS = Number(process.env.KILL_LOAD_MS ?? (QUICK ? 4_000 : 6_000));
const LEASE_MS = Number(process.env.KILL_LEASE_MS ?? (QUICK ? 8_000 : 15_000));
const SIGNALS = QUICK ? ["SIGKILL", "SIGTERM"] : ["SIGKILL", "SIGTERM", "SIGKILL", "SIGTERM"];
const CAP_MICROS = 200_000; // $0.20 per round's key
/**
 * How long before the kill an answer may have ended and still lost its record (and its charge) with the
 * killed runtime: the record's coalescing window (50 ms) and its queue send, on a thread the load keeps
 * busy. Measured up to 310 ms with a CPU hog beside the run (docs/billing.md, "Reclaim").
 */
const RECORD_WINDOW_MS = Number(process.env.KILL_RECORD_WINDOW_MS ?? 1_000);
// A guard, not the target: a quick run takes about 100 s on the 2-core development machine.
const DEADLINE_MS = (QUICK ? 4 : 10) * 60_000;
const base = `http://127.0.0.1:${PORT}/api/v1`;
const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const micros = (usd) => Math.round(Number(usd) * 1_000_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

// Everything lives inside the checkout (.wrangler is ignored by git): the state, the logs, a copy of the
// sources (wrangler dev restarts on a watched edit, which would be a kill of its own), and the dev
// registry, per run, so other checkouts' workers never bind to this one.
const checkout = fileURLToPath(new URL("..", import.meta.url));
mkdirSync(join(checkout, ".wrangler"), { recursive: true });
const run = mkdtempSync(join(checkout, ".wrangler", "kill-test-"));
const state = join(run, "state");
const app = join(run, "app");
const env = { ...quiet, WRANGLER_REGISTRY_PATH: join(run, "registry") };
for (const entry of [
  "src",
  "schema",
  "regions",
  "catalog",
  "scripts",
  "wrangler.toml",
  "package.json",
  "tsconfig.json",
])
  cpSync(join(checkout, entry), join(app, entry), { recursive: true });
symlinkSync(join(checkout, "node_modules"), join(app, "node_modules"), "dir");
process.chdir(app);
// The queue's consumer moves from the global deployment to the us one (see the header), retrying after 2 s
// (its ledger calls fail while the gateway is down: 11 attempts span the restart).
const toml = readFileSync("wrangler.toml", "utf8");
const consumer = /^\[\[queues\.consumers\]\]\n(?:[a-z_]+ = .+\n)+/m.exec(toml);
if (!consumer) throw new Error("wrangler.toml has no [[queues.consumers]] block");
const settings = consumer[0]
  .split("\n")
  .slice(1)
  .filter(Boolean)
  .map((line) => line.replace(/^retry_delay = \d+$/, "retry_delay = 2"));
const producers = 'queues = { producers = [{ binding = "GENERATIONS", queue = "gateway-generations" }] }';
const us = toml.indexOf("\n[env.us]\n");
const line = toml.indexOf(producers, us);
if (us < 0 || line < 0) throw new Error("wrangler.toml's [env.us] has no queue producers line");
const withConsumer = `${producers.slice(0, -2)}, consumers = [{ ${settings.join(", ")} }] }`;
writeFileSync(
  "wrangler.toml",
  (toml.slice(0, line) + withConsumer + toml.slice(line + producers.length)).replace(consumer[0], ""),
);

let server = null;
/** The second `wrangler dev` holding the queue and its consumer (never killed but on exit). */
let queueHost = null;
let logN = 0;

/**
 * The processes of a group (pid, command name), from ps; asynchronously, so the answers that arrive
 * meanwhile are timed when they arrive.
 */
async function groupProcesses(pgid) {
  const { stdout: out } = await promisify(execFile)("ps", ["-eo", "pid=,pgid=,comm="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 3 && Number(f[1]) === pgid)
    .map(([pid, , comm]) => ({ pid: Number(pid), comm }));
}

function killGroup(signal, of = server) {
  if (!of) return;
  try {
    process.kill(-of.child.pid, signal);
  } catch {
    // already gone
  }
}

function cleanUp() {
  killGroup("SIGKILL");
  killGroup("SIGKILL", queueHost);
  server = null;
  queueHost = null;
}
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    cleanUp();
    process.exit(130);
  });
const deadline = setTimeout(() => {
  console.error(`kill test FAILED: over the ${DEADLINE_MS / 1000} s deadline`);
  printLog();
  cleanUp();
  process.exit(1);
}, DEADLINE_MS);

function printLog() {
  if (!server) return;
  const text = readFileSync(server.log, "utf8").replace(ANSI_COLOUR, "");
  const errors = text.split("\n").filter((l) => l.includes('"level":"error"'));
  console.error(`--- wrangler dev log ${server.log}: ${errors.length} error lines ---`);
  for (const l of errors.slice(0, 10)) console.error(`  ${l.slice(0, 500)}`);
}

/** Starts `wrangler dev` (global) on the run's state and waits until it serves. */
async function start() {
  server = await launch(["--port", String(PORT), "--inspector-port", String(PORT + 1)], base);
}

/** Starts the queue's host (the us deployment with the consumer, see the header), once. */
async function startQueueHost() {
  const args = ["--env", "us", "--port", String(PORT + 2), "--inspector-port", String(PORT + 3)];
  queueHost = await launch(args, `http://127.0.0.1:${PORT + 2}/api/v1`);
}

async function launch(ports, url) {
  const log = join(run, `wrangler-${++logN}.log`);
  const fd = openSync(log, "w");
  const args = ["wrangler", "dev", "--ip", "127.0.0.1", ...ports, "--persist-to", state];
  args.push("--var", `LEDGER_LEASE_MS:${LEASE_MS}`);
  const child = spawn("npx", args, { env, stdio: ["ignore", fd, fd], detached: true });
  closeSync(fd);
  const launched = { child, log };
  for (;;) {
    const ok = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(2_000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return launched;
    const text = readFileSync(log, "utf8").replace(ANSI_COLOUR, "");
    if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${text.slice(-1500)}`);
    const failure = text.indexOf("Build failed");
    if (failure >= 0) throw new Error(`wrangler dev: ${text.slice(failure, failure + 600)}`);
    await sleep(300);
  }
}

/**
 * Messages the queue's consumer has acked so far, and batches it was handed (from its log).
 * A message carries the records one isolate sent together (src/generations/record.ts packs them).
 */
function queueDeliveries() {
  const text = readFileSync(queueHost.log, "utf8").replace(ANSI_COLOUR, "");
  let acked = 0;
  let batches = 0;
  for (const m of text.matchAll(/QUEUE gateway-generations (\d+)\/(\d+)/g)) {
    acked += Number(m[1]);
    batches++;
  }
  return { acked, batches };
}

/**
 * Kills the runtime: SIGKILL of every process of wrangler's group at once (npx, wrangler, workerd),
 * or SIGTERM of the group (what a terminal's Ctrl-C or a service manager's stop sends), waiting for
 * it to go. Returns what was running and what was left, by command name.
 */
async function kill(signal) {
  const pgid = server.child.pid;
  const before = await groupProcesses(pgid);
  if (!before.some((p) => p.comm === "workerd")) throw new Error("no workerd process in wrangler's group");
  const killedAt = Date.now();
  killGroup(signal);
  const until = Date.now() + 15_000;
  while ((await groupProcesses(pgid)).length > 0 && Date.now() < until) await sleep(100);
  const left = await groupProcesses(pgid);
  if (left.length) killGroup("SIGKILL");
  server = null;
  // A killed process leaves its dev-registry entry behind, and wrangler would not register the restarted
  // gateway over it until it went stale: the queue host would keep calling the dead one's ledgers.
  rmSync(join(run, "registry", "edge-model-gateway"), { force: true });
  await sleep(200);
  return { killedAt, before: before.map((p) => p.comm), left: left.map((p) => p.comm) };
}

const call = (path, key, init = {}) =>
  fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...init.headers },
    signal: AbortSignal.timeout(30_000),
  });

/**
 * A setup or check call, tried again when the connection fails (a kept-alive socket the server closed
 * meanwhile): POST /keys at worst makes an unused key, and POST /videos carries an Idempotency-Key.
 */
async function json(path, key, init) {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await call(path, key, init);
      const body = await res.json().catch(() => null);
      return { status: res.status, body };
    } catch (error) {
      if (attempt >= 5) throw error;
      await sleep(200 * attempt);
    }
  }
}

async function createKey(managementKey, name, limit) {
  const { status, body } = await json("/keys", managementKey, {
    method: "POST",
    body: JSON.stringify({ name, limit }),
  });
  if (status !== 201) throw new Error(`POST /keys answered ${status}: ${JSON.stringify(body)}`);
  return body.key;
}

/** Paid embeddings, token input (worst case == cost), a length per request so costs differ. */
async function embed(key, i) {
  const body = JSON.stringify({
    model: "sandbox/embed-small",
    input: Array.from({ length: 2_000 + (i % 50) * 20 }, (_, j) => j % 1000),
    provider: { only: ["sandbox"] },
  });
  try {
    const res = await call("/embeddings", key, { method: "POST", body });
    const text = await res.text();
    const parsed = JSON.parse(text);
    return {
      status: res.status,
      id: res.headers.get("X-Generation-Id"),
      cost: res.status === 200 ? micros(parsed.usage.cost) : 0,
      endedAt: Date.now(),
    };
  } catch (error) {
    return { status: 0, error: String(error?.cause?.code ?? error?.name ?? error) };
  }
}

/** CONCURRENCY loops, each sending one request after another until `stop` is set or the server is gone. */
function load(key, control) {
  const answers = [];
  let n = 0;
  const loop = async () => {
    while (!control.stop) {
      const answer = await embed(key, n++);
      answers.push(answer);
      if (answer.status === 0) return;
    }
  };
  return { answers, done: Promise.all(Array.from({ length: CONCURRENCY }, loop)) };
}

/** Generation records of a key, from the local D1 state. */
function records(key) {
  const out = wrangler(
    [
      "d1",
      "execute",
      "DB",
      "--local",
      "--persist-to",
      state,
      "--json",
      "--command",
      `SELECT id, cost_micros AS cost, status, modality, block_id FROM generations WHERE key_hash = '${hashKey(key)}'`,
    ],
    { capture: true },
  );
  return JSON.parse(out)[0]?.results ?? [];
}

/** The ledger's view of a key: usage charged and what is still reserved (the key is capped). */
async function ledgerView(key) {
  const { status, body } = await json("/key", key);
  if (status !== 200) throw new Error(`GET /key answered ${status}`);
  const usage = micros(body.data.usage);
  return { usage, reserved: CAP_MICROS - usage - micros(body.data.limit_remaining) };
}

async function submitVideo(key) {
  const { status, body } = await json("/videos", key, {
    method: "POST",
    headers: { "Idempotency-Key": crypto.randomUUID() },
    body: JSON.stringify({
      model: "sandbox/video-mini",
      prompt: "a lighthouse at dawn",
      duration: 2,
      provider: { only: ["sandbox"], options: { sandbox: { polls_before_done: 2 } } },
    }),
  });
  if (status !== 200 && status !== 202)
    throw new Error(`POST /videos answered ${status}: ${JSON.stringify(body)}`);
  return body.id;
}

async function videoDone(key, id) {
  const until = Date.now() + 90_000;
  for (;;) {
    const { status, body } = await json(`/videos/${id}`, key);
    if (status === 200 && ["completed", "failed", "cancelled", "expired"].includes(body.status)) return body;
    if (Date.now() > until)
      throw new Error(`video ${id} still ${body?.status ?? status} 90 s after the restart`);
    await sleep(1_000);
  }
}

async function round(n, signal, managementKey) {
  const queuedBefore = queueDeliveries();
  const warm = [];
  const key = await createKey(managementKey, `kill round ${n}`, CAP_MICROS / 1_000_000);
  const videoKey = await createKey(managementKey, `kill video ${n}`, CAP_MICROS / 1_000_000);
  const videoId = await submitVideo(videoKey);
  // A warm isolate (and a block) before the load, as a gateway serving traffic would have.
  for (let i = 0; i < 10; i++) {
    const answer = await embed(key, i);
    if (answer.status !== 200) throw new Error(`warm-up request answered ${answer.status}`);
    warm.push(answer);
  }
  const control = { stop: false };
  const { answers, done } = load(key, control);
  await sleep(LOAD_MS);
  const { killedAt, before, left } = await kill(signal);
  control.stop = true;
  await done;
  await start();
  const restartMs = Date.now() - killedAt;
  // Past the lease (and an unclaimed block's wait, no longer than it), the alarm reclaims: look until
  // nothing is reserved and the usage is stable (GET /key carries nothing now: the isolate is new).
  await sleep(Math.max(0, killedAt + LEASE_MS + 1_000 - Date.now()));
  let view = await ledgerView(key);
  for (let i = 0; i < 60 && view.reserved !== 0; i++) {
    await sleep(1_000);
    view = await ledgerView(key);
  }
  // Records still queued land (and are reported to the ledger) within a few retries: wait until the
  // records and the charges have not moved for 3 s.
  let last = "";
  for (let i = 0, still = 0; i < 60 && still < 3; i++) {
    const now = `${records(key).length} ${view.usage} ${view.reserved} ${queueDeliveries().acked}`;
    still = now === last ? still + 1 : 0;
    last = now;
    await sleep(1_000);
    view = await ledgerView(key);
  }
  const video = await videoDone(videoKey, videoId);
  const videoView = await ledgerView(videoKey);

  const ok = [...warm, ...answers].filter((a) => a.status === 200);
  const answered = new Map(ok.map((a) => [a.id, a.cost]));
  const rows = records(key);
  const recorded = new Map(rows.map((r) => [r.id, Number(r.cost)]));
  const sum = (xs) => xs.reduce((s, x) => s + x, 0);
  const answeredCost = sum(ok.map((a) => a.cost));
  const recordCost = sum([...recorded.values()]);
  const lostAnswers = rows.filter((r) => !answered.has(r.id));
  const lostCost = sum(lostAnswers.map((r) => Number(r.cost)));
  // An answer that ended just before the kill may have lost its record with the isolate, and then its
  // charge too (docs/billing.md, "Reclaim": the record waits for its coalescing window and the queue
  // send). Such answers are neither recorded nor charged; any older one would be a record left unsent.
  const unrecorded = ok.filter((a) => !recorded.has(a.id));
  const inWindow = unrecorded.filter((a) => killedAt - a.endedAt <= RECORD_WINDOW_MS);
  const windowCost = sum(inWindow.map((a) => a.cost));
  const misrecorded = ok.filter((a) => recorded.has(a.id) && recorded.get(a.id) !== a.cost);
  const videoRows = records(videoKey);
  const videoCost = video.usage ? micros(video.usage.cost) : null;
  const queued = queueDeliveries();

  const violations = [];
  if (view.reserved !== 0) violations.push(`${view.reserved} micro-USD still reserved after the lease`);
  if (view.usage !== recordCost) violations.push(`charged ${view.usage} != records ${recordCost}`);
  if (answeredCost - windowCost + lostCost !== recordCost)
    violations.push(
      `answered ${answeredCost} - unrecorded at the kill ${windowCost} + lost answers ${lostCost} != records ${recordCost}`,
    );
  if (unrecorded.length > inWindow.length) {
    const ages = unrecorded.map((a) => killedAt - a.endedAt).sort((a, b) => a - b);
    violations.push(
      `${unrecorded.length - inWindow.length} answered requests without a record, ended more than ` +
        `${RECORD_WINDOW_MS} ms before the kill (all unrecorded: ${ages[0]}..${ages.at(-1)} ms before it)`,
    );
  }
  if (misrecorded.length) violations.push(`${misrecorded.length} records cost other than their answers`);
  if (view.usage > CAP_MICROS || answeredCost > CAP_MICROS) violations.push("overspend past the key's cap");
  const bad = answers.filter((a) => a.status !== 0 && ![200, 402].includes(a.status));
  if (bad.length)
    violations.push(`${bad.length} answers not 200/402 (${[...new Set(bad.map((a) => a.status))]})`);
  if (video.status !== "completed") violations.push(`video job ${video.status}`);
  if (videoRows.length !== 1) violations.push(`video job has ${videoRows.length} generation records`);
  else if (videoCost == null || Number(videoRows[0].cost) !== videoCost || videoView.usage !== videoCost)
    violations.push(
      `video billed ${videoView.usage}, record ${videoRows[0].cost}, job reported ${videoCost} (must all agree)`,
    );
  if (videoView.reserved !== 0) violations.push(`video key still reserves ${videoView.reserved}`);
  if (ok.length === 0) violations.push("no request was answered before the kill");
  // A message carries several records, so the records themselves are counted in D1 (above); here, that
  // they came through the queue at all.
  if (rows.length > 0 && queued.acked === queuedBefore.acked)
    violations.push("the queue's consumer acked no message: the records bypassed the queue");
  if (lostAnswers.length + answers.filter((a) => a.status === 0).length === 0)
    violations.push("nothing was in flight at the kill (raise KILL_CONCURRENCY or lower KILL_LOAD_MS)");

  const lost = answeredCost + lostCost - view.usage;
  const windowAges = inWindow.map((a) => killedAt - a.endedAt);
  console.log(
    `round ${n} (${signal}; killed ${before.join(",")}; left ${left.length ? left.join(",") : "none"}; back in ${restartMs} ms): ` +
      `answered ${ok.length} (${answeredCost} micro-USD), of which unrecorded at the kill ${inWindow.length}` +
      (inWindow.length
        ? ` (ended ${Math.min(...windowAges)}..${Math.max(...windowAges)} ms before it)`
        : "") +
      `, cut off ${answers.filter((a) => a.status === 0).length}, ` +
      `402 ${answers.filter((a) => a.status === 402).length}; records ${rows.length} (${recordCost}), of which answer lost ${lostAnswers.length} (${lostCost}), admitted against a block ${rows.filter((r) => r.block_id).length}; ` +
      `charged ${view.usage}, reserved ${view.reserved}, lost ${lost} micro-USD; ` +
      `queue: ${queued.acked - queuedBefore.acked} messages of records acked in ${queued.batches - queuedBefore.batches} batches; ` +
      `video ${video.status}, ${videoRows.length} record, billed ${videoView.usage} (reported ${videoCost})` +
      (violations.length ? `  VIOLATION: ${violations.join("; ")}` : ""),
  );
  return violations;
}

let failed = false;
try {
  const managementKey = seedLocalAccount({ state, dir: run, label: "kill test" });
  await start();
  await startQueueHost();
  console.log(
    `kill test${QUICK ? " (quick)" : ""}: ${CONCURRENCY} concurrent paid embeddings, kill after ${LOAD_MS} ms, ` +
      `lease ${LEASE_MS} ms, rounds ${SIGNALS.join(", ")}, on :${PORT} (ready after ${elapsed()})`,
  );
  for (const [i, signal] of SIGNALS.entries()) {
    const violations = await round(i + 1, signal, managementKey);
    if (violations.length) failed = true;
  }
} catch (error) {
  console.error(`kill test FAILED: ${error.stack ?? error}`);
  failed = true;
}
clearTimeout(deadline);
if (failed) printLog();
cleanUp();
await sleep(500);
if (!failed) rmSync(run, { recursive: true, force: true });
else console.error(`(state and logs kept in ${run})`);
console.log(`kill test ${failed ? "FAILED" : "passed"} in ${elapsed()}`);
process.exit(failed ? 1 : 0);
