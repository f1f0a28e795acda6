// Gateway-path benchmark: POST /embeddings (sandbox model) with the ledger on vs off (and vs an object
// that answers at once), 64 concurrent on one key, each request in its own request context, then exact
// reconciliation of what the ledger charged.
import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
import { createAccount } from "../test/helpers/accounts";
import { meanRps, settledStatus } from "./settled";

const CONCURRENCY = 64;
const REQUESTS_PER_PHASE = 1_500;

async function phase(mode: "on" | "off" | "empty", apiKey: string, costs: number[]) {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS_PER_PHASE) {
        const i = next++;
        const res = await SELF.fetch(`http://bench.local/gateway/${mode}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
          body: JSON.stringify({ model: "sandbox/embed-small", input: `benchmark input number ${i}` }),
        });
        if (res.status !== 200) {
          if (failed++ === 0) console.log(`first failure (${mode}): ${res.status} ${await res.text()}`);
          else await res.arrayBuffer();
          continue;
        }
        const body = (await res.json()) as { usage: { cost?: number } };
        if (mode === "on") costs.push(Math.round((body.usage.cost ?? 0) * 1_000_000));
      }
    }),
  );
  return { rps: REQUESTS_PER_PHASE / ((performance.now() - started) / 1000), failed };
}

it("gateway path: ledger on vs off", async () => {
  const acct = await createAccount({ creditsUsd: 1_000 });
  const costs: number[] = [];
  await phase("off", acct.apiKey, []);
  await phase("on", acct.apiKey, costs);
  await phase("empty", acct.apiKey, []);
  const off = [];
  const on = [];
  const empty = [];
  for (let round = 0; round < 2; round++) {
    off.push(await phase("off", acct.apiKey, []));
    empty.push(await phase("empty", acct.apiKey, []));
    on.push(await phase("on", acct.apiKey, costs));
  }
  const status = await settledStatus(acct.accountId, [acct.apiKeyHash]);
  const mean = meanRps;
  const expected = costs.reduce((a, b) => a + b, 0);
  const { purchased, spent, reserved, balance } = status.account;
  const report = {
    concurrency: CONCURRENCY,
    requests_per_phase: REQUESTS_PER_PHASE,
    ledger_off_rps: Math.round(mean(off)),
    ledger_on_rps: Math.round(mean(on)),
    ratio: Number((mean(on) / mean(off)).toFixed(3)),
    empty_object_rps: Math.round(mean(empty)),
    empty_ratio: Number((mean(empty) / mean(off)).toFixed(3)),
    // Each measured phase, as this harness swings between runs.
    phases_rps: {
      off: off.map((p) => Math.round(p.rps)),
      empty: empty.map((p) => Math.round(p.rps)),
      on: on.map((p) => Math.round(p.rps)),
    },
    failed_requests: [...off, ...on, ...empty].reduce((s, x) => s + x.failed, 0),
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
