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
/** The failure modes that answer at once: the upstream model id names the status. */
const ANSWERS = [
  { match: "always-503", status: 503, code: "service_unavailable", what: "always unavailable" },
  { match: "rate-limited-429", status: 429, code: "rate_limit_exceeded", what: "always rate limited" },
  { match: "overloaded-529", status: 529, code: "overloaded", what: "always overloaded" },
] as const;

export async function sandboxFailureMode(call: CallContext): Promise<void> {
  const id = call.endpoint.upstreamModel;
  const answer = ANSWERS.find((a) => id.includes(a.match));
  if (answer) {
    throw new UpstreamError({
      kind: "http",
      status: answer.status,
      providerCode: answer.code,
      retryAfterSeconds: answer.status === 429 ? SANDBOX_RETRY_AFTER_SECONDS : undefined,
      message: `Provider ${call.endpoint.provider} answered ${answer.status}: sandbox model ${answer.what}`,
    });
  }
  if (id.includes("never-answers")) {
    await new Promise<never>((_, reject) => {
      call.signal.addEventListener("abort", () => reject(call.signal.reason), { once: true });
    });
  }
}
