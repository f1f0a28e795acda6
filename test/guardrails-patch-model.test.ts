// Property test of PATCH /guardrails/{id}: after any sequence of partial updates the guardrail equals a
// simple model (omitted fields kept, sent fields replaced, nulls cleared, enforce_zdr fills the gaps).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";

const ZDR = [
  "enforce_zdr_vendor_a",
  "enforce_zdr_vendor_b",
  "enforce_zdr_vendor_c",
  "enforce_zdr_vendor_d",
  "enforce_zdr_other",
];

const patchArb = fc.record(
  {
    name: fc.constantFrom("alpha", "beta", "gamma"),
    description: fc.constantFrom("one", "two", null),
    limit_usd: fc.constantFrom(0, 1.5, 100, null),
    reset_interval: fc.constantFrom("daily", "weekly", "monthly", null),
    include_byok_in_budgets: fc.boolean(),
    allowed_data_regions: fc.constantFrom(["global"], ["europe", "us"], null),
    ignored_providers: fc.constantFrom(["openai"], ["cohere", "sandbox"], null),
    content_filter_builtins: fc.constantFrom(
      [{ slug: "email", action: "redact", label: "<e>" }],
      [{ slug: "ssn", action: "block", label: "[SSN]" }],
      null,
    ),
    enforce_zdr: fc.constantFrom(true, false, null),
    enforce_zdr_vendor_a: fc.boolean(),
    enforce_zdr_other: fc.boolean(),
  },
  { requiredKeys: [] },
);

type State = Record<string, unknown>;

function applyModel(state: State, patch: Record<string, unknown>): State {
  const next = { ...state, ...patch };
  const zdr = patch.enforce_zdr;
  for (const field of ZDR) {
    if (patch[field] === undefined && typeof zdr === "boolean") next[field] = zdr;
  }
  return next;
}

describe("PATCH /guardrails/{id} model", () => {
  it("matches the model after any sequence of partial updates", async () => {
    const acct = await createAccount();
    await fc.assert(
      fc.asyncProperty(fc.array(patchArb, { minLength: 1, maxLength: 4 }), async (patches) => {
        const created = await call("/guardrails", {
          method: "POST",
          key: acct.managementKey,
          body: { name: "start" },
        });
        let model = ((await created.json()) as { data: State }).data;
        for (const patch of patches) {
          const res = await call(`/guardrails/${model.id}`, {
            method: "PATCH",
            key: acct.managementKey,
            body: patch,
          });
          expect(res.status).toBe(200);
          const { data } = (await res.json()) as { data: State };
          const changed = Object.keys(patch).length > 0;
          model = applyModel(model, patch);
          const { version, updated_at, ...rest } = data;
          const { version: v0, updated_at: u0, ...expected } = model;
          expect(rest).toEqual(expected);
          expect(version).toBe(changed ? (v0 as number) + 1 : v0);
          model = data;
        }
      }),
      { numRuns: 25 },
    );
  });
});
