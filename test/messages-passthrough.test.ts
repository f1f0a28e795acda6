// Same-format passthrough: a Messages client served by an Anthropic upstream gets the upstream's own events
// (only the message id, the model and the gateway's cost rewritten), billed and recorded as on the
// re-encoding path, failed over, cancelled and cut as there; interleaved thinking keeps the upstream's order.
import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import errorStream from "./fixtures/anthropic/error-overloaded.sse?raw";
import interleaved from "./fixtures/anthropic/interleaved.sse?raw";
import { createAccount } from "./helpers/accounts";
import {
  ANTHROPIC_MESSAGES as ANTHROPIC,
  gatewayHarness,
  generation,
  sse,
} from "./helpers/anthropic-gateway";
import { sdkFor } from "./helpers/sdk";

const { upstream, post: postTo, anthropic } = gatewayHarness();
const post = (key: string, body: unknown) => postTo("/messages", key, body);

const weather: Anthropic.Tool = {
  name: "get_weather",
  input_schema: { type: "object", properties: { city: { type: "string" } } },
};
const params = {
  model: "anthropic/claude-sonnet-4",
  max_tokens: 4096,
  thinking: { type: "enabled" as const, budget_tokens: 2048 },
  tools: [weather],
  messages: [{ role: "user" as const, content: "Weather at the café in Paris?" }],
};

/** interleaved.sse costs: 50 input x 3 + 20 cache writes x 3.75 + 100 cache reads x 0.3 + 200 output x 15 micro-USD. */
const COST_MICROS = 150 + 75 + 30 + 3000;

/** What the client must receive for an upstream stream: every frame as sent, but the three rewrites. */
function rewritten(upstreamText: string, id: string, cost: number): string {
  return upstreamText
    .split("\n\n")
    .filter(Boolean)
    .map((f) => {
      const [head, line] = f.split("\n") as [string, string];
      const payload = JSON.parse(line.slice(6));
      if (head === "event: message_start") {
        payload.message = { ...payload.message, id, model: "anthropic/claude-sonnet-4" };
      } else if (head === "event: message_delta") {
        payload.usage = { ...payload.usage, cost, is_byok: false };
      } else return `${f}\n\n`;
      return `${head}\ndata: ${JSON.stringify(payload)}\n\n`;
    })
    .join("");
}

describe("an Anthropic upstream's stream passed through to a Messages client", () => {
  it("byte for byte but id, model and cost; the record and the ledger charge match its usage", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [ANTHROPIC]: sse(interleaved) });
    const { res, settled } = await post(acct.apiKey, { ...params, stream: true });
    const id = res.headers.get("x-generation-id")!;
    const text = await res.text();
    expect(text).toBe(rewritten(interleaved, id, COST_MICROS / 1e6));
    // Escapes as the upstream wrote them: the frames were not decoded and re-encoded.
    expect(text).toContain("caf\\u00e9");
    await settled();
    expect(await generation(id)).toMatchObject({
      status: "completed",
      apiType: "messages",
      provider: "anthropic",
      model: "anthropic/claude-sonnet-4",
      costMicros: COST_MICROS,
      usage: { prompt_tokens: 170, completion_tokens: 200, cached_tokens: 100, cache_write_tokens: 20 },
    });
    const credits = await sdkFor(acct.managementKey).credits.getCredits();
    expect(credits.data.totalUsage).toBeCloseTo(COST_MICROS / 1e6, 9);
  });

  it("messages.stream and messages.create: thinking -> tool_use -> thinking -> text in order, signed", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [ANTHROPIC]: sse(interleaved) });
    const { client } = anthropic(acct.apiKey);
    const signatures: string[] = [];
    const stream = client.messages.stream(params);
    stream.on("signature", (s) => {
      signatures.push(s);
    });
    const streamedMessage = await stream.finalMessage();
    const { data: created, response } = await client.messages.create(params).withResponse();
    const expected = [
      {
        type: "thinking",
        thinking: "The user wants the weather at the caf\u00e9; I should call the tool.",
        signature: "EuYBCkQYAiJAsig0nE/first+thinking/block==",
      },
      {
        type: "tool_use",
        id: "toolu_01A09q90qw90lq917835lq9",
        name: "get_weather",
        input: { city: "Paris" },
      },
      {
        type: "thinking",
        thinking: "While it runs, a short preface.",
        signature: "EuYBCkQYAiJAsig0nE/second+thinking/block==",
      },
      { type: "text", text: "Checking Paris for you." },
    ];
    expect(streamedMessage.content).toEqual(expected);
    expect(signatures).toEqual([expected[0]!.signature, expected[2]!.signature]);
    expect(created.content).toEqual(expected);
    expect(created).toMatchObject({
      id: response.headers.get("x-generation-id"),
      type: "message",
      role: "assistant",
      model: "anthropic/claude-sonnet-4",
      stop_reason: "tool_use",
      stop_sequence: null,
      // The upstream's usage object, every field kept, with the gateway's cost beside it.
      usage: {
        input_tokens: 50,
        cache_creation_input_tokens: 20,
        cache_read_input_tokens: 100,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 0 },
        output_tokens: 200,
        service_tier: "standard",
        cost: COST_MICROS / 1e6,
        is_byok: false,
      },
    });
    expect(streamedMessage.model).toBe("anthropic/claude-sonnet-4");
    expect(streamedMessage.id).toMatch(/^gen-/);
  });

  it("fails over before the first byte: the failed upstream's message_start never reaches the client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    let calls = 0;
    const mock = upstream({
      [ANTHROPIC]: () =>
        sse(
          calls++ === 0
            ? 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_failed","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}\n\nevent: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
            : interleaved,
        )(),
    });
    const { res, settled } = await post(acct.apiKey, {
      ...params,
      models: ["anthropic/claude-opus-4.1"],
      stream: true,
    });
    const id = res.headers.get("x-generation-id")!;
    const text = await res.text();
    expect(text).not.toContain("msg_failed");
    expect(text.match(/event: message_start/g)).toHaveLength(1);
    // Served by the fallback model: its slug in message_start, its price in the cost.
    expect(JSON.parse(text.split("\n")[1]!.slice(6)).message.model).toBe("anthropic/claude-opus-4.1");
    await settled();
    expect(mock.requests.map((r) => (r.body as { model: string }).model)).toEqual([
      "claude-sonnet-4-20250514",
      "claude-opus-4-1-20250805",
    ]);
    const gen = await generation(id);
    expect(gen.status).toBe("completed");
    const attempts = gen.attempts as Array<{ model: string; outcome: string }>;
    expect(attempts.map((a) => a.model)).toEqual(["anthropic/claude-sonnet-4", "anthropic/claude-opus-4.1"]);
    expect(attempts[0]!.outcome).not.toBe("ok");
    expect(attempts[1]!.outcome).toBe("ok");
  });

  it("a client that leaves mid-stream: the upstream body is cancelled, the generation settled as cancelled", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const head = interleaved.slice(0, interleaved.indexOf("event: content_block_stop"));
    let upstreamCancelled = false;
    upstream({
      [ANTHROPIC]: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(head));
            },
            cancel() {
              upstreamCancelled = true;
            },
          }),
          { headers: { "Content-Type": "text/event-stream" } },
        ),
    });
    const { res, settled } = await post(acct.apiKey, { ...params, stream: true });
    const id = res.headers.get("x-generation-id")!;
    const reader = res.body!.getReader();
    let seen = "";
    while (!seen.includes("signature_delta")) seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    await settled();
    expect(upstreamCancelled).toBe(true);
    const gen = await generation(id);
    expect(gen).toMatchObject({ status: "cancelled", apiType: "messages", error: "client disconnected" });
    // No usage came before the client left: the produced thinking and the prompt are billed as estimated.
    expect(gen.usage).toMatchObject({ estimated: 1 });
    expect(gen.costMicros).toBeGreaterThan(0);
  });

  it("an upstream error event mid-stream is the client's APIError; the text before it arrived as sent", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [ANTHROPIC]: sse(errorStream) });
    const { client, calls, settled } = anthropic(acct.apiKey);
    let text = "";
    const stream = client.messages.stream({ ...params, thinking: undefined, tools: undefined });
    stream.on("text", (d) => {
      text += d;
    });
    const deltas: Array<{ delta: { stop_reason: unknown }; usage: { cost?: number } }> = [];
    stream.on("streamEvent", (e) => {
      if (e.type === "message_delta") deltas.push(e as unknown as (typeof deltas)[number]);
    });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: "error",
      error: { type: "overloaded_error", message: expect.stringContaining("Overloaded") },
    });
    expect(text).toBe("Once upon a time");
    await settled();
    const gen = await generation(calls[0]!.res.headers.get("x-generation-id")!);
    expect(gen).toMatchObject({ status: "failed", apiType: "messages" });
    expect(gen.error).toMatch(/^529: /);
    // The upstream sent no message_delta: the gateway's, before the error, says what is charged.
    expect(deltas).toHaveLength(1);
    expect(deltas[0]!.delta.stop_reason).toBeNull();
    expect(gen.costMicros).toBeGreaterThan(0);
    expect(deltas[0]!.usage.cost).toBeCloseTo(gen.costMicros / 1e6, 9);
  });

  it("debug.echo_upstream_body: the debug event right after message_start, then the upstream's events", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [ANTHROPIC]: sse(interleaved) });
    const { res } = await post(acct.apiKey, { ...params, stream: true, debug: { echo_upstream_body: true } });
    const id = res.headers.get("x-generation-id")!;
    const frames = (await res.text()).split("\n\n").filter(Boolean);
    expect(frames[1]!.startsWith("event: debug\n")).toBe(true);
    const debug = JSON.parse(frames[1]!.split("\n")[1]!.slice(6));
    expect(debug.debug.echo_upstream_body).toMatchObject({
      model: "claude-sonnet-4-20250514",
      stream: true,
    });
    expect(`${[frames[0], ...frames.slice(2)].join("\n\n")}\n\n`).toBe(
      rewritten(interleaved, id, COST_MICROS / 1e6),
    );
  });
});
