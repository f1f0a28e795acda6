// What every fuzzed response must satisfy: no 5xx, the error envelope, no stack trace, no secret, no other tenant's resource.

import { API_PREFIX } from "../../src/app";
import { anthropicErrorType } from "../../src/lib/errors";
import type { Operation } from "./openapi";
import type { FuzzCase } from "./requests";

/** Statuses an inference route may answer when its upstream really failed. */
export const UPSTREAM_STATUSES = new Set([502, 503, 504, 524, 529]);

/** Text a stack trace or an internal error leaves behind. */
const INTERNALS: Array<[RegExp, string]> = [
  [/\n\s+at\s/, "stack frame"],
  [/\bat\s+[\w.$<>]+\s+\([^)]*:\d+:\d+\)/, "stack frame"],
  [/\bat\s+\S+\.(?:ts|js|mjs):\d+/, "stack frame"],
  [/\.(?:ts|js|mjs):\d+:\d+/, "source location"],
  [/node_modules|file:\/\/|\/src\/\w+\//, "source path"],
  [/\b(?:TypeError|ReferenceError|RangeError|SyntaxError|InternalError)\b/, "JavaScript error name"],
  [/D1_ERROR|SQLITE_\w+|no such (?:table|column)/i, "database error"],
];

export interface Observed {
  status: number;
  contentType: string;
  headers: string;
  text: string;
  /** An upstream call was made (and failed, fetch being mocked) or a failing sandbox model was named. */
  upstreamFailed: boolean;
}

/**
 * The request reached a provider that failed, or no provider of its model has a credential (tests
 * configure no platform keys; docs/routing.md: "credentials 503"). Either may answer an upstream
 * status, and may record the failed generation.
 */
export const upstreamReached = (r: Observed) =>
  r.upstreamFailed || r.text.includes("no credential is configured for provider");

const ACCOUNT_OF: Record<string, "a" | "b" | undefined> = {
  "management-a": "a",
  "regular-a": "a",
  "disabled-a": "a",
  "expired-a": "a",
  "management-b": "b",
  "regular-b": "b",
};

/** Paths whose errors use the Anthropic Messages envelope instead of the gateway's. */
const ANTHROPIC_PATHS = new Set(["/messages", "/messages/count_tokens"]);

/** The path a case's URL reaches once dot segments are resolved (`/presets/../messages` is `/messages`). */
const servedPath = (url: string) => {
  const path = new URL(`${API_PREFIX}${url}`, "http://fuzz.test/").pathname;
  return path.startsWith(API_PREFIX) ? path.slice(API_PREFIX.length) : path;
};

const templateOf = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);

/**
 * The operation a case actually reached: its own, unless dot segments in the URL lead to another
 * (`POST /presets/../chat/completions` is served by `POST /chat/completions`, and is judged by it).
 */
export function servedOperation(op: Operation, c: FuzzCase, operations: Operation[]): Operation {
  const path = servedPath(c.url);
  if (templateOf(op.path).test(path)) return op;
  return operations.find((o) => o.method === c.method && templateOf(o.path).test(path)) ?? op;
}

/** The first property the response breaks, or null (`op` is the operation that served the case). */
export function problemWith(op: Operation, c: FuzzCase, r: Observed, secrets: string[]): string | null {
  if (r.status >= 500 && !(op.inference && UPSTREAM_STATUSES.has(r.status) && upstreamReached(r))) {
    return `status ${r.status}${op.inference ? " without a failed upstream" : ""}`;
  }
  for (const secret of secrets) {
    if (r.text.includes(secret) || r.headers.includes(secret))
      return `a secret (${secret.slice(0, 12)}...) in the response`;
  }
  const caller = ACCOUNT_OF[c.caller];
  if (r.status < 300 && caller && c.target && caller !== c.target) {
    return `${c.caller} got ${r.status} on account ${c.target}'s resource`;
  }
  const other = caller === "a" ? "b" : "a";
  if (r.status < 300 && caller && c.mentions.includes(other)) {
    return `${c.caller} got ${r.status} for a body naming account ${other}'s resources`;
  }
  if (r.status < 400 || c.method === "HEAD") return null;
  if (!/^application\/json\b/i.test(r.contentType)) return `error with Content-Type '${r.contentType}'`;
  let body: {
    type?: unknown;
    error?: { code?: unknown; type?: unknown; message?: unknown; metadata?: unknown };
  };
  try {
    body = JSON.parse(r.text) as typeof body;
  } catch {
    return "error body is not JSON";
  }
  const error = body?.error;
  if (!error || typeof error !== "object") return "error body has no `error` object";
  if (ANTHROPIC_PATHS.has(servedPath(c.url))) {
    // Anthropic's envelope: `{type: "error", error: {type, message}}`, the type following the status.
    if (body.type !== "error") return "Anthropic error body without type 'error'";
    if (error.type !== anthropicErrorType(r.status))
      return `error.type ${JSON.stringify(error.type)} != ${anthropicErrorType(r.status)} for status ${r.status}`;
  } else if (error.code !== r.status) return `error.code ${JSON.stringify(error.code)} != status ${r.status}`;
  if (typeof error.message !== "string" || error.message.length === 0)
    return "error.message is not a non-empty string";
  const meta = error.metadata;
  if (meta !== undefined && meta !== null && (typeof meta !== "object" || Array.isArray(meta))) {
    return "error.metadata is not an object";
  }
  for (const [pattern, what] of INTERNALS) {
    if (pattern.test(r.text)) return `${what} in the error body`;
  }
  return null;
}
