// Streaming calls for media tests: the response is returned at once, and `settled()` waits for the
// work the Worker scheduled with waitUntil (which, for streamed speech, ends only once the body was read).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import app from "../../src/app";
import { BASE } from "./http";

export interface StreamedCall {
  res: Response;
  settled(): Promise<void>;
}

export async function streamed(request: Request): Promise<StreamedCall> {
  const ctx = createExecutionContext();
  const res = await app.fetch(request, { ...env, REGION: "global" }, ctx);
  return { res, settled: () => waitOnExecutionContext(ctx) };
}

/** A fetch for SDK clients that does not wait for waitUntil work before handing back the response. */
export function streamingFetch(): typeof fetch {
  return async (input, init) => (await streamed(new Request(input, init))).res;
}

export function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  return streamed(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
}
