// The attempt runner: calls each planned endpoint in order under deadlines, fails over before the first
// byte, and maps the final failure to the documented statuses (429, 502, 503, 524/408, 529, or a 4xx).
import type { Modality } from "../catalog/types";
import { ApiError, type ErrorStatus } from "../lib/errors";
import { toUpstreamError, UpstreamError, withoutSecrets } from "../providers/errors";
import type { CallContext, UpstreamCredential } from "../providers/types";
import type { PlannedAttempt, RoutePlan } from "../routing/plan";
import { attemptDeadlineMs, DEFAULT_DEADLINES } from "./deadlines";
import { noteAttempt } from "./health";

/** One attempt as recorded on the generation (no secrets). */
export interface AttemptLog {
  endpoint_id: string;
  provider: string;
  model: string;
  byok: boolean;
  outcome: "ok" | UpstreamError["kind"];
  status?: number;
  provider_code?: string | number;
  duration_ms: number;
}

export type RunOutcome<T> =
  | { ok: true; value: T; attempt: PlannedAttempt; credential: UpstreamCredential; log: AttemptLog[] }
  | { ok: false; error: ApiError; log: AttemptLog[] };

export interface RunOptions<T> {
  modality: Modality;
  /** The secret for a planned credential; null refuses the attempt (no upstream call is made). */
  resolveCredential(attempt: PlannedAttempt): Promise<UpstreamCredential | null>;
  /** The adapter call. Must resolve only once the upstream answered successfully (before any byte is sent). */
  call(attempt: PlannedAttempt, ctx: CallContext): Promise<T>;
  /**
   * For an answer sent only once it is whole (a JSON chat answer): reads the rest of it after the first
   * byte, under the answer's own deadlines. A failure here fails over as one before the first byte does:
   * the client has been sent nothing.
   */
  complete?(value: T): Promise<T>;
  /** Status for "every attempt timed out": 408 for embeddings (as the spec lists), 524 otherwise. */
  timeoutStatus?: 408 | 524;
  /** Aborts everything (e.g. the client went away). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
  totalMs?: number;
}

/** What an adapter is told about the endpoint it calls. */
export function callEndpointOf(attempt: PlannedAttempt): CallContext["endpoint"] {
  return {
    id: attempt.endpoint.id,
    provider: attempt.endpoint.provider,
    upstreamModel: attempt.endpoint.upstreamModel,
    baseUrl: attempt.baseUrl,
    capabilities: attempt.endpoint.capabilities,
  };
}

const upstreamFetch: typeof fetch = (input, init) => globalThis.fetch(input, init);

async function oneAttempt<T>(
  attempt: PlannedAttempt,
  credential: UpstreamCredential,
  deadlineMs: number,
  opts: RunOptions<T>,
): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error("deadline"));
      reject(
        new UpstreamError({
          kind: "timeout",
          message: `Provider ${attempt.endpoint.provider} did not answer in time`,
        }),
      );
    }, deadlineMs);
  });
  const onAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  const ctx: CallContext = {
    endpoint: callEndpointOf(attempt),
    credential,
    signal: controller.signal,
    fetch: opts.fetch ?? upstreamFetch,
  };
  try {
    // The race cuts off adapters that ignore the signal; the abort cancels the fetch of those that don't.
    return await Promise.race([opts.call(attempt, ctx), expired]);
  } catch (err) {
    // Upstreams echo the key they were sent ("Incorrect API key provided: sk-..."): never pass it on.
    throw withoutSecrets(toUpstreamError(err, attempt.endpoint.provider, timedOut), [credential.apiKey]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

async function completed<T>(
  value: T,
  attempt: PlannedAttempt,
  credential: UpstreamCredential,
  complete: (value: T) => Promise<T>,
): Promise<T> {
  try {
    return await complete(value);
  } catch (err) {
    throw withoutSecrets(toUpstreamError(err, attempt.endpoint.provider, false), [credential.apiKey]);
  }
}

export async function runAttempts<T>(plan: RoutePlan, opts: RunOptions<T>): Promise<RunOutcome<T>> {
  const log: AttemptLog[] = [];
  const failures: Array<{ attempt: PlannedAttempt; error: UpstreamError }> = [];
  const started = Date.now();
  const totalMs = opts.totalMs ?? DEFAULT_DEADLINES[opts.modality].totalMs;

  for (const attempt of plan.attempts) {
    const remaining = totalMs - (Date.now() - started);
    if (remaining <= 0 || opts.signal?.aborted) break;
    const t0 = Date.now();
    const entry = {
      endpoint_id: attempt.endpoint.id,
      provider: attempt.endpoint.provider,
      model: attempt.model.slug,
      byok: attempt.credential.source === "byok",
    };
    const credential = await opts.resolveCredential(attempt);
    if (!credential) {
      const error = new UpstreamError({
        kind: "credential",
        message: `The credential for provider ${attempt.endpoint.provider} could not be used`,
      });
      failures.push({ attempt, error });
      log.push({ ...entry, outcome: "credential", duration_ms: 0 });
      continue;
    }
    try {
      const deadline = Math.min(attemptDeadlineMs(opts.modality, attempt.endpoint), remaining);
      let value = await oneAttempt(attempt, credential, deadline, opts);
      if (opts.complete) value = await completed(value, attempt, credential, opts.complete);
      const ok: AttemptLog = { ...entry, outcome: "ok", duration_ms: Date.now() - t0 };
      log.push(ok);
      noteAttempt(ok);
      return { ok: true, value, attempt, credential, log };
    } catch (err) {
      const error = err as UpstreamError;
      failures.push({ attempt, error });
      const failed: AttemptLog = {
        ...entry,
        outcome: error.kind,
        ...(error.status != null ? { status: error.status } : {}),
        ...(error.providerCode != null ? { provider_code: error.providerCode } : {}),
        duration_ms: Date.now() - t0,
      };
      log.push(failed);
      // A client that left cut the attempt short: that says nothing about the endpoint.
      if (!opts.signal?.aborted) noteAttempt(failed);
      if (!error.retryable) break;
    }
  }
  return { ok: false, error: finalError(failures, opts.timeoutStatus ?? 524), log };
}

type Category = "rate_limited" | "timeout" | "overloaded" | "unavailable" | "error";

function categoryOf(e: UpstreamError): Category {
  if (e.kind === "timeout") return "timeout";
  if (e.kind === "connection" || e.kind === "credential") return "unavailable";
  if (e.status === 429) return "rate_limited";
  if (e.status === 408) return "timeout";
  if (e.status === 529) return "overloaded";
  if (e.status === 503) return "unavailable";
  return "error";
}

/** One error for the whole request, from every attempt's failure. */
export function finalError(
  failures: Array<{ attempt: PlannedAttempt; error: UpstreamError }>,
  timeoutStatus: 408 | 524,
): ApiError {
  const last = failures.at(-1);
  if (!last) return new ApiError(timeoutStatus, "The request timed out before any provider could be tried");
  const provider = last.attempt.endpoint.provider;
  const meta = (e: UpstreamError, p = provider) => ({
    provider_name: p,
    ...(e.providerCode != null ? { provider_code: e.providerCode } : {}),
    attempts: failures.length,
  });

  if (!last.error.retryable) {
    // The upstream refused the request itself (bad input for it): say so instead of hiding it behind 502.
    const status: ErrorStatus = last.error.status === 413 ? 413 : 400;
    return new ApiError(status, last.error.message, meta(last.error));
  }

  const categories = failures.map((f) => categoryOf(f.error));
  const category = categories.every((c) => c === categories[0]) ? categories[0]! : categoryOf(last.error);
  switch (category) {
    case "rate_limited": {
      const hints = failures.map((f) => f.error.retryAfterSeconds);
      const headers =
        categories.every((c) => c === "rate_limited") && hints.every((h) => h != null)
          ? { "Retry-After": String(Math.max(...(hints as number[]))) }
          : undefined;
      const limited = [...failures].reverse().find((f) => categoryOf(f.error) === "rate_limited")!;
      return new ApiError(
        429,
        `Rate limited by the provider${failures.length > 1 ? "s" : ""}: ${limited.error.message}`,
        meta(limited.error, limited.attempt.endpoint.provider),
        headers,
      );
    }
    case "timeout":
      return new ApiError(
        timeoutStatus,
        `No provider answered in time: ${last.error.message}`,
        meta(last.error),
      );
    case "overloaded":
      return new ApiError(529, `The provider is overloaded: ${last.error.message}`, meta(last.error));
    case "unavailable":
      return new ApiError(503, `No provider is available: ${last.error.message}`, meta(last.error));
    default:
      return new ApiError(502, `The provider returned an error: ${last.error.message}`, meta(last.error));
  }
}
