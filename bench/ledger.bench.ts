// Ledger benchmark body: 64 concurrent on one key, ledger on vs off in the same run, then exact reconciliation.
import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { addCredits } from "../test/billing/fixtures";
import { COST_MICROS } from "./constants";
import worker from "./ledger-worker";
import { alternate, closedLoop, failures, onOff } from "./load.mjs";
import { settledStatus } from "./settled";

const CONCURRENCY = 64;
const REQUESTS_PER_PHASE = 2_000;
const ACCOUNT = `bench-${crypto.randomUUID()}`;

/**
 * `direct`: the 64 loops call the worker's fetch inside this test's one request context (the
 * original harness). `http`: each request goes through SELF.fetch and gets its own request context,
 * as requests over real HTTP do.
 */
async function phase(path: "/on" | "/off", via: "direct" | "http" = "direct") {
  const ctx = createExecutionContext();
  const result = await closedLoop(CONCURRENCY, REQUESTS_PER_PHASE, async () => {
    const req = new Request(`http://bench.local${path}?account=${ACCOUNT}`);
    const res = via === "http" ? await SELF.fetch(req) : await worker.fetch(req, env, ctx);
    await res.arrayBuffer();
    return res.status === 200;
  });
  await waitOnExecutionContext(ctx);
  return result;
}

it("ledger on vs off", async () => {
  await addCredits(ACCOUNT, 1_000);
  const direct = await alternate(["/off", "/on"], (path) => phase(path));
  const http = await alternate(["/off", "/on"], (path) => phase(path, "http"));
  const status = await settledStatus(ACCOUNT, ["bench-key"]);
  const admitted = 6 * REQUESTS_PER_PHASE;
  const { purchased, spent, reserved, balance } = status.account;
  const keyUsage = status.keys["bench-key"]!.usage.total;
  const report = {
    concurrency: CONCURRENCY,
    requests_per_phase: REQUESTS_PER_PHASE,
    ...onOff(direct["/off"], direct["/on"]),
    target_ratio: 0.75,
    http: onOff(http["/off"], http["/on"]),
    failed_requests: failures([...direct["/off"], ...direct["/on"], ...http["/off"], ...http["/on"]]),
    reconciliation: {
      admitted,
      cost_micros_each: COST_MICROS,
      expected_spent_micros: admitted * COST_MICROS,
      spent_micros: spent,
      key_usage_micros: keyUsage,
      reserved_micros: reserved,
      purchased_micros: purchased,
      balance_micros: balance,
      identity_holds: purchased === balance + reserved + spent,
      exact: spent === admitted * COST_MICROS && keyUsage === spent && reserved === 0,
    },
  };
  console.log(`BENCH_RESULT ${JSON.stringify(report)}`);
  expect(report.reconciliation.exact).toBe(true);
});
