// Coarse abuse (DDoS) protection per API key through the Workers Rate Limiting binding; exact limits live in the ledger.
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";

/** Mirrors wrangler.toml's ABUSE_LIMITER `simple` setting, for the headers of the 429. */
export const ABUSE_LIMIT = { requests: 6000, periodSeconds: 10 } as const;

/**
 * Counts every authenticated request against its key. The binding's counters are per Cloudflare
 * location and eventually consistent, so this only stops floods; it never replaces the ledger.
 * Without the binding (local tools that lack it) requests pass.
 */
export const abuseProtection = createMiddleware<AppEnv>(async (c, next) => {
  const limiter = c.env.ABUSE_LIMITER;
  if (limiter) {
    const { success } = await limiter.limit({ key: c.get("auth").key.hash });
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
