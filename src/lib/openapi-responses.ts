// The one declaration of the statuses and headers the gateway's shared layers can answer on any
// operation (auth, region ingress, abuse limiter, body rules, the inference pipeline), and the
// response headers every answer carries. Routes get them through `apiRoute` (lib/openapi.ts).
import type { RouteConfig } from "@hono/zod-openapi";
import { ErrorEnvelopeSchema } from "../schemas/common";

/** What an operation has, beyond its route config, that decides which errors it can answer. */
export interface OperationTraits {
  /** Calls a provider through the inference pipeline: admission, failover and upstream errors. */
  inference?: boolean;
  /** Statuses only this operation answers (409 on a version conflict, 404 for a workspace a body names...). */
  also?: number[];
}

/**
 * Which layer answers which status. Every operation gets `every`; an operation behind an API key
 * gets `secured`; one with path parameters, a query, or a body gets those; inference gets the rest.
 */
export const SHARED_STATUSES = {
  /** 405 for the path's other methods (with `Allow`); 500 for an unexpected failure. */
  every: [405, 500],
  /** Missing or invalid key (401); region ingress refused by the key or a guardrail, or a management-only operation (403); the abuse limiter (429). */
  secured: [401, 403, 429],
  /** Invalid parameter (400); the resource it names is not found or is another account's (404). */
  params: [400, 404],
  /** Invalid query (400); a resource it names (workspace_id, id) is not found (404). */
  query: [400, 404],
  /** Not JSON or invalid (400); larger than the operation's limit (413). */
  body: [400, 413],
  /** Insufficient credits (402), a guardrail refusal (403), no model or route (404), the provider's errors mapped (408, 429, 502, 503, 524, 529). */
  inference: [400, 402, 403, 404, 408, 413, 429, 502, 503, 524, 529],
} as const;

const DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request: malformed JSON, a field that fails validation (named in the message), or a request the provider refused",
  401: "Missing, malformed, unknown, disabled or expired API key",
  402: "Insufficient credits for the worst-case cost of the request",
  403: "Refused: a management key is required, the data region is not allowed for the key or one of its guardrails, or a guardrail blocks the request",
  404: "Not found (or belongs to another account)",
  405: "Method not allowed on this path; `Allow` lists the methods it serves",
  408: "No provider answered in time (embeddings)",
  409: "Conflict with the resource's current state",
  413: "Request body larger than this operation accepts",
  429: "Rate limited: the key's abuse limit, the free-model limits, or every provider rate-limited the request",
  500: "Unexpected server error (logged with the request id)",
  502: "The provider returned an error",
  503: "No provider is available for the request, or the key's settings are being changed (retry after `Retry-After`)",
  524: "No provider answered in time",
  529: "The provider is overloaded",
};

/** Header components: registered once on the document, referenced from every response. */
export const HEADER_COMPONENTS = {
  RequestId: {
    description:
      "The request's id: the caller's well-formed `X-Request-Id`, else a new UUID; in every log line",
    schema: { type: "string" as const },
  },
  GenerationId: {
    description:
      "The generation record's id, for `GET /generation?id=`; on an error answer, when providers were tried (their attempts are on the record)",
    schema: { type: "string" as const },
  },
  ServerTiming: {
    description:
      "`gateway;dur=<ms>, upstream;dur=<ms>`: the gateway's own time and the time the provider took to answer",
    schema: { type: "string" as const },
  },
  RetryAfter: { description: "Seconds to wait before retrying", schema: { type: "integer" as const } },
  RateLimitLimit: { description: "Requests allowed in the window", schema: { type: "integer" as const } },
  RateLimitRemaining: { description: "Requests left in the window", schema: { type: "integer" as const } },
  RateLimitReset: {
    description: "When the window resets, Unix epoch milliseconds",
    schema: { type: "integer" as const },
  },
  Allow: { description: "The methods this path serves", schema: { type: "string" as const } },
};

type HeaderName = keyof typeof HEADER_COMPONENTS;
const ref = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });

const WIRE_NAMES: Record<HeaderName, string> = {
  RequestId: "X-Request-Id",
  GenerationId: "X-Generation-Id",
  ServerTiming: "Server-Timing",
  RetryAfter: "Retry-After",
  RateLimitLimit: "X-RateLimit-Limit",
  RateLimitRemaining: "X-RateLimit-Remaining",
  RateLimitReset: "X-RateLimit-Reset",
  Allow: "Allow",
};

const headers = (...names: HeaderName[]) => Object.fromEntries(names.map((n) => [WIRE_NAMES[n], ref(n)]));

/** Inference errors that can come after providers were tried: those answers name the generation record. */
const AFTER_ATTEMPTS = new Set([408, 429, 502, 503, 524, 529]);

function errorHeaders(status: number, inference = false) {
  const named = inference && AFTER_ATTEMPTS.has(status) ? headers("GenerationId") : {};
  if (status === 429)
    return {
      ...headers("RequestId", "RetryAfter", "RateLimitLimit", "RateLimitRemaining", "RateLimitReset"),
      ...named,
    };
  if (status === 405) return headers("RequestId", "Allow");
  if (status === 503) return { ...headers("RequestId", "RetryAfter"), ...named };
  return { ...headers("RequestId"), ...named };
}

/** Every POST, PUT and PATCH passes the JSON body rules (middleware/body.ts), a declared body or not. */
const takesBody = (route: RouteConfig) =>
  route.request?.body !== undefined || ["post", "put", "patch"].includes(route.method);

/** The error statuses an operation can answer: the shared ones its config implies, plus its own. */
export function statusesOf(route: RouteConfig, traits: OperationTraits = {}): number[] {
  const all = new Set<number>(SHARED_STATUSES.every);
  const add = (list: readonly number[]) => {
    for (const s of list) all.add(s);
  };
  if ((route.security?.length ?? 0) > 0) add(SHARED_STATUSES.secured);
  if (route.request?.params) add(SHARED_STATUSES.params);
  if (route.request?.query) add(SHARED_STATUSES.query);
  if (takesBody(route)) add(SHARED_STATUSES.body);
  if (traits.inference) add(SHARED_STATUSES.inference);
  add(traits.also ?? []);
  return [...all].sort((a, b) => a - b);
}

type Responses = RouteConfig["responses"];

/**
 * The route's own responses, each with the headers every answer carries (inference successes also
 * `X-Generation-Id` and `Server-Timing`), and the error responses of `statusesOf`.
 */
export function withSharedResponses(route: RouteConfig, traits: OperationTraits = {}): Responses {
  const out: Responses = {};
  for (const [status, response] of Object.entries(route.responses)) {
    const success = Number(status) < 300;
    // A route's own error response (another envelope, say) carries the same headers as a shared one.
    const extra = success
      ? traits.inference
        ? headers("RequestId", "GenerationId", "ServerTiming")
        : headers("RequestId")
      : errorHeaders(Number(status), traits.inference);
    const own = "headers" in response ? response.headers : undefined;
    out[status] = { ...response, headers: { ...extra, ...own } };
  }
  for (const status of statusesOf(route, traits)) {
    out[status] ??= {
      description: DESCRIPTIONS[status] ?? `Error ${status}`,
      headers: errorHeaders(status, traits.inference),
      content: { "application/json": { schema: ErrorEnvelopeSchema } },
    };
  }
  return out;
}
