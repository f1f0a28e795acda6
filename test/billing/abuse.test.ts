// Coarse abuse protection: the Workers Rate Limiting binding's verdict becomes a 429 with the limit headers.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import app from "../../src/app";
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
    expect(Number(res.headers.get("X-RateLimit-Reset"))).toBeGreaterThan(Date.now());
    expect(res.headers.get("Retry-After")).toBe("10");
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
});
