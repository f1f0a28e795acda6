// The sandbox's failure-mode models: upstream model ids that say what they do, for rehearsing failover offline.
import { UpstreamError } from "../errors";
import type { CallContext } from "../types";

/** Seconds the rate-limited sandbox model asks callers to wait. */
export const SANDBOX_RETRY_AFTER_SECONDS = 7;

/**
 * Throws (or never settles) when the endpoint's upstream model is a failure mode; returns otherwise.
 * - `*always-503*`: answers 503 Service Unavailable.
 * - `*rate-limited-429*`: answers 429 with Retry-After and provider code `rate_limit_exceeded`.
 * - `*overloaded-529*`: answers 529.
 * - `*never-answers*`: never answers; only the attempt deadline ends it.
 */
export async function sandboxFailureMode(call: CallContext): Promise<void> {
  const id = call.endpoint.upstreamModel;
  const provider = call.endpoint.provider;
  if (id.includes("always-503")) {
    throw new UpstreamError({
      kind: "http",
      status: 503,
      providerCode: "service_unavailable",
      message: `Provider ${provider} answered 503: sandbox model always unavailable`,
    });
  }
  if (id.includes("rate-limited-429")) {
    throw new UpstreamError({
      kind: "http",
      status: 429,
      providerCode: "rate_limit_exceeded",
      retryAfterSeconds: SANDBOX_RETRY_AFTER_SECONDS,
      message: `Provider ${provider} answered 429: sandbox model always rate limited`,
    });
  }
  if (id.includes("overloaded-529")) {
    throw new UpstreamError({
      kind: "http",
      status: 529,
      providerCode: "overloaded",
      message: `Provider ${provider} answered 529: sandbox model always overloaded`,
    });
  }
  if (id.includes("never-answers")) {
    await new Promise<never>((_, reject) => {
      call.signal.addEventListener("abort", () => reject(call.signal.reason), { once: true });
    });
  }
}
