// `npm run bench:ledger`: runs the ledger benchmark inside workerd and prints its figures (on vs off, reconciliation).
import { spawnSync } from "node:child_process";

const run = spawnSync("npx", ["vitest", "run", "--config", "bench/vitest.config.ts"], {
  cwd: new URL("..", import.meta.url),
  encoding: "utf8",
  env: { ...process.env, FORCE_COLOR: "0" },
  // The gateway path logs a line per request (~20 MB a run): past spawnSync's 1 MB default the run is killed.
  maxBuffer: 1 << 30,
});
const output = `${run.stdout}\n${run.stderr}`.split("\n");
/** The JSON a benchmark printed after `tag` at the start of a word, or exits with vitest's output. */
function result(tag) {
  const pattern = new RegExp(`(^|[^A-Z_])${tag} (\\{.*)$`);
  const match = output.map((l) => pattern.exec(l)).find(Boolean);
  if (!match) {
    process.stderr.write(run.stdout + run.stderr);
    process.exit(1);
  }
  return JSON.parse(match[2]);
}
const b = result("BENCH_RESULT");
const g = result("GATEWAY_BENCH_RESULT");
const r = b.reconciliation;
console.log(
  `ledger benchmark: ${b.concurrency} concurrent on one key, ${b.requests_per_phase} requests per phase, same run`,
);
console.log(`  one shared request context (the original harness):`);
console.log(`  ledger off: ${b.ledger_off_rps} req/s`);
console.log(`  ledger on:  ${b.ledger_on_rps} req/s`);
console.log(`  ratio on/off: ${b.ratio} (target >= ${b.target_ratio})`);
console.log(
  `  each request in its own context (SELF.fetch): off ${b.http.ledger_off_rps} req/s, on ${b.http.ledger_on_rps} req/s, ratio ${b.http.ratio}`,
);
console.log(`  failed requests: ${b.failed_requests}`);
console.log(
  `  reconciliation: ${r.admitted} admitted x ${r.cost_micros_each} micro-USD = ${r.expected_spent_micros}; ` +
    `ledger spent ${r.spent_micros}, key usage ${r.key_usage_micros}, still reserved ${r.reserved_micros}`,
);
console.log(
  `  purchased ${r.purchased_micros} == balance ${r.balance_micros} + reserved ${r.reserved_micros} + spent ${r.spent_micros}: ` +
    `${r.identity_holds}; exact: ${r.exact}`,
);

const gr = g.reconciliation;
console.log(
  `gateway path (POST /embeddings, sandbox model, ${g.concurrency} concurrent on one key, own contexts): ` +
    `off ${g.ledger_off_rps} req/s, on ${g.ledger_on_rps} req/s, ratio ${g.ratio} (target >= ${b.target_ratio})`,
);
console.log(
  `  an object that answers at once instead of the ledger (the floor of one call per admission): ` +
    `${g.empty_object_rps} req/s, ratio to off ${g.empty_ratio}; phases (req/s) off ${g.phases_rps.off.join(", ")}; ` +
    `empty ${g.phases_rps.empty.join(", ")}; on ${g.phases_rps.on.join(", ")}`,
);
console.log(
  `  reconciliation: ${gr.admitted} requests, costs reported ${gr.expected_spent_micros} micro-USD; ledger spent ` +
    `${gr.spent_micros}, key usage ${gr.key_usage_micros}, still reserved ${gr.reserved_micros}; ` +
    `identity ${gr.identity_holds}; exact: ${gr.exact}`,
);
if (!r.exact || !r.identity_holds || b.failed_requests > 0 || run.status !== 0) process.exitCode = 1;
if (!gr.exact || !gr.identity_holds || g.failed_requests > 0) process.exitCode = 1;

// The same gateway path over real HTTP, through `wrangler dev` (no test instrumentation).
const http = spawnSync(process.execPath, ["bench/http.mjs"], {
  cwd: new URL("..", import.meta.url),
  encoding: "utf8",
  stdio: ["ignore", "pipe", "inherit"],
});
process.stdout.write(http.stdout);
if (http.status !== 0) process.exitCode = 1;
