// Gives every request an id (the caller's X-Request-Id when well-formed) and a trace, echoes the id on
// every response (streamed ones included), adds Server-Timing when a provider was called, and writes
// the request's one log line: at once, or for a stream when it ends.

import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../env";
import { type RequestTrace, serverTiming, writeRequestLog } from "../lib/request-log";

const WELL_FORMED = /^[A-Za-z0-9._:-]{8,128}$/;

export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const trace: RequestTrace = { start: Date.now() };
  const given = c.req.header("X-Request-Id");
  const id = given && WELL_FORMED.test(given) ? given : crypto.randomUUID();
  c.set("requestId", id);
  c.set("trace", trace);
  c.header("X-Request-Id", id);
  await next();

  const responseMs = Date.now() - trace.start;
  // A handler that returns its own Response (a stream) bypasses the headers set above.
  if (!c.res.headers.has("X-Request-Id")) setHeader(c, "X-Request-Id", id);
  if (trace.upstreamMs !== undefined)
    setHeader(c, "Server-Timing", serverTiming(responseMs, trace.upstreamMs));

  const write = () => writeRequestLog(factsOf(c, id, responseMs), trace);
  if (trace.ends) c.executionCtx.waitUntil(trace.ends.then(write, write));
  else write();
});

/** Sets a header on the response, copying it once when its headers are immutable (a fetched Response). */
export function setHeader(c: Context<AppEnv>, name: string, value: string) {
  try {
    c.res.headers.set(name, value);
  } catch {
    // Immutable headers (a fetched Response passed through): copy the response once.
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set(name, value);
  }
}

function factsOf(c: Context<AppEnv>, requestId: string, responseMs: number) {
  const auth = c.get("auth");
  const served = matchedRoutes(c).at(-1);
  return {
    requestId,
    region: c.env.REGION,
    method: c.req.method,
    route: served && served.method !== "ALL" ? served.path : null,
    status: c.res.status,
    keyHash: auth?.key.hash.slice(0, 12),
    account: auth?.account.id,
    responseMs,
  };
}
