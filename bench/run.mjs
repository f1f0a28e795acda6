// `npm run bench`: runs the ledger benchmark inside workerd and prints its figures (on vs off, reconciliation).
import { spawnSync } from "node:child_process";

const run = spawnSync("npx", ["vitest", "run", "--config", "bench/vitest.config.ts"], {
  cwd: new URL("..", import.meta.url),
  encoding: "utf8",
  env: { ...process.env, FORCE_COLOR: "0" },
});
const line = `${run.stdout}\n${run.stderr}`.split("\n").find((l) => l.includes("BENCH_RESULT "));
if (!line) {
  process.stderr.write(run.stdout + run.stderr);
  process.exit(1);
}
const b = JSON.parse(line.slice(line.indexOf("BENCH_RESULT ") + "BENCH_RESULT ".length));
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
if (!r.exact || !r.identity_holds || b.failed_requests > 0 || run.status !== 0) process.exitCode = 1;
