// Calls the Worker in-process, as a client would over HTTP, through any regional deployment.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import type { DataRegion } from "../../regions";
import app from "../../src/app";

export const BASE = "http://gateway.test/api/v1";

export interface CallOptions {
  method?: string;
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The regional deployment the request arrives through (default: global). */
  region?: DataRegion;
  /** Return as soon as the response starts, without waiting for work scheduled with waitUntil. */
  stream?: boolean;
}

export async function send(request: Request, opts: Pick<CallOptions, "region" | "stream"> = {}) {
  const ctx = createExecutionContext();
  const response = await app.fetch(request, { ...env, REGION: opts.region ?? "global" }, ctx);
  if (!opts.stream) await waitOnExecutionContext(ctx);
  return response;
}

export function call(path: string, init: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.Authorization = `Bearer ${init.key}`;
  let body: BodyInit | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === "string" ? init.body : JSON.stringify(init.body);
    headers["Content-Type"] ??= "application/json";
  }
  return send(new Request(`${BASE}${path}`, { method: init.method ?? "GET", headers, body }), init);
}

/** A fetch that routes to the Worker, for SDK clients pointed at BASE. */
export function workerFetch(region?: DataRegion): typeof fetch {
  return (input, init) => send(new Request(input, init), { region });
}

/** Reads an error envelope and checks its invariant: error.code equals the HTTP status. */
export async function errorOf(
  res: Response,
): Promise<{ code: number; message: string; metadata?: Record<string, unknown> }> {
  const body = (await res.json()) as {
    error: { code: number; message: string; metadata?: Record<string, unknown> };
  };
  if (body.error?.code !== res.status) {
    throw new Error(`envelope code ${body.error?.code} does not match status ${res.status}`);
  }
  return body.error;
}
