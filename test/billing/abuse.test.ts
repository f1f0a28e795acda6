// Coarse abuse protection: the Workers Rate Limiting binding's verdict becomes a 429 with the limit headers.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import app from "../../src/app";
import { ABUSE_LIMIT, ABUSE_SAMPLE } from "../../src/middleware/abuse";
import wrangler from "../../wrangler.toml?raw";
import { createAccount } from "../helpers/accounts";
import { BASE, errorOf } from "../helpers/http";

async function fetchWithLimiter(apiKey: string, success: boolean, seen: string[]) {
  return fetchThrough(apiKey, {
    limit: async ({ key }) => {
      seen.push(key);
      return { success };
    },
  });
}

async function fetchThrough(apiKey: string, limiter: RateLimit, requestId?: string) {
  const ctx = createExecutionContext();
  const headers: Record<string, string> = { Authorization: `Bearer ${apiKey}` };
  if (requestId) headers["X-Request-Id"] = requestId;
  const req = new Request(`${BASE}/key`, { headers });
  const res = await app.fetch(req, { ...env, REGION: "global", ABUSE_LIMITER: limiter }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("abuse protection", () => {
  it("answers 429 with X-RateLimit-* and Retry-After when the binding refuses the key", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const seen: string[] = [];
    const res = await fetchWithLimiter(acct.apiKey, false, seen);
    expect(res.status).toBe(429);
    expect(res.headers.get("X-RateLimit-Limit")).toBe("6000");
    expect(res.headers.get("X-RateLimit-Remaining")).toBe("0");
    const reset = Number(res.headers.get("X-RateLimit-Reset"));
    expect(reset).toBeGreaterThan(Date.now());
    // Retry when the period ends: at most one period away.
    const retry = Number(res.headers.get("Retry-After"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(10);
    expect(Math.abs(retry * 1000 - (reset - Date.now()))).toBeLessThan(1500);
    expect((await errorOf(res)).message).toMatch(/exceeds reasonable usage/);
    // Counted per key hash, never the key itself.
    expect(seen).toEqual([acct.apiKeyHash]);
  });

  it("lets requests through, without rate-limit headers, when the binding allows them", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await fetchWithLimiter(acct.apiKey, true, []);
    expect(res.status).toBe(200);
    expect([...res.headers.keys()].filter((h) => h.startsWith("x-ratelimit"))).toEqual([]);
  });

  it("fails open with one structured warning when the binding throws", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const requestId = `req-${crypto.randomUUID()}`;
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const res = await fetchThrough(
        acct.apiKey,
        {
          limit: async () => {
            throw new Error("database is locked");
          },
        },
        requestId,
      );
      expect(res.status).toBe(200);
      expect(warn).toHaveBeenCalledTimes(1);
      const line = String(warn.mock.calls[0]![0]);
      expect(JSON.parse(line)).toMatchObject({
        level: "warn",
        request_id: requestId,
        error: "database is locked",
      });
      expect(line).not.toContain(acct.apiKey);
    } finally {
      warn.mockRestore();
    }
  });

  describe("sampling: one binding call stands for ABUSE_SAMPLE requests of a key in an isolate", () => {
    const counting = (verdicts: boolean[]) => {
      const calls: string[] = [];
      const limiter: RateLimit = {
        limit: async ({ key }) => {
          calls.push(key);
          return { success: verdicts[calls.length - 1] ?? true };
        },
      };
      return { calls, limiter };
    };

    it("asks the binding on the 1st, 21st and 41st request of a period, not on every request", async () => {
      const acct = await createAccount({ creditsUsd: 1 });
      const { calls, limiter } = counting([]);
      const now = vi.spyOn(Date, "now").mockReturnValue(Date.UTC(2026, 10, 23, 12, 0, 0, 500));
      try {
        for (let i = 0; i < 2 * ABUSE_SAMPLE + 5; i++) {
          expect((await fetchThrough(acct.apiKey, limiter)).status).toBe(200);
        }
      } finally {
        now.mockRestore();
      }
      expect(calls).toEqual([acct.apiKeyHash, acct.apiKeyHash, acct.apiKeyHash]);
    });

    it("refuses the rest of the period without asking again once refused, and asks anew next period", async () => {
      const acct = await createAccount({ creditsUsd: 1 });
      const { calls, limiter } = counting([true, false, true]);
      const start = Date.UTC(2026, 10, 23, 12, 0, 10, 0);
      const now = vi.spyOn(Date, "now").mockReturnValue(start);
      try {
        const statuses: number[] = [];
        for (let i = 0; i < ABUSE_SAMPLE + 3; i++)
          statuses.push((await fetchThrough(acct.apiKey, limiter)).status);
        expect(statuses.slice(0, ABUSE_SAMPLE)).toEqual(Array(ABUSE_SAMPLE).fill(200));
        expect(statuses.slice(ABUSE_SAMPLE)).toEqual([429, 429, 429]);
        expect(calls).toHaveLength(2);
        now.mockReturnValue(start + ABUSE_LIMIT.periodSeconds * 1000);
        expect((await fetchThrough(acct.apiKey, limiter)).status).toBe(200);
        expect(calls).toHaveLength(3);
      } finally {
        now.mockRestore();
      }
    });

    it("counts keys apart", async () => {
      const a = await createAccount({ creditsUsd: 1 });
      const b = await createAccount({ creditsUsd: 1 });
      const { calls, limiter } = counting([]);
      const now = vi.spyOn(Date, "now").mockReturnValue(Date.UTC(2026, 10, 23, 12, 0, 20, 0));
      try {
        for (let i = 0; i < 3; i++) {
          await fetchThrough(a.apiKey, limiter);
          await fetchThrough(b.apiKey, limiter);
        }
      } finally {
        now.mockRestore();
      }
      expect(calls).toEqual([a.apiKeyHash, b.apiKeyHash]);
    });

    it("wrangler.toml's binding limit is the callers' limit divided by the sample, in every region", () => {
      // The only rate-limit binding is ABUSE_LIMITER: the global one and one per regional environment.
      const limits = [...wrangler.matchAll(/simple = \{ limit = (\d+), period = (\d+) \}/g)];
      expect(limits).toHaveLength(3);
      for (const [, limit, period] of limits) {
        expect(Number(limit) * ABUSE_SAMPLE).toBe(ABUSE_LIMIT.requests);
        expect(Number(period)).toBe(ABUSE_LIMIT.periodSeconds);
      }
    });
  });
});
