// A misconfigured BYOK_MASTER_KEYS (a version that is not a 32-byte key) on a deployment whose workspaces
// hold BYOK credentials: inference goes on with the next credential, and storing a key says why it cannot.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import app from "../src/app";
import { addByok, createAccount } from "./helpers/accounts";
import { BASE } from "./helpers/http";
import { mockUpstream } from "./helpers/upstream";

const BROKEN = JSON.stringify({ ...JSON.parse(env.BYOK_MASTER_KEYS!), "2": "c2hvcnQ=" });
const PROVIDER_KEYS = JSON.stringify({ openai: "sk-openai-platform" });
const OPENAI = "POST api.openai.com/v1/chat/completions";
const answer = [
  { choices: [{ index: 0, delta: { role: "assistant", content: "ok" }, finish_reason: "stop" }] },
  { choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
]
  .map(
    (c) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", ...c })}\n\n`,
  )
  .join("");

let restore: (() => void) | undefined;
afterEach(() => restore?.());

async function send(path: string, key: string, body: unknown, method = "POST") {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`${BASE}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
    { ...env, REGION: "global", PROVIDER_KEYS, BYOK_MASTER_KEYS: BROKEN },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

describe("BYOK_MASTER_KEYS misconfigured", () => {
  it("inference: the BYOK credential is refused and the platform key serves (no 500)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-own");
    const mock = mockUpstream({
      [OPENAI]: () => new Response(answer, { headers: { "Content-Type": "text/event-stream" } }),
    });
    restore = mock.restore;
    const res = await send("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    expect(mock.requests.map((r) => r.headers.authorization)).toEqual(["Bearer sk-openai-platform"]);
  });

  it("a BYOK-only credential: the request fails as for a key that does not open, not with a 500", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-own", { isByokOnly: true });
    const mock = mockUpstream({});
    restore = mock.restore;
    const res = await send("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(503);
    expect(mock.requests).toHaveLength(0);
  });

  it("storing a key: 503 naming the secret to correct, and nothing stored", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await send("/byok", acct.managementKey, { provider: "openai", key: "sk-new-key-1234" });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/BYOK_MASTER_KEYS/);
    const list = await send("/byok", acct.managementKey, undefined, "GET");
    expect(((await list.json()) as { data: unknown[] }).data).toHaveLength(0);
  });
});
