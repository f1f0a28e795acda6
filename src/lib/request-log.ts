// What one request did, gathered as it runs (the pipeline adds model, provider and timings), and the
// single log line written for it when it is over (for a stream, when the stream ends).

import { log } from "./log";
import { microsToUsd } from "./money";

export interface RequestTrace {
  /** Date.now() when the request arrived. */
  readonly start: number;
  model?: string;
  provider?: string;
  byok?: boolean;
  /** Time spent waiting on providers, every attempt included, until the served one answered. */
  upstreamMs?: number;
  costMicros?: number;
  /** Set when the answer failed after its status was sent (a stream cut off, a client that left). */
  errorType?: string;
  /** An unexpected failure's text and stack (the caller saw only a generic 500). */
  error?: string;
  stack?: string;
  /** A streamed answer: the line is written once this settles (with the cost known). */
  ends?: Promise<unknown>;
}

/** The fields of the line that identify the request and its caller; none of them is a secret. */
export interface RequestFacts {
  requestId: string;
  region: string;
  method: string;
  /** The route pattern that served the request (`/api/v1/keys/:hash`), or null when none did. */
  route: string | null;
  status: number;
  /** The first 12 hex digits of the API key's SHA-256: enough to find the key, useless to use it. */
  keyHash?: string;
  account?: string;
  /** Time until the response (its headers, for a stream) was ready. */
  responseMs: number;
}

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request",
  401: "unauthorized",
  402: "insufficient_credits",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "timeout",
  409: "conflict",
  413: "body_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  499: "cancelled",
  500: "internal",
  502: "upstream_error",
  503: "unavailable",
  524: "upstream_timeout",
  529: "upstream_overloaded",
};

export const errorTypeOf = (status: number): string | undefined =>
  status < 400 ? undefined : (ERROR_TYPES[status] ?? `http_${status}`);

/** `gateway;dur=<ms>, upstream;dur=<ms>` for a request that called a provider. */
export function serverTiming(responseMs: number, upstreamMs: number): string {
  return `gateway;dur=${Math.max(0, responseMs - upstreamMs)}, upstream;dur=${upstreamMs}`;
}

export function writeRequestLog(facts: RequestFacts, trace: RequestTrace): void {
  const upstream = trace.upstreamMs;
  log(facts.status >= 500 ? "error" : "info", {
    message: "request",
    request_id: facts.requestId,
    region: facts.region,
    method: facts.method,
    route: facts.route,
    status: facts.status,
    key_hash: facts.keyHash,
    account: facts.account,
    model: trace.model,
    provider: trace.provider,
    byok: trace.byok,
    upstream_ms: upstream,
    gateway_ms: upstream === undefined ? facts.responseMs : Math.max(0, facts.responseMs - upstream),
    duration_ms: Date.now() - trace.start,
    cost_usd: trace.costMicros === undefined ? undefined : microsToUsd(trace.costMicros),
    error_type: trace.errorType ?? errorTypeOf(facts.status),
    error: trace.error,
    stack: trace.stack,
  });
}
