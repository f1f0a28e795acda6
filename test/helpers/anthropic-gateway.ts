// The gateway with platform provider keys, for tests of Messages clients on mock upstreams: calls and SDK
// clients whose scheduled work (records, settlements) is awaited and whose upstream mocks are restored
// after each test of the file that calls `gatewayHarness()`.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import Anthropic from "@anthropic-ai/sdk";
import { eq } from "drizzle-orm";
import { afterEach } from "vitest";
import app from "../../src/app";
import { getDb, tables } from "../../src/db/client";
import { BASE } from "./http";
import type { StreamedCall } from "./media";
import { mockUpstream, type Responder } from "./upstream";

export const ANTHROPIC_MESSAGES = "POST api.anthropic.com/v1/messages";
/** Platform keys, so the charge lands on the account's credits (BYOK would not show in total usage). */
const PROVIDER_KEYS = JSON.stringify({
  anthropic: "sk-ant-platform",
  "google-ai-studio": "g-platform",
  groq: "gsk-platform",
  openai: "sk-openai-platform",
  xai: "xai-platform",
});

export const sse = (text: string) => () =>
  new Response(text, { headers: { "Content-Type": "text/event-stream" } });

export const generation = async (id: string) =>
  (await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)))[0]!;

export function gatewayHarness() {
  let cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const step of cleanup) await step();
    cleanup = [];
  });

  const upstream = (routes: Record<string, Responder>) => {
    const mock = mockUpstream(routes);
    cleanup.push(mock.restore);
    return mock;
  };

  const send = async (request: Request): Promise<StreamedCall> => {
    const ctx = createExecutionContext();
    const res = await app.fetch(request, { ...env, REGION: "global", PROVIDER_KEYS }, ctx);
    const call = { res, settled: () => waitOnExecutionContext(ctx) };
    cleanup.unshift(call.settled);
    return call;
  };

  const post = (path: string, key: string, body: unknown) =>
    send(
      new Request(`${BASE}${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      }),
    );

  const anthropic = (apiKey: string) => {
    const calls: StreamedCall[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const call = await send(new Request(input, init));
      calls.push(call);
      return call.res;
    };
    const client = new Anthropic({ apiKey, baseURL: "http://gateway.test/api", fetch, maxRetries: 0 });
    return { client, calls, settled: () => Promise.all(calls.map((c) => c.settled())) };
  };

  return { upstream, send, post, anthropic };
}
