// POST /messages (the Anthropic Messages API) through @anthropic-ai/sdk, on the sandbox chat models and a
// mock Anthropic upstream: text, tools, thinking, errors in Anthropic's envelope, billing, records,
// cancellation, failover, header passthrough and presets made from a messages body.

import { env } from "cloudflare:test";
import Anthropic from "@anthropic-ai/sdk";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import thinkingStream from "./fixtures/anthropic/thinking.sse?raw";
import toolsStream from "./fixtures/anthropic/tools.sse?raw";
import { addByok, createAccount } from "./helpers/accounts";
import { post, type StreamedCall, streamed } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";
import { mockUpstream } from "./helpers/upstream";

const ANTHROPIC_BASE = "http://gateway.test/api";

let pending: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(pending.map((s) => s()));
  pending = [];
});

/** An Anthropic client on the in-process Worker; `settled()` waits for the records and settlements. */
function anthropic(opts: { apiKey?: string; authToken?: string }) {
  const calls: StreamedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const call = await streamed(new Request(input, init));
    calls.push(call);
    return call.res;
  };
  const settled = () => Promise.all(calls.map((c) => c.settled()));
  pending.push(settled);
  const client = new Anthropic({ ...opts, baseURL: ANTHROPIC_BASE, fetch, maxRetries: 0 });
  return { client, settled, calls };
}

const generation = async (id: string) =>
  (await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)))[0];

const hi: Anthropic.MessageParam[] = [{ role: "user", content: "Hello there gateway" }];

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** Raw frames of a streamed answer: `event:` names with their data. */
async function frames(res: Response): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  return (await res.text())
    .split("\n\n")
    .filter((f) => f.startsWith("event: "))
    .map((f) => {
      const [head, data] = f.split("\n");
      return { event: head!.slice(7), data: JSON.parse(data!.slice(6)) as Record<string, unknown> };
    });
}

const sse = (text: string) => () => new Response(text, { headers: { "Content-Type": "text/event-stream" } });

describe("POST /messages with @anthropic-ai/sdk", () => {
  it("messages.create: a message with text, usage and cost; billed as charged; recorded as messages", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled } = anthropic({ apiKey: acct.apiKey });
    const { data: message, response } = await client.messages
      .create({ model: "sandbox/chat-echo", max_tokens: 256, messages: hi })
      .withResponse();
    expect(response.headers.get("x-generation-id")).toBe(message.id);
    // The SDK's request id (from `request-id`) is the gateway's X-Request-Id.
    const requestId = (message as { _request_id?: string | null })._request_id;
    expect(requestId).toBe(response.headers.get("x-request-id"));
    expect(requestId).toBeTruthy();
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.model).toBe("sandbox/chat-echo");
    expect(message.stop_reason).toBe("end_turn");
    const text = message.content[0] as Anthropic.TextBlock;
    expect(text.type).toBe("text");
    expect(text.text).toContain("Hello there gateway");
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    const cost = (message.usage as unknown as { cost: number }).cost;
    expect(cost).toBeGreaterThan(0);
    await settled();
    const gen = await generation(message.id);
    expect(gen).toMatchObject({ status: "completed", model: "sandbox/chat-echo", apiType: "messages" });
    expect(gen!.costMicros).toBe(Math.round(cost * 1_000_000));
  });

  it("messages.stream (Bearer auth token): text deltas equal the created text; final usage cumulative", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = anthropic({ authToken: acct.apiKey });
    const whole = await client.messages.create({ model: "sandbox/chat-echo", max_tokens: 256, messages: hi });
    const stream = client.messages.stream({ model: "sandbox/chat-echo", max_tokens: 256, messages: hi });
    let text = "";
    stream.on("text", (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    expect(text).toBe((whole.content[0] as Anthropic.TextBlock).text);
    expect(final.content).toEqual(whole.content);
    expect(final.stop_reason).toBe("end_turn");
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(final.usage.input_tokens).toBe(whole.usage.input_tokens);
  });

  it("stop_sequences: the message ends stop_sequence naming the one matched, created and streamed", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = anthropic({ apiKey: acct.apiKey });
    const params = {
      model: "sandbox/chat-echo",
      max_tokens: 256,
      messages: hi,
      stop_sequences: ["zzz", "echoes"],
    };
    const created = await client.messages.create(params);
    expect(created.stop_reason).toBe("stop_sequence");
    expect(created.stop_sequence).toBe("echoes");
    expect((created.content[0] as Anthropic.TextBlock).text).not.toContain("echoes");
    const streamedMessage = await client.messages.stream(params).finalMessage();
    expect(streamedMessage.stop_reason).toBe("stop_sequence");
    expect(streamedMessage.stop_sequence).toBe("echoes");
    // A stop sequence the answer never meets: it ends its own way.
    const natural = await client.messages.create({ ...params, stop_sequences: ["zzz"] });
    expect(natural.stop_reason).toBe("end_turn");
    expect(natural.stop_sequence).toBeNull();
  });

  it("tools: tool_use blocks whose input_json_delta pieces parse to the input; a tool_result turn answers", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = anthropic({ apiKey: acct.apiKey });
    const created = await client.messages.create({
      model: "sandbox/chat-tools",
      max_tokens: 256,
      messages: hi,
      tools: [weather],
    });
    expect(created.stop_reason).toBe("tool_use");
    const use = created.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    expect(use.name).toBe("get_weather");
    expect(use.input).toHaveProperty("city");

    const stream = client.messages.stream({
      model: "sandbox/chat-tools",
      max_tokens: 256,
      messages: hi,
      tools: [weather],
    });
    const pieces: string[] = [];
    stream.on("inputJson", (partial) => {
      pieces.push(partial);
    });
    const final = await stream.finalMessage();
    expect(pieces.length).toBeGreaterThan(1);
    const streamedUse = final.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    expect(JSON.parse(pieces.join(""))).toEqual(streamedUse.input);
    expect(streamedUse).toEqual(use);

    const answer = await client.messages.create({
      model: "sandbox/chat-tools",
      max_tokens: 256,
      tools: [weather],
      messages: [
        ...hi,
        { role: "assistant", content: created.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny, 21 C" }] },
      ],
    });
    expect((answer.content[0] as Anthropic.TextBlock).text).toContain("get_weather returned sunny, 21 C");
  });

  it("thinking on the sandbox reasoning model: a thinking block before the text, streamed and not", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client } = anthropic({ apiKey: acct.apiKey });
    const params = {
      model: "sandbox/chat-reasoning",
      max_tokens: 2048,
      thinking: { type: "enabled" as const, budget_tokens: 1024 },
      messages: hi,
    };
    const created = await client.messages.create(params);
    expect(created.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    let thinking = "";
    const stream = client.messages.stream(params);
    stream.on("thinking", (delta) => {
      thinking += delta;
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual(created.content);
    expect(thinking).toBe((created.content[0] as Anthropic.ThinkingBlock).thinking);
    expect(thinking).toContain("The user wrote");
  });

  it("x-api-key and Bearer both authenticate; neither -> 401 in Anthropic's envelope", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = { model: "sandbox/chat-echo", max_tokens: 64, messages: hi };
    const byKey = await streamed(
      new Request(`${ANTHROPIC_BASE}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": acct.apiKey, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    pending.push(byKey.settled);
    expect(byKey.res.status).toBe(200);
    const none = await streamed(
      new Request(`${ANTHROPIC_BASE}/v1/messages`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    expect(none.res.status).toBe(401);
    expect(await none.res.json()).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });
  });
});

describe("errors in Anthropic's envelope", () => {
  it("400 for mcp_servers: the gateway connects to none, and an answer without their tools would pass for one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 16,
      messages: hi,
      mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "x" }],
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.message).toContain("mcp_servers is not supported");
  });

  it("400 (max_tokens missing) names the field; the client raises BadRequestError", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/messages", acct.apiKey, { model: "sandbox/chat-echo", messages: hi });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("max_tokens");
    const { client } = anthropic({ apiKey: acct.apiKey });
    const refused = client.messages.create({ model: "sandbox/chat-echo", max_tokens: 64, messages: [] });
    await expect(refused).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    // An error names the request too, as Anthropic's do.
    expect(
      ((await refused.catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>).requestID,
    ).toMatch(/\S{8,}/);
  });

  it("413 for a body past the bounds is request_too_large, as Anthropic types it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 16,
      messages: hi,
      // More JSON values than any route takes, far under the byte limit.
      stop_sequences: Array.from({ length: 100_001 }, () => "x"),
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { type: string; error: { type: string } };
    expect(body).toMatchObject({ type: "error", error: { type: "request_too_large" } });
  });

  it("401 for an unknown key: AuthenticationError", async () => {
    const { client } = anthropic({ apiKey: `sk-gw-v1-${"0".repeat(64)}` });
    const err = await client.messages
      .create({ model: "sandbox/chat-echo", max_tokens: 64, messages: hi })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });
  });

  it("402 without credits: billing_error", async () => {
    const acct = await createAccount();
    const { res } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 64,
      messages: hi,
    });
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "billing_error" } });
  });

  it("429 from the provider: rate_limit_error; RateLimitError in the client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-429",
      max_tokens: 64,
      messages: hi,
    });
    expect(res.status).toBe(429);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    const { client } = anthropic({ apiKey: acct.apiKey });
    await expect(
      client.messages.create({ model: "sandbox/chat-429", max_tokens: 64, messages: hi }),
    ).rejects.toBeInstanceOf(Anthropic.RateLimitError);
  });

  it("an error after the first byte is an `event: error` the client raises as an APIError", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { client, settled, calls } = anthropic({ apiKey: acct.apiKey });
    const stream = client.messages.stream({
      model: "sandbox/chat-error-after-3",
      max_tokens: 256,
      messages: hi,
    });
    let text = "";
    stream.on("text", (d) => {
      text += d;
    });
    const deltas: Array<{
      delta: { stop_reason: unknown };
      usage: { cost?: number; output_tokens: number };
    }> = [];
    stream.on("streamEvent", (e) => {
      if (e.type === "message_delta") deltas.push(e as unknown as (typeof deltas)[number]);
    });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: "error",
      error: { type: "api_error" },
    });
    expect(text.length).toBeGreaterThan(0);
    await settled();
    const gen = await generation(calls[0]!.res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "failed", apiType: "messages" });
    // Before the error, a message_delta without a stop reason said what the answer costs: the charge.
    expect(gen!.costMicros).toBeGreaterThan(0);
    expect(deltas).toHaveLength(1);
    expect(deltas[0]!.delta.stop_reason).toBeNull();
    expect(deltas[0]!.usage.output_tokens).toBe(
      (gen!.usage as { completion_tokens: number }).completion_tokens,
    );
    expect(deltas[0]!.usage.cost).toBeCloseTo(gen!.costMicros / 1e6, 9);
  });
});

describe("the stream on the wire", () => {
  it("every frame has its event line, in Anthropic's order; message_delta carries the cumulative usage", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 256,
      stream: true,
      messages: hi,
    });
    pending.push(settled);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const all = await frames(res);
    const names = all.map((f) => f.event);
    expect(names[0]).toBe("message_start");
    expect(names[1]).toBe("content_block_start");
    expect(names.slice(2, -3).every((n) => n === "content_block_delta")).toBe(true);
    expect(names.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    for (const f of all) expect(f.data.type).toBe(f.event);
    const start = all[0]!.data.message as { usage: Record<string, number> };
    expect(Object.keys(start.usage).sort()).toEqual([
      "cache_creation_input_tokens",
      "cache_read_input_tokens",
      "input_tokens",
      "output_tokens",
    ]);
    const delta = all.at(-2)!.data as { delta: { stop_reason: string }; usage: Record<string, number> };
    expect(delta.delta.stop_reason).toBe("end_turn");
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
    expect(delta.usage.input_tokens).toBeGreaterThan(0);
  });

  it("a client that leaves mid-stream: the generation is cancelled and billed for what was produced", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-echo",
      max_tokens: 1024,
      stream: true,
      messages: [{ role: "user", content: "word ".repeat(200) }],
      provider: { options: { sandbox: { pace_ms: 5 } } },
    });
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    await settled();
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled", apiType: "messages" });
    expect(gen!.costMicros).toBeGreaterThan(0);
  });

  it("debug.echo_upstream_body: one debug event per attempted provider, the failed attempt's first", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const sent = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-failover",
      stream: true,
      max_tokens: 20,
      debug: { echo_upstream_body: true },
      messages: hi,
    });
    const frames = (await sent.res.text()).split("\n\n").filter((f) => f.startsWith("event: debug\n"));
    await sent.settled();
    const bodies = frames.map(
      (f) =>
        (JSON.parse(f.split("\n")[1]!.slice(6)) as { debug: { echo_upstream_body: { model: string } } })
          .debug,
    );
    expect(bodies.map((b) => b.echo_upstream_body.model)).toEqual(["chat-always-503", "chat-echo"]);
  });

  it("fails over before the first byte: the attempt log shows the failed provider, then the one that served", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/messages", acct.apiKey, {
      model: "sandbox/chat-failover",
      max_tokens: 256,
      stream: true,
      messages: hi,
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-generation-id")!;
    expect((await frames(res)).at(-1)!.event).toBe("message_stop");
    await settled();
    const attempts = (await generation(id))!.attempts as Array<{ outcome: string }>;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.outcome).not.toBe("ok");
    expect(attempts[1]!.outcome).toBe("ok");
  });
});

describe("an Anthropic upstream", () => {
  it("gets the client's anthropic-beta and version, cache markers, and thinking blocks byte for byte", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const upstream = mockUpstream({ "POST api.anthropic.com/v1/messages": sse(thinkingStream) });
    try {
      const signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrk+/==\u2028odd";
      const thinking = 'Careful: "quotes", \\ backslashes, unicode \u00e9\u4e2d and a newline\n.';
      const { client, settled } = anthropic({ apiKey: acct.apiKey });
      const message = await client.messages.create(
        {
          model: "anthropic/claude-sonnet-4",
          max_tokens: 4096,
          thinking: { type: "enabled", budget_tokens: 2048 },
          system: [{ type: "text", text: "Be terse.", cache_control: { type: "ephemeral" } }],
          messages: [
            { role: "user", content: "Which is larger, 9.11 or 9.8?" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking, signature },
                { type: "redacted_thinking", data: "opaque-redacted==" },
                { type: "text", text: "Let me think." },
              ],
            },
            {
              role: "user",
              content: [{ type: "text", text: "And now?", cache_control: { type: "ephemeral" } }],
            },
          ],
        },
        { headers: { "anthropic-beta": "interleaved-thinking-2025-05-14" } },
      );
      await settled();
      const sent = upstream.requests[0]!;
      expect(sent.headers["anthropic-beta"]).toBe("interleaved-thinking-2025-05-14");
      expect(sent.headers["anthropic-version"]).toBe("2023-06-01");
      expect(sent.headers["x-api-key"]).toBe("sk-ant-user-key");
      const body = sent.body as {
        system: unknown;
        thinking: unknown;
        messages: Array<{ role: string; content: unknown }>;
      };
      expect(body.system).toEqual([
        { type: "text", text: "Be terse.", cache_control: { type: "ephemeral" } },
      ]);
      expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
      expect(body.messages[1]!.content).toEqual([
        { type: "thinking", thinking, signature },
        { type: "redacted_thinking", data: "opaque-redacted==" },
        { type: "text", text: "Let me think." },
      ]);
      expect(body.messages[2]!.content).toEqual([
        { type: "text", text: "And now?", cache_control: { type: "ephemeral" } },
      ]);
      // And back: the upstream's signed thinking reaches the client as it was sent.
      expect(message.content[0]).toEqual({
        type: "thinking",
        thinking: "Compare 9.11 and 9.8 digit by digit: tenths 1 < 8, so 9.8 is larger.",
        signature:
          "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/9g+Rmo1ln9ZkPjHGpb6HF0NB2A5lZ5RC5kx8Xqv3dfa+b4yvKVtMZMOSLf6yoQcU0U5GgKQ/r2jhmxP8A8EpNgXWwtZXCUlMtEmTrn3sKjBEBK2zw==",
      });
    } finally {
      upstream.restore();
    }
  });

  it("streams thinking with its signature_delta, and tool input split across input_json_delta", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const upstream = mockUpstream({ "POST api.anthropic.com/v1/messages": sse(thinkingStream) });
    try {
      const { client } = anthropic({ apiKey: acct.apiKey });
      let signature = "";
      const stream = client.messages.stream({
        model: "anthropic/claude-sonnet-4",
        max_tokens: 4096,
        thinking: { type: "enabled", budget_tokens: 2048 },
        messages: hi,
      });
      stream.on("signature", (s) => {
        signature = s;
      });
      const final = await stream.finalMessage();
      expect(signature).toMatch(/^EqQBCgIYAhIM/);
      expect(final.content.map((b) => b.type)).toEqual(["thinking", "text"]);
      expect((final.content[0] as Anthropic.ThinkingBlock).signature).toBe(signature);
      expect(final.usage).toMatchObject({ input_tokens: 58, output_tokens: 131 });
    } finally {
      upstream.restore();
    }
    const tools = mockUpstream({ "POST api.anthropic.com/v1/messages": sse(toolsStream) });
    try {
      const { client } = anthropic({ apiKey: acct.apiKey });
      const pieces: string[] = [];
      const stream = client.messages.stream({
        model: "anthropic/claude-sonnet-4",
        max_tokens: 1024,
        messages: hi,
        tools: [weather],
      });
      stream.on("inputJson", (p) => {
        pieces.push(p);
      });
      const final = await stream.finalMessage();
      expect(pieces.length).toBeGreaterThan(1);
      expect(final.stop_reason).toBe("tool_use");
      const uses = final.content.filter((b) => b.type === "tool_use") as Anthropic.ToolUseBlock[];
      expect(uses[0]).toMatchObject({ id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather" });
      expect(uses[0]!.input).toEqual({ city: "Paris" });
      const sent = tools.requests[0]!.body as { tools: Array<{ name: string; input_schema: unknown }> };
      expect(sent.tools[0]).toMatchObject({ name: "get_weather", input_schema: weather.input_schema });
    } finally {
      tools.restore();
    }
  });
});

describe("POST /presets/{slug}/messages", () => {
  it("@openrouter/sdk creates the preset from a messages body; /messages with `preset` sends it upstream", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const slug = `messages-preset-${crypto.randomUUID().slice(0, 8)}`;
    const created = await sdkFor(acct.managementKey).presets.createPresetsMessages({
      slug,
      messagesRequest: {
        model: "anthropic/claude-sonnet-4",
        maxTokens: 100,
        temperature: 0.25,
        stopSequences: ["END"],
        system: "You are the preset's assistant.",
        messages: [{ role: "user", content: "never stored" }],
      },
    });
    expect(created.data.slug).toBe(slug);
    expect(created.data.designatedVersion).toMatchObject({
      version: 1,
      systemPrompt: "You are the preset's assistant.",
    });
    expect(created.data.designatedVersion!.config).toEqual({
      model: "anthropic/claude-sonnet-4",
      max_tokens: 100,
      temperature: 0.25,
      stop: ["END"],
    });

    const upstream = mockUpstream({ "POST api.anthropic.com/v1/messages": sse(thinkingStream) });
    try {
      const { res, settled } = await post("/messages", acct.apiKey, {
        preset: slug,
        max_tokens: 300,
        messages: hi,
      });
      expect(res.status).toBe(200);
      await settled();
      expect(upstream.requests[0]!.body).toMatchObject({
        model: "claude-sonnet-4-20250514",
        max_tokens: 300,
        temperature: 0.25,
        stop_sequences: ["END"],
        system: [{ type: "text", text: "You are the preset's assistant." }],
        messages: [{ role: "user", content: "Hello there gateway" }],
      });
    } finally {
      upstream.restore();
    }
  });

  it("models and fallbacks together -> 400, nothing created", async () => {
    const acct = await createAccount();
    const slug = `messages-preset-${crypto.randomUUID().slice(0, 8)}`;
    const { res } = await post(`/presets/${slug}/messages`, acct.managementKey, {
      model: "sandbox/chat-echo",
      models: ["sandbox/chat-reasoning"],
      fallbacks: [{ model: "sandbox/chat-tools" }],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(400);
  });
});
