// Coarse abuse (DDoS) protection per API key through the Workers Rate Limiting binding; exact limits live in the ledger.
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";

/** Mirrors wrangler.toml's ABUSE_LIMITER `simple` setting, for the headers of the 429. */
export const ABUSE_LIMIT = { requests: 6000, periodSeconds: 10 } as const;

/**
 * Counts every authenticated request against its key. The binding's counters are per Cloudflare
 * location and eventually consistent, so this only stops floods; it never replaces the ledger.
 * Without the binding (local tools that lack it), or when it throws, requests pass.
 */
export const abuseProtection = createMiddleware<AppEnv>(async (c, next) => {
  const limiter = c.env.ABUSE_LIMITER;
  if (limiter) {
    let success = true;
    try {
      ({ success } = await limiter.limit({ key: c.get("auth").key.hash }));
    } catch (err) {
      // Fail open: a broken limiter (locally, "database is locked") must not turn requests into
      // 500s, and the ledger still enforces the exact limits.
      console.warn(
        JSON.stringify({
          level: "warn",
          message: "abuse limiter failed; request allowed",
          request_id: c.get("requestId"),
          error: err instanceof Error ? err.message : String(err),
        }),
      );
    }
    if (!success) {
      const period = ABUSE_LIMIT.periodSeconds * 1000;
      const reset = Math.ceil(Date.now() / period) * period;
      throw new ApiError(
        429,
        "Too many requests: this API key dramatically exceeds reasonable usage; slow down and retry later",
        { reason: "abuse_protection" },
        {
          "X-RateLimit-Limit": String(ABUSE_LIMIT.requests),
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": String(reset),
          "Retry-After": String(ABUSE_LIMIT.periodSeconds),
        },
      );
    }
  }
  await next();
});
