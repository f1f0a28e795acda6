// POST /messages/count_tokens through @anthropic-ai/sdk's messages.countTokens: counted by a mock Anthropic
// upstream (BYOK key, headers and body checked), by the sandbox (equal to what /messages reports), or
// estimated for providers that cannot count; free; refused by policy, region and the abuse limiter like
// inference; errors in Anthropic's envelope.

import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import Anthropic from "@anthropic-ai/sdk";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import type { DataRegion } from "../regions";
import app from "../src/app";
import { getDb, tables } from "../src/db/client";
import { addByok, createAccount, defaultGuardrail } from "./helpers/accounts";
import { json, mockUpstream } from "./helpers/upstream";

interface Deployment {
  region?: DataRegion;
  limiter?: RateLimit;
}

/** An Anthropic client on the in-process Worker (waiting for its background work), through `deployment`. */
function anthropic(opts: { apiKey?: string; authToken?: string }, deployment: Deployment = {}) {
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(input, init),
      {
        ...env,
        REGION: deployment.region ?? "global",
        ...(deployment.limiter ? { ABUSE_LIMITER: deployment.limiter } : {}),
      },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    return res;
  };
  return new Anthropic({ ...opts, baseURL: "http://gateway.test/api", fetch, maxRetries: 0 });
}

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

/** Fails the test on any upstream call not listed (tests never reach the internet). */
function upstream(routes: Parameters<typeof mockUpstream>[0] = {}) {
  const mock = mockUpstream(routes);
  restore = mock.restore;
  return mock;
}

const generations = (keyHash: string) =>
  getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.keyHash, keyHash));

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const conversation: Anthropic.MessageParam[] = [
  { role: "user", content: "What is the weather like in Lisbon this afternoon?" },
  {
    role: "assistant",
    content: [{ type: "tool_use", id: "toolu_01", name: "get_weather", input: { city: "Lisbon" } }],
  },
  {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "Sunny, 24 degrees" }],
  },
];

describe("POST /messages/count_tokens on the sandbox", () => {
  it("counts what /messages then reports as input_tokens (system, tools and tool turns included)", async () => {
    upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    const client = anthropic({ apiKey: acct.apiKey });
    const params = {
      model: "sandbox/chat-tools",
      system: "You are a terse weather assistant.",
      tools: [weather],
      messages: conversation,
    };
    const counted = await client.messages.countTokens(params);
    const created = await client.messages.create({ ...params, max_tokens: 256 });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(counted.input_tokens).toBe(created.usage.input_tokens);
    // A longer prompt counts more.
    const longer = await client.messages.countTokens({
      ...params,
      system: `${params.system} Always answer in exactly one sentence, naming the city.`,
    });
    expect(longer.input_tokens).toBeGreaterThan(counted.input_tokens);
  });

  it("is free: an account without credits counts (while /messages is refused 402); nothing is recorded", async () => {
    upstream();
    const acct = await createAccount();
    const client = anthropic({ authToken: acct.apiKey });
    const params = { model: "sandbox/chat-echo", messages: conversation.slice(0, 1) };
    const counted = await client.messages.countTokens(params);
    expect(counted.input_tokens).toBeGreaterThan(0);
    await expect(client.messages.create({ ...params, max_tokens: 16 })).rejects.toMatchObject({
      status: 402,
    });
    expect(await generations(acct.apiKeyHash)).toHaveLength(0);
  });

  it("fails over before an answer: the flaky endpoint's 503, then the sandbox counts", async () => {
    upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    const client = anthropic({ apiKey: acct.apiKey });
    const messages = conversation.slice(0, 1);
    const viaFailover = await client.messages.countTokens({ model: "sandbox/chat-failover", messages });
    const direct = await client.messages.countTokens({ model: "sandbox/chat-echo", messages });
    expect(viaFailover.input_tokens).toBe(direct.input_tokens);
  });

  it("a rate-limited provider -> 429 rate_limit_error with Retry-After (RateLimitError)", async () => {
    upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    const client = anthropic({ apiKey: acct.apiKey });
    const err = await client.messages
      .countTokens({ model: "sandbox/chat-429", messages: conversation.slice(0, 1) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    const e = err as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e.headers?.get("retry-after")).toBe("7");
    expect((e.error as { error: { type: string } }).error.type).toBe("rate_limit_error");
  });
});

describe("an Anthropic upstream counts", () => {
  it("with the BYOK key, the client's version and beta flags, and the translated body without generation fields", async () => {
    const mock = upstream({
      "POST api.anthropic.com/v1/messages/count_tokens": () => json({ input_tokens: 1234 }),
    });
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const client = anthropic({ apiKey: acct.apiKey });
    const counted = await client.messages.countTokens(
      {
        model: "anthropic/claude-sonnet-4",
        system: [{ type: "text", text: "Be terse.", cache_control: { type: "ephemeral" } }],
        thinking: { type: "enabled", budget_tokens: 2048 },
        tools: [weather],
        tool_choice: { type: "auto" },
        messages: conversation,
      },
      { headers: { "anthropic-beta": "token-counting-2024-11-01" } },
    );
    expect(counted).toEqual({ input_tokens: 1234 });
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0]!;
    expect(sent.url).toBe("https://api.anthropic.com/v1/messages/count_tokens");
    expect(sent.headers["x-api-key"]).toBe("sk-ant-user-key");
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01");
    expect(sent.headers["anthropic-beta"]).toBe("token-counting-2024-11-01");
    const body = sent.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      ["messages", "model", "system", "thinking", "tool_choice", "tools"].sort(),
    );
    expect(body.model).toBe("claude-sonnet-4-20250514");
    expect(body.system).toEqual([{ type: "text", text: "Be terse.", cache_control: { type: "ephemeral" } }]);
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(body.tools).toEqual([weather]);
    expect((body.messages as unknown[]).length).toBe(3);
  });

  it("an upstream refusal of the request -> 400 invalid_request_error with its message, no failover", async () => {
    const mock = upstream({
      "POST api.anthropic.com/v1/messages/count_tokens": () =>
        json(
          { type: "error", error: { type: "invalid_request_error", message: "messages: too many images" } },
          400,
        ),
    });
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const err = await anthropic({ apiKey: acct.apiKey })
      .messages.countTokens({ model: "anthropic/claude-sonnet-4", messages: conversation.slice(0, 1) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as Error).message).toContain("too many images");
    expect((err as Error).message).not.toContain("sk-ant-user-key");
    expect(mock.requests).toHaveLength(1);
  });
});

describe("providers that cannot count", () => {
  it("are estimated by the gateway, erring high (above the sandbox's count), with no upstream call", async () => {
    const mock = upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "mistral", "mistral-user-key");
    const client = anthropic({ apiKey: acct.apiKey });
    const params = { system: "Answer briefly.", tools: [weather], messages: conversation };
    const estimated = await client.messages.countTokens({ model: "mistralai/mistral-small", ...params });
    const sandbox = await client.messages.countTokens({ model: "sandbox/chat-tools", ...params });
    expect(mock.requests).toHaveLength(0);
    expect(estimated.input_tokens).toBeGreaterThan(sandbox.input_tokens);
  });
});

describe("refusals in Anthropic's envelope", () => {
  it("400 for a body without messages, naming the field (BadRequestError); nothing is called", async () => {
    const mock = upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    const err = await anthropic({ apiKey: acct.apiKey })
      .messages.countTokens({ model: "sandbox/chat-echo" } as Anthropic.MessageCountTokensParams)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const e = err as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(e.message).toContain("body.messages");
    expect(mock.requests).toHaveLength(0);
  });

  it("401 for an unknown key or none (AuthenticationError)", async () => {
    const none = await app.fetch(
      new Request("http://gateway.test/api/v1/messages/count_tokens", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: "sandbox/chat-echo", messages: conversation.slice(0, 1) }),
      }),
      { ...env, REGION: "global" },
      createExecutionContext(),
    );
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    const err = await anthropic({ apiKey: `sk-gw-v1-${"0".repeat(64)}` })
      .messages.countTokens({ model: "sandbox/chat-echo", messages: conversation.slice(0, 1) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it("a model outside the guardrail's allowed_models -> 403 naming it (PermissionDeniedError); unknown model -> 404", async () => {
    const mock = upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    await defaultGuardrail(acct, { allowedModels: ["sandbox/chat-echo"] });
    const client = anthropic({ apiKey: acct.apiKey });
    const messages = conversation.slice(0, 1);
    const allowed = await client.messages.countTokens({ model: "sandbox/chat-echo", messages });
    expect(allowed.input_tokens).toBeGreaterThan(0);
    const refused = await client.messages
      .countTokens({ model: "sandbox/chat-tools", messages })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((refused as Error).message).toContain("'Team policy'");
    const unknown = await client.messages
      .countTokens({ model: "nobody/nothing", messages })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(mock.requests).toHaveLength(0);
  });

  it("a content filter that blocks -> 403 before any provider sees the text", async () => {
    const mock = upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    await defaultGuardrail(acct, {
      contentFilters: [{ pattern: "Lisbon", action: "block", label: "NO_CITIES" }],
    });
    const err = await anthropic({ apiKey: acct.apiKey })
      .messages.countTokens({ model: "anthropic/claude-sonnet-4", messages: conversation })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(mock.requests).toHaveLength(0);
  });

  it("through a deployment whose data region no endpoint serves -> 403; the abuse limiter -> 429", async () => {
    const mock = upstream();
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const params = { model: "anthropic/claude-sonnet-4", messages: conversation.slice(0, 1) };
    const europe = await anthropic({ apiKey: acct.apiKey }, { region: "europe" })
      .messages.countTokens(params)
      .catch((e: unknown) => e);
    expect(europe).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((europe as Error).message).toContain("data region");

    // Another key: the limiter is asked on a key's first request of a period (middleware/abuse.ts).
    const other = await createAccount({ creditsUsd: 5 });
    const limited = await anthropic(
      { apiKey: other.apiKey },
      { limiter: { limit: async () => ({ success: false }) } },
    )
      .messages.countTokens(params)
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    const headers = (limited as InstanceType<typeof Anthropic.RateLimitError>).headers;
    expect(headers?.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(headers?.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(mock.requests).toHaveLength(0);
  });
});
