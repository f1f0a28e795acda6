// Gateway-path benchmark over real HTTP: the bench worker under `wrangler dev` (no test instrumentation),
// POST /embeddings on the sandbox model, ledger on vs a no-op ledger, 64 concurrent on one key, same run.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { accountSql, creditsSql, keySql, newKey, quiet } from "../scripts/lib/d1.mjs";
import { alternate, closedLoop, failures, onOff } from "./load.mjs";

const CONCURRENCY = 64;
const REQUESTS_PER_PHASE = 1_500;
const PORT = 8799;
// A server left on the port (say, from an interrupted run) would answer instead of ours: refuse to start.
const busy = await fetch(`http://127.0.0.1:${PORT}/`).then(
  () => true,
  () => false,
);
if (busy) throw new Error(`port ${PORT} is already in use: stop the server on it and run again`);

const state = mkdtempSync(join(tmpdir(), "gateway-bench-"));
const wrangler = (args, opts = {}) =>
  spawnSync("npx", ["wrangler", ...args, "--persist-to", state], { env: quiet, encoding: "utf8", ...opts });

const ids = {
  accountId: "acct_bench",
  workspaceId: crypto.randomUUID(),
  userId: "user_bench",
  name: "bench",
  email: "b@x",
};
const key = newKey();
const catalog = spawnSync(process.execPath, ["scripts/catalog.mjs", "--print"], { encoding: "utf8" }).stdout;
const seed = [
  ...accountSql(ids),
  creditsSql({ accountId: ids.accountId, usd: 1000 }),
  keySql({ ...ids, key, name: "bench", management: false }),
].join(";\n");
wrangler(["d1", "migrations", "apply", "DB", "--local"]);
for (const sql of [catalog, `${seed};`]) {
  const file = join(state, "seed.sql");
  writeFileSync(file, sql);
  const r = wrangler(["d1", "execute", "DB", "--local", "--file", file]);
  if (r.status !== 0) throw new Error(r.stderr);
}

const server = spawn(
  "npx",
  [
    "wrangler",
    "dev",
    "bench/ledger-worker.ts",
    "--ip",
    "127.0.0.1",
    "--port",
    String(PORT),
    "--persist-to",
    state,
  ],
  { env: quiet, stdio: ["ignore", "pipe", "pipe"], detached: true },
);
const base = `http://127.0.0.1:${PORT}`;
for (let i = 0; ; i++) {
  try {
    await fetch(`${base}/status?account=none`);
    break;
  } catch {
    if (i > 120) throw new Error("wrangler dev did not start");
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function phase(mode, costs) {
  return closedLoop(CONCURRENCY, REQUESTS_PER_PHASE, async (i) => {
    const res = await fetch(`${base}/gateway/${mode}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "sandbox/embed-small", input: `benchmark input number ${i}` }),
    });
    const body = await res.json();
    if (res.status === 200 && mode === "on") costs.push(Math.round(body.usage.cost * 1_000_000));
    return res.status === 200;
  });
}

try {
  const costs = [];
  const { off, on } = await alternate(["off", "on"], (mode) => phase(mode, costs));
  await new Promise((r) => setTimeout(r, 1000));
  const status = await (await fetch(`${base}/status?account=${ids.accountId}`)).json();
  const expected = costs.reduce((a, b) => a + b, 0);
  const { purchased, spent, reserved, balance } = status.account;
  const failed = failures([...off, ...on]);
  const figures = onOff(off, on);
  console.log(
    `gateway over HTTP (wrangler dev, ${CONCURRENCY} concurrent on one key): off ${figures.ledger_off_rps} req/s, ` +
      `on ${figures.ledger_on_rps} req/s, ratio ${figures.ratio}; failed ${failed}`,
  );
  console.log(
    `  reconciliation: ${costs.length} requests, costs reported ${expected} micro-USD; ledger spent ${spent}, ` +
      `still reserved ${reserved}; purchased == balance + reserved + spent: ${purchased === balance + reserved + spent}`,
  );
  if (failed > 0 || spent !== expected || reserved !== 0) process.exitCode = 1;
} finally {
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // wrangler dev already exited
  }
  rmSync(state, { recursive: true, force: true });
}
