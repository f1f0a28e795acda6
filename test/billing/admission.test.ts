// admit()/settle() inside the runtime: exact caps under concurrency, balance, budgets, BYOK, free-model limits.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admit, type Reservation, settle } from "../../src/billing/admission";
import { ApiError } from "../../src/lib/errors";
import { createAccount, createKey } from "../helpers/accounts";
import { call } from "../helpers/http";
import { addBudget, addCredits, authFor, outcome, request, setLedgerClock } from "./fixtures";

async function keyInfo(apiKey: string) {
  const res = await call("/key", { key: apiKey });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Record<string, unknown> }).data;
}

describe("admission under concurrency", () => {
  it("admits exactly floor(C/R) of 200 concurrent requests on one key; the rest get 402", async () => {
    const acct = await createAccount({ creditsUsd: 100 });
    const capUsd = 0.05; // C = 50_000 micros
    const reserve = 3_000; // R: floor(50_000 / 3_000) = 16
    const key = await createKey(acct, { limitUsd: capUsd, limitReset: "daily" });
    const auth = await authFor(key.hash);
    const results = await Promise.all(
      Array.from({ length: 200 }, () => outcome(admit(env, auth, request({ worstCaseMicros: reserve })))),
    );
    const admitted = results.filter((r): r is Reservation => !(r instanceof ApiError));
    const refused = results.filter((r): r is ApiError => r instanceof ApiError);
    expect(admitted).toHaveLength(16);
    expect(refused).toHaveLength(184);
    for (const err of refused) {
      expect(err.status).toBe(402);
      expect(err.message).toMatch(/Raise the key's limit or wait for its reset \(it resets at \d{4}-/);
    }
    expect((await keyInfo(key.key)).limit_remaining).toBeCloseTo(0.002, 6);

    // Settle with less than reserved, twice each (idempotent): spend stays within the cap.
    await Promise.all(admitted.map((r) => settle(env, r, { actualMicros: 2_500, isByok: false })));
    const again = await Promise.all(
      admitted.map((r) => settle(env, r, { actualMicros: 2_500, isByok: false })),
    );
    expect(again.every((s) => s.status === "duplicate")).toBe(true);
    const info = await keyInfo(key.key);
    expect(info.usage).toBeCloseTo(0.04, 6);
    expect(info.usage_daily).toBeCloseTo(0.04, 6);
    expect(info.limit_remaining).toBeCloseTo(0.01, 6);
  });

  it("a free-model burst of 5L admits exactly L in the minute; every 429 carries the rate-limit headers", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const fixed = Date.UTC(2031, 5, 10, 12, 0, 30);
    await setLedgerClock(acct.accountId, fixed);
    const auth = await authFor(acct.apiKeyHash);
    const burst = await Promise.all(
      Array.from({ length: 100 }, () =>
        outcome(
          admit(env, auth, request({ model: "sandbox/m:free", isFreeModel: true, worstCaseMicros: 0 })),
        ),
      ),
    );
    const refused = burst.filter((r): r is ApiError => r instanceof ApiError);
    expect(burst.length - refused.length).toBe(20);
    for (const err of refused) {
      expect(err.status).toBe(429);
      expect(err.headers).toEqual({
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": String(Date.UTC(2031, 5, 10, 12, 1, 0)),
        "Retry-After": "30",
      });
    }
    expect((await keyInfo(acct.apiKey)).free_model_daily_requests).toEqual({
      limit: 50,
      remaining: 30,
      used: 20,
    });

    // The next minute opens 20 more; the day's ceiling (50) then stops the rest with a day-long reset.
    await setLedgerClock(acct.accountId, fixed + 60_000);
    const second = await Promise.all(
      Array.from({ length: 40 }, () =>
        outcome(admit(env, auth, request({ isFreeModel: true, worstCaseMicros: 0 }))),
      ),
    );
    expect(second.filter((r) => !(r instanceof ApiError))).toHaveLength(20);
    await setLedgerClock(acct.accountId, fixed + 120_000);
    const third = await Promise.all(
      Array.from({ length: 20 }, () =>
        outcome(admit(env, auth, request({ isFreeModel: true, worstCaseMicros: 0 }))),
      ),
    );
    const dayRefusals = third.filter((r): r is ApiError => r instanceof ApiError);
    expect(third.length - dayRefusals.length).toBe(10);
    expect(dayRefusals[0]!.headers?.["X-RateLimit-Limit"]).toBe("50");
    expect(dayRefusals[0]!.headers?.["X-RateLimit-Reset"]).toBe(String(Date.UTC(2031, 5, 11)));
    // BYOK requests and exempt endpoints are not gated.
    await outcome(admit(env, auth, request({ isFreeModel: true, byok: true, worstCaseMicros: 0 }))).then(
      (r) => expect(r).not.toBeInstanceOf(ApiError),
    );
    await outcome(
      admit(env, auth, request({ isFreeModel: true, exemptFromFreeLimits: true, worstCaseMicros: 0 })),
    ).then((r) => expect(r).not.toBeInstanceOf(ApiError));
  });

  it("gives the higher daily ceiling from one credit below the tier threshold", async () => {
    const low = await createAccount({ creditsUsd: 8.99 });
    const high = await createAccount({ creditsUsd: 9 });
    expect((await keyInfo(low.apiKey)).free_model_daily_requests).toEqual({
      limit: 50,
      remaining: 50,
      used: 0,
    });
    expect((await keyInfo(high.apiKey)).free_model_daily_requests).toEqual({
      limit: 1000,
      remaining: 1000,
      used: 0,
    });
  });
});

describe("balance", () => {
  it("refuses every model, free ones included, once the balance is not above zero; a purchase is seen at once", async () => {
    const acct = await createAccount();
    const auth = await authFor(acct.apiKeyHash);
    for (const isFreeModel of [false, true]) {
      const err = await outcome(
        admit(env, auth, request({ isFreeModel, worstCaseMicros: isFreeModel ? 0 : 10 })),
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(402);
      expect((err as ApiError).message).toMatch(/Add credits/);
    }
    await addCredits(acct.accountId, 0.01);
    const r = await admit(env, auth, request({ worstCaseMicros: 10_000 }));
    // Overspend (the real cost exceeded the worst case) drives the balance negative...
    await settle(env, r, { actualMicros: 12_000, isByok: false });
    const free = await outcome(admit(env, auth, request({ isFreeModel: true, worstCaseMicros: 0 })));
    expect((free as ApiError).status).toBe(402);
    expect((free as ApiError).message).toMatch(/not above zero/);
    // ...while BYOK requests spend no credits and still pass.
    expect(await outcome(admit(env, auth, request({ byok: true })))).not.toBeInstanceOf(ApiError);
  });

  it("refuses a worst case larger than the balance, naming both amounts", async () => {
    const acct = await createAccount({ creditsUsd: 0.001 });
    const err = await outcome(
      admit(env, await authFor(acct.apiKeyHash), request({ worstCaseMicros: 2_000 })),
    );
    expect((err as ApiError).status).toBe(402);
    expect((err as ApiError).message).toContain("up to $0.002 but $0.001 is available");
  });
});

describe("BYOK in and out of caps and budgets", () => {
  it("counts BYOK spend against the key cap only with include_byok_in_limit", async () => {
    const acct = await createAccount({ creditsUsd: 10 });
    const out = await createKey(acct, { limitUsd: 0.001, includeByokInLimit: false });
    const into = await createKey(acct, { limitUsd: 0.001, includeByokInLimit: true });
    for (const k of [out, into]) {
      const auth = await authFor(k.hash);
      const r = await admit(env, auth, request({ byok: true, worstCaseMicros: 1_000 }));
      await settle(env, r, { actualMicros: 1_000, isByok: true });
    }
    const outAuth = await authFor(out.hash);
    const intoAuth = await authFor(into.hash);
    expect(await outcome(admit(env, outAuth, request({ worstCaseMicros: 1_000 })))).not.toBeInstanceOf(
      ApiError,
    );
    const refused = await outcome(admit(env, intoAuth, request({ worstCaseMicros: 1 })));
    expect((refused as ApiError).status).toBe(402);
    expect((refused as ApiError).message).toMatch(/it has no reset/);
    const info = await keyInfo(into.key);
    expect(info).toMatchObject({ byok_usage: 0.001, usage: 0, limit_remaining: 0 });
  });

  it("refuses with 403 naming the guardrail whose budget is spent; BYOK counts only with include_byok_in_budgets", async () => {
    const acct = await createAccount({ creditsUsd: 10 });
    const key = await createKey(acct);
    await addBudget(acct, key.hash, { name: "team-weekly", limitUsd: 0.002, reset: "weekly" });
    const auth = await authFor(key.hash);
    const first = await admit(env, auth, request({ worstCaseMicros: 2_000 }));
    const refused = await outcome(admit(env, auth, request({ worstCaseMicros: 1 })));
    expect((refused as ApiError).status).toBe(403);
    expect((refused as ApiError).message).toContain("Guardrail 'team-weekly' budget exhausted");
    // Not spent but short of a request's worst case: the refusal says so, and what would help.
    const other = await createKey(acct);
    await addBudget(acct, other.hash, { name: "small", limitUsd: 0.001, reset: "daily" });
    const short = await outcome(admit(env, await authFor(other.hash), request({ worstCaseMicros: 1_500 })));
    expect((short as ApiError).status).toBe(403);
    expect((short as ApiError).message).toMatch(
      /^Guardrail 'small' budget too low for this request: it may cost up to \$0\.0015 and \$0\.001 of the \$0\.001 limit remains \(it resets at .*\); lower its max_tokens or raise the budget\.$/,
    );
    // BYOK passes this budget (include_byok_in_budgets false)...
    expect(await outcome(admit(env, auth, request({ byok: true })))).not.toBeInstanceOf(ApiError);
    // ...releasing the reservation frees the budget again.
    await settle(env, first, { actualMicros: 0, isByok: false });
    expect(await outcome(admit(env, auth, request({ worstCaseMicros: 2_000 })))).not.toBeInstanceOf(ApiError);

    const strict = await createKey(acct);
    await addBudget(acct, strict.hash, { name: "byok-too", limitUsd: 0.001, includeByok: true });
    const strictAuth = await authFor(strict.hash);
    await admit(env, strictAuth, request({ byok: true, worstCaseMicros: 1_000 }));
    const byokRefused = await outcome(admit(env, strictAuth, request({ byok: true, worstCaseMicros: 1 })));
    expect((byokRefused as ApiError).status).toBe(403);
    expect((byokRefused as ApiError).metadata).toMatchObject({ guardrail_name: "byok-too" });
  });
});
