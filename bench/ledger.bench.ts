// Ledger benchmark body: 64 concurrent on one key, ledger on vs off in the same run, then exact reconciliation.
import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { addCredits } from "../test/billing/fixtures";
import { COST_MICROS } from "./constants";
import worker from "./ledger-worker";
import { meanRps, settledStatus } from "./settled";

const CONCURRENCY = 64;
const REQUESTS_PER_PHASE = 2_000;
const ACCOUNT = `bench-${crypto.randomUUID()}`;

/**
 * `direct`: the 64 loops call the worker's fetch inside this test's one request context (the
 * original harness). `http`: each request goes through SELF.fetch and gets its own request context,
 * as requests over real HTTP do.
 */
async function phase(path: "/on" | "/off", via: "direct" | "http" = "direct") {
  let next = 0;
  let failed = 0;
  const ctx = createExecutionContext();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS_PER_PHASE) {
        next++;
        const req = new Request(`http://bench.local${path}?account=${ACCOUNT}`);
        const res = via === "http" ? await SELF.fetch(req) : await worker.fetch(req, env, ctx);
        if (res.status !== 200) failed++;
        await res.arrayBuffer();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await waitOnExecutionContext(ctx);
  return { rps: REQUESTS_PER_PHASE / seconds, failed };
}

it("ledger on vs off", async () => {
  await addCredits(ACCOUNT, 1_000);
  // Warm up both paths, then alternate so drift on a shared machine hits both alike.
  await phase("/off");
  await phase("/on");
  const off = [];
  const on = [];
  for (let round = 0; round < 2; round++) {
    off.push(await phase("/off"));
    on.push(await phase("/on"));
  }
  const httpOff = [];
  const httpOn = [];
  await phase("/off", "http");
  await phase("/on", "http");
  for (let round = 0; round < 2; round++) {
    httpOff.push(await phase("/off", "http"));
    httpOn.push(await phase("/on", "http"));
  }
  const mean = meanRps;
  const status = await settledStatus(ACCOUNT, ["bench-key"]);
  const admitted = 6 * REQUESTS_PER_PHASE;
  const { purchased, spent, reserved, balance } = status.account;
  const keyUsage = status.keys["bench-key"]!.usage.total;
  const report = {
    concurrency: CONCURRENCY,
    requests_per_phase: REQUESTS_PER_PHASE,
    ledger_off_rps: Math.round(mean(off)),
    ledger_on_rps: Math.round(mean(on)),
    ratio: Number((mean(on) / mean(off)).toFixed(3)),
    target_ratio: 0.75,
    http: {
      ledger_off_rps: Math.round(mean(httpOff)),
      ledger_on_rps: Math.round(mean(httpOn)),
      ratio: Number((mean(httpOn) / mean(httpOff)).toFixed(3)),
    },
    failed_requests: [...off, ...on, ...httpOff, ...httpOn].reduce((s, x) => s + x.failed, 0),
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
