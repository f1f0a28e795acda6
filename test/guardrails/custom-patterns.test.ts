// Custom filter patterns on RE2: patterns that backtrack catastrophically in JavaScript run in linear
// time, every match is found without rescanning, and a request's custom-filter work is capped (413).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ACCOUNT_FILTER_UNITS, FILTER_WINDOW_MS, filterTexts } from "../../src/guardrails/apply-filters";
import { COMPILE_CHARGE, type CustomPattern, customSpans } from "../../src/guardrails/custom-pattern";
import {
  applyContentFilters,
  CUSTOM_SCAN_BUDGET,
  compileCustomPattern,
  newScanBudget,
} from "../../src/guardrails/filters";
import type { AppliedFilter, EffectivePolicy } from "../../src/guardrails/policy";
import { ApiError } from "../../src/lib/errors";
import { createAccount, type TestAccount } from "../helpers/accounts";
import { call, errorOf } from "../helpers/http";

const custom = (pattern: string, action: AppliedFilter["action"], label = "[X]"): AppliedFilter => ({
  accountId: "a1",
  guardrailId: "g1",
  guardrailName: "Test guardrail",
  kind: "custom",
  match: pattern,
  action,
  label,
});

// A pattern of about 900 instructions, so some thousands of characters reach the budget.
const BIG = "(?:x[a-z]*){300}";
/** Characters of text BIG may scan for half the budget. */
const halfBudgetChars = () => Math.floor(CUSTOM_SCAN_BUDGET / compiled(BIG).cost / 2);

function compiled(pattern: string): CustomPattern {
  const verdict = compileCustomPattern(pattern);
  if (!verdict.ok) throw new Error(`${pattern} rejected: ${verdict.reason}`);
  return verdict.compiled;
}

// Each pattern with 10,000 characters a backtracking engine needs exponential time to reject, and the
// same run completed so that the pattern matches all of it. A catastrophic engine hangs past the test
// timeout; RE2 answers at once.
const CATASTROPHIC: Array<[pattern: string, miss: string, hit: string]> = [
  ["([a-z]|a)+!", "a".repeat(10_000), `${"a".repeat(10_000)}!`],
  ["(a|[ab])+$", `${"ab".repeat(5_000)}!`, "ab".repeat(5_000)],
  ["(\\p{L}|a)+$", `${"aé".repeat(5_000)}1`, "aé".repeat(5_000)],
  ["([0-9]|[0-5])+x", "0".repeat(10_000), `${"0".repeat(10_000)}x`],
  ["(ab|a[b-c])+$", `${"ab".repeat(5_000)}a`, `${"ab".repeat(4_999)}ac`],
  ["a\\d*\\d*\\d*\\d*x", `a${"1".repeat(10_000)}`, `a${"1".repeat(10_000)}x`],
  ["x+x+x+x+y", "x".repeat(10_000), `${"x".repeat(10_000)}y`],
];

describe("patterns that backtrack catastrophically in JavaScript", () => {
  it.each(CATASTROPHIC)("%s is accepted and decides 10,000 characters", (pattern, miss, hit) => {
    expect(compileCustomPattern(pattern).ok).toBe(true);
    expect(applyContentFilters([custom(pattern, "block")], miss).blockedBy).toBeUndefined();
    expect(applyContentFilters([custom(pattern, "block")], hit).blockedBy?.match).toBe(pattern);
    expect(applyContentFilters([custom(pattern, "redact")], `<${miss}>`).text).toBe(`<${miss}>`);
    // The hit is one match from its first character to its last.
    expect(applyContentFilters([custom(pattern, "redact")], `< ${hit}`).text).toBe("< [X]");
  });
});

describe("finding every match", () => {
  it("finds each of 5,000 matches without rescanning the text for each", () => {
    // Each search for `a.*b` looks for a b to the end of the text: once per match, that is quadratic.
    const text = "a".repeat(5_000);
    expect(applyContentFilters([custom("a.*b|a", "redact", "_")], text).text).toBe("_".repeat(5_000));
    // The work handed to RE2 (what the budget counts) grows with the text, not with its square.
    const pattern = compiled("a.*b|a");
    const budget = newScanBudget();
    expect(customSpans(pattern, text, budget, false)).toHaveLength(5_000);
    expect(CUSTOM_SCAN_BUDGET - budget.remaining).toBeLessThan(200 * text.length * pattern.cost);
  });

  it("finds a match that runs past the search window whole", () => {
    const verdict = applyContentFilters([custom("<[^>]*>", "redact")], `x <${"y".repeat(5_000)}> z`);
    expect(verdict.text).toBe("x [X] z");
  });

  it("finds what RE2 over the whole text and JavaScript's RegExp find, for matches of ordinary length", () => {
    // Each of these has one way to end a match from a given start, or matches under 64 characters,
    // so the windowed search owes the whole-text answer; texts run past the window to exercise it.
    const patterns = [
      "\\w+@x",
      "a+b",
      "[ab]*c",
      "\\d{2,}-",
      "\\p{L}+1",
      "\\w+-",
      "(a|b)c",
      "\\bx\\b",
      "(?<!a)b+",
      "[^ ]{1,20}!",
      "é+",
    ];
    const spansOf = (matches: Iterable<RegExpMatchArray>) =>
      [...matches].filter((m) => m[0].length > 0).map((m) => [m.index!, m.index! + m[0].length]);
    fc.assert(
      fc.property(
        fc.constantFrom(...patterns),
        fc.string({
          unit: fc.constantFrom("a", "b", "c", "1", "-", "@", "x", "!", " ", "é", "😀"),
          maxLength: 600,
        }),
        (pattern, text) => {
          const compiledPattern = compiled(pattern);
          const windowed = customSpans(compiledPattern, text, newScanBudget(), false);
          expect(windowed).toEqual(spansOf(compiledPattern.regex.matchAll(text)));
          expect(windowed).toEqual(spansOf(text.matchAll(new RegExp(pattern, "gu"))));
        },
      ),
    );
  });

  it("blocks on the first match without looking for the rest", () => {
    const pattern = compiled("a");
    const budget = newScanBudget();
    expect(customSpans(pattern, "xa".repeat(1_000), budget, true)).toEqual([[1, 2]]);
    const all = newScanBudget();
    expect(customSpans(pattern, "xa".repeat(1_000), all, false)).toHaveLength(1_000);
    expect(budget.remaining).toBeGreaterThan(all.remaining);
  });
});

describe("the scan budget", () => {
  it("stops a text that would cost more than the budget, before running it", () => {
    const filter = custom(BIG, "block");
    const text = "a".repeat(2 * halfBudgetChars() + 10);
    const verdict = applyContentFilters([filter], text);
    expect(verdict).toEqual({ text, overBudget: filter, flagged: [], redacted: [] });
    expect(applyContentFilters([filter], "a".repeat(halfBudgetChars())).overBudget).toBeUndefined();
  });

  it("charges compiling a pattern the isolate has not compiled yet, once", () => {
    const pattern = `order-${crypto.randomUUID()}`;
    const { cost } = compiled(pattern);
    const first = newScanBudget();
    applyContentFilters([custom(pattern, "block")], "no orders here", first);
    expect(CUSTOM_SCAN_BUDGET - first.remaining).toBe(cost * (COMPILE_CHARGE + "no orders here".length));
    const again = newScanBudget();
    applyContentFilters([custom(pattern, "block")], "no orders here", again);
    expect(CUSTOM_SCAN_BUDGET - again.remaining).toBe(cost * "no orders here".length);
  });

  it("charges a compile for every Unicode property it builds, which its program size does not show", () => {
    const props = ["L", "Lu", "Ll", "N", "Nd", "P", "S", "Z", "C", "M"];
    const pattern = `(?i)[${props.map((p) => `\\p{${p}}`).join("")}]q-${crypto.randomUUID()}`;
    const { cost } = compiled(pattern);
    const budget = newScanBudget();
    applyContentFilters([custom(pattern, "flag")], "x", budget);
    expect(CUSTOM_SCAN_BUDGET - budget.remaining).toBe(cost * (COMPILE_CHARGE + 1) + props.length * 2_000);
  });

  it("compiles a pattern once a request even when the isolate's cache cannot hold the key's patterns", () => {
    // 250 patterns, over the cache's 200: each text of the request meets every one of them again.
    const filters = Array.from({ length: 250 }, (_, i) =>
      custom(`cache-${i}-${crypto.randomUUID()}`, "flag"),
    );
    const texts = ["one", "two", "three", "four"];
    const chars = texts.join("").length;
    const costOf = (f: AppliedFilter) => compiled(f.match).cost;
    const budget = newScanBudget();
    for (const text of texts) applyContentFilters(filters, text, budget);
    // Every pattern compiled once (not once a text) and scanned over every text.
    const once = filters.reduce((n, f) => n + costOf(f) * (COMPILE_CHARGE + chars), 0);
    expect(CUSTOM_SCAN_BUDGET - budget.remaining).toBe(once);
    // The next request finds the 200 most recently used still compiled (one at a time out, not all).
    const next = newScanBudget();
    for (const text of texts) applyContentFilters(filters.slice(50), text, next);
    expect(CUSTOM_SCAN_BUDGET - next.remaining).toBe(
      filters.slice(50).reduce((n, f) => n + costOf(f) * chars, 0),
    );
  });

  it("stops the quadratic case once its searches add up to the budget", () => {
    // 40,000 matches, each searched in a window of its own: more than the budget allows.
    const verdict = applyContentFilters([custom("a.*b|a", "redact")], "a".repeat(40_000));
    expect(verdict.overBudget?.match).toBe("a.*b|a");
    expect(verdict.redacted).toEqual([]);
  });
});

describe("custom patterns through the API", () => {
  async function guardrailOnKey(acct: TestAccount, filters: unknown[]): Promise<string> {
    const created = await call("/guardrails", {
      method: "POST",
      key: acct.managementKey,
      body: { name: "Pattern policy", content_filters: filters },
    });
    expect(created.status).toBe(201);
    const { id } = ((await created.json()) as { data: { id: string } }).data;
    const assigned = await call(`/guardrails/${id}/assignments/keys`, {
      method: "POST",
      key: acct.managementKey,
      body: { key_hashes: [acct.apiKeyHash] },
    });
    expect(assigned.status).toBe(200);
    return id;
  }
  const embed = (acct: TestAccount, input: string | string[]) =>
    call("/embeddings", { method: "POST", key: acct.apiKey, body: { model: "sandbox/embed-small", input } });

  it("([a-z]|a)+! created through the API decides 33 and 10,000 letters", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const id = await guardrailOnKey(acct, [{ pattern: "([a-z]|a)+!", action: "block", label: "BANG" }]);
    expect((await embed(acct, "a".repeat(33))).status).toBe(200);
    expect((await embed(acct, "a".repeat(10_000))).status).toBe(200);
    const blocked = await embed(acct, `${"a".repeat(33)}!`);
    expect(blocked.status).toBe(403);
    const error = await errorOf(blocked);
    expect(error.message).toContain("'BANG'");
    expect(error.metadata).toMatchObject({ filter: "BANG", guardrail_id: id });
  });

  it.each([
    ["(a)\\1", "backreferences are not supported"],
    ["(?<word>\\w+) \\k<word>", "backreferences are not supported"],
    ["secret(?=:)", "lookahead assertions are not supported"],
    ["[a-z", "not a valid regular expression (missing closing ]"],
    ["(.*a){1000}", "pattern is too large"],
  ])("rejects %s on create and update with a 400 saying why", async (pattern, reason) => {
    const acct = await createAccount();
    const filters = [{ pattern, action: "block" }];
    const created = await call("/guardrails", {
      method: "POST",
      key: acct.managementKey,
      body: { name: "g", content_filters: filters },
    });
    expect(created.status).toBe(400);
    expect((await errorOf(created)).message).toContain(reason);

    const ok = await call("/guardrails", { method: "POST", key: acct.managementKey, body: { name: "g" } });
    const { id } = ((await ok.json()) as { data: { id: string } }).data;
    const patched = await call(`/guardrails/${id}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { content_filters: filters },
    });
    expect(patched.status).toBe(400);
    expect((await errorOf(patched)).message).toContain(reason);
  });

  it("answers 413 when the request's texts together exceed the budget, each alone within it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const id = await guardrailOnKey(acct, [{ pattern: BIG, action: "redact" }]);
    const half = "a".repeat(halfBudgetChars() + 10);
    expect((await embed(acct, half)).status).toBe(200);
    const res = await embed(acct, [half, half]);
    expect(res.status).toBe(413);
    const error = await errorOf(res);
    expect(error.message).toContain("Content too large to filter under the content filters");
    expect(error.metadata).toMatchObject({ guardrail_id: id, scan_budget: CUSTOM_SCAN_BUDGET });
  });

  it("meters an account's filtering work: past ten requests' worth in its window, 429 before scanning; others unaffected", () => {
    // Synchronous calls: workerd's clock stands still without I/O, so they all fall in one window.
    const policyOf = (accountId: string) =>
      ({ filters: [{ ...custom(BIG, "redact"), accountId }] }) as unknown as EffectivePolicy;
    const mine = policyOf(crypto.randomUUID());
    const half = "a".repeat(halfBudgetChars() + 10);
    const status = (policy: EffectivePolicy, texts: string[]) => {
      try {
        filterTexts(policy, texts);
        return { status: 200, headers: {} };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return { status: err.status, headers: err.headers ?? {} };
      }
    };
    // Each refused with 413 after a whole budget of scanning: never billed, so metered here.
    for (let i = 0; i < ACCOUNT_FILTER_UNITS / CUSTOM_SCAN_BUDGET; i++) {
      expect(status(mine, [half, half]).status).toBe(413);
    }
    const refused = status(mine, ["hello"]);
    expect(refused.status).toBe(429);
    const retry = Number((refused.headers as Record<string, string>)["Retry-After"]);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(FILTER_WINDOW_MS / 1000);
    expect(status(policyOf(crypto.randomUUID()), ["hello"]).status).toBe(200);
  }, 120_000);
});
