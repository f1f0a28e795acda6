// Gateway-path benchmark: POST /embeddings (sandbox model) with the ledger on vs off (and vs an object
// that answers at once), 64 concurrent on one key, each request in its own request context, then exact
// reconciliation of what the ledger charged.
import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
import { createAccount } from "../test/helpers/accounts";
import { alternate, closedLoop, failures, meanRps, onOff } from "./load.mjs";
import { settledStatus } from "./settled";

const CONCURRENCY = 64;
const REQUESTS_PER_PHASE = 1_500;

type Mode = "on" | "off" | "empty";

async function phase(mode: Mode, apiKey: string, costs: number[]) {
  let failed = 0;
  return closedLoop(CONCURRENCY, REQUESTS_PER_PHASE, async (i) => {
    const res = await SELF.fetch(`http://bench.local/gateway/${mode}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "sandbox/embed-small", input: `benchmark input number ${i}` }),
    });
    if (res.status !== 200) {
      if (failed++ === 0) console.log(`first failure (${mode}): ${res.status} ${await res.text()}`);
      else await res.arrayBuffer();
      return false;
    }
    const body = (await res.json()) as { usage: { cost?: number } };
    if (mode === "on") costs.push(Math.round((body.usage.cost ?? 0) * 1_000_000));
    return true;
  });
}

it("gateway path: ledger on vs off", async () => {
  const acct = await createAccount({ creditsUsd: 1_000 });
  const costs: number[] = [];
  const { off, empty, on } = await alternate<Mode>(["off", "empty", "on"], (mode) =>
    phase(mode, acct.apiKey, mode === "on" ? costs : []),
  );
  const status = await settledStatus(acct.accountId, [acct.apiKeyHash]);
  const expected = costs.reduce((a, b) => a + b, 0);
  const { purchased, spent, reserved, balance } = status.account;
  const report = {
    concurrency: CONCURRENCY,
    requests_per_phase: REQUESTS_PER_PHASE,
    ...onOff(off, on),
    empty_object_rps: Math.round(meanRps(empty)),
    empty_ratio: onOff(off, empty).ratio,
    // Each measured phase, as this harness swings between runs.
    phases_rps: {
      off: off.map((p) => Math.round(p.rps)),
      empty: empty.map((p) => Math.round(p.rps)),
      on: on.map((p) => Math.round(p.rps)),
    },
    failed_requests: failures([...off, ...on, ...empty]),
    reconciliation: {
      admitted: costs.length,
      expected_spent_micros: expected,
      spent_micros: spent,
      key_usage_micros: status.keys[acct.apiKeyHash]!.usage.total,
      reserved_micros: reserved,
      identity_holds: purchased === balance + reserved + spent,
      exact: spent === expected && reserved === 0,
    },
  };
  console.log(`GATEWAY_BENCH_RESULT ${JSON.stringify(report)}`);
  expect(report.failed_requests).toBe(0);
  expect(report.reconciliation.exact).toBe(true);
});
