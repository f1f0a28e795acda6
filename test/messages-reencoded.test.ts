// The re-encoding path beside the passthrough: a chat completions client of an Anthropic upstream still gets
// the chat form, and another provider's reasoning interleaved with tool calls reaches a Messages client in
// the upstream's order (thinking -> tool_use -> thinking -> text), streamed and not.
import { describe, expect, it } from "vitest";
import interleaved from "./fixtures/anthropic/interleaved.sse?raw";
import { createAccount } from "./helpers/accounts";
import { ANTHROPIC_MESSAGES as ANTHROPIC, gatewayHarness, sse } from "./helpers/anthropic-gateway";
import { interleavedToolCalls, sameIndexToolCalls } from "./helpers/tool-call-streams";

const { upstream, post, anthropic } = gatewayHarness();
const GEMINI = "POST generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent";

describe("other clients of an Anthropic upstream", () => {
  it("chat completions still get the re-encoded answer, streamed and not, billed the same", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [ANTHROPIC]: sse(interleaved) });
    const body = {
      model: "anthropic/claude-sonnet-4",
      reasoning: { max_tokens: 2048 },
      messages: [{ role: "user", content: "Weather?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } } },
          },
        },
      ],
    };
    const request = (extra: Record<string, unknown>) =>
      post("/chat/completions", acct.apiKey, { ...body, ...extra });
    const whole = await request({});
    const completion = (await whole.res.json()) as {
      choices: Array<{ message: Record<string, unknown>; finish_reason: string }>;
      usage: { cost: number };
    };
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
    expect(completion.choices[0]!.message).toMatchObject({
      content: "Checking Paris for you.",
      reasoning:
        "The user wants the weather at the caf\u00e9; I should call the tool.While it runs, a short preface.",
      tool_calls: [{ id: "toolu_01A09q90qw90lq917835lq9", function: { arguments: '{"city": "Paris"}' } }],
    });
    expect(completion.usage.cost).toBe((150 + 75 + 30 + 3000) / 1e6);
    const streamedCall = await request({ stream: true });
    const text = await streamedCall.res.text();
    expect(text).not.toContain("event:");
    expect(text).toContain('"content":"Checking Paris"');
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });
});

describe("interleaved reasoning re-encoded from another provider", () => {
  const gemini = [
    { candidates: [{ content: { role: "model", parts: [{ text: "Need the weather.", thought: true }] } }] },
    {
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "CiQB" },
            ],
          },
        },
      ],
    },
    { candidates: [{ content: { role: "model", parts: [{ text: "Now a preface.", thought: true }] } }] },
    {
      candidates: [
        { content: { role: "model", parts: [{ text: "Checking Paris." }] }, finishReason: "STOP" },
      ],
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 9, thoughtsTokenCount: 6 },
    },
  ]
    .map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`)
    .join("");

  it("Gemini thoughts around a function call: thinking -> tool_use -> thinking -> text, streamed and not", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [GEMINI]: sse(gemini) });
    const { client } = anthropic(acct.apiKey);
    const request = {
      model: "google/gemini-2.5-flash",
      max_tokens: 4096,
      thinking: { type: "enabled" as const, budget_tokens: 2048 },
      tools: [
        {
          name: "get_weather",
          input_schema: { type: "object" as const, properties: { city: { type: "string" } } },
        },
      ],
      messages: [{ role: "user" as const, content: "Weather in Paris?" }],
    };
    const streamedMessage = await client.messages.stream(request).finalMessage();
    const created = await client.messages.create(request);
    const expected = [
      // Google's signatures are not Anthropic's: the thinking is shown unsigned.
      { type: "thinking", thinking: "Need the weather.", signature: "" },
      {
        type: "tool_use",
        id: expect.stringMatching(/^call_/),
        name: "get_weather",
        input: { city: "Paris" },
      },
      { type: "thinking", thinking: "Now a preface.", signature: "" },
      { type: "text", text: "Checking Paris." },
    ];
    expect(streamedMessage.content).toEqual(expected);
    expect(created.content).toEqual(expected);
    expect(created.stop_reason).toBe("tool_use");
  });
});

describe("parallel tool calls re-encoded from a chat completions upstream", () => {
  const OPENAI = "POST api.openai.com/v1/chat/completions";
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const tools = [
    {
      name: "get_weather",
      input_schema: { type: "object" as const, properties: { city: { type: "string" } } },
    },
    { name: "get_time", input_schema: { type: "object" as const, properties: { tz: { type: "string" } } } },
  ];

  it.each([
    ["heads first, then interleaved arguments", interleavedToolCalls],
    ["two calls under one index (Ollama)", sameIndexToolCalls],
  ])("%s: one tool_use block per call with its whole input, streamed and not", async (_name, calls) => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [OPENAI]: sse(calls(chunk)) });
    const { client } = anthropic(acct.apiKey);
    const request = {
      model: "openai/gpt-4.1-mini",
      max_tokens: 100,
      tools,
      messages: [{ role: "user" as const, content: "Weather and time in Paris?" }],
    };
    const expected = [
      { type: "tool_use", id: "call_a", name: "get_weather", input: { city: "Paris" } },
      { type: "tool_use", id: "call_b", name: "get_time", input: { tz: "UTC" } },
    ];
    expect((await client.messages.stream(request).finalMessage()).content).toEqual(expected);
    expect((await client.messages.create(request)).content).toEqual(expected);
  });
});

describe("output_config.effort", () => {
  const OPENAI = "POST api.openai.com/v1/chat/completions";
  const answer = `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [{ index: 0, delta: { role: "assistant", content: "ok" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;
  const ask = (model: string, extra: Record<string, unknown>) => ({
    model,
    max_tokens: 2000,
    messages: [{ role: "user", content: "hi" }],
    ...extra,
  });

  it("reaches an Anthropic upstream as sent, with or without thinking", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC]: sse(interleaved) });
    const plain = await post("/messages", acct.apiKey, {
      ...ask("anthropic/claude-sonnet-4", { output_config: { effort: "low" } }),
    });
    expect(plain.res.status).toBe(200);
    await plain.res.text();
    const thinking = await post("/messages", acct.apiKey, {
      ...ask("anthropic/claude-sonnet-4", {
        output_config: { effort: "max" },
        thinking: { type: "adaptive" },
      }),
    });
    await thinking.res.text();
    const [first, second] = mock.requests.map((r) => r.body as Record<string, unknown>);
    expect(first).toMatchObject({ output_config: { effort: "low" } });
    expect(first!.thinking).toBeUndefined();
    // Thinking on: the effort also sizes the thinking budget (max: 80% of max_tokens).
    expect(second).toMatchObject({
      output_config: { effort: "max" },
      thinking: { type: "enabled", budget_tokens: 1600 },
    });
  });

  it("is not sent to a Claude that does not reason (3.5 Haiku refuses it), nor is thinking", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC]: sse(interleaved) });
    const { res } = await post("/messages", acct.apiKey, {
      ...ask("anthropic/claude-3.5-haiku", {
        output_config: { effort: "high" },
        thinking: { type: "enabled", budget_tokens: 1024 },
      }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const sent = mock.requests[0]!.body as Record<string, unknown>;
    expect(sent).not.toHaveProperty("output_config");
    expect(sent).not.toHaveProperty("thinking");
  });

  it("is the reasoning effort of another provider when thinking is on, and nothing when it is off", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(answer) });
    for (const extra of [
      { output_config: { effort: "high" }, thinking: { type: "adaptive" } },
      { output_config: { effort: "high" } },
      { output_config: { effort: "high" }, thinking: { type: "disabled" } },
    ]) {
      const { res } = await post("/messages", acct.apiKey, ask("openai/gpt-5-mini", extra));
      expect(res.status).toBe(200);
      await res.text();
    }
    const sent = mock.requests.map((r) => (r.body as { reasoning_effort?: string }).reasoning_effort);
    expect(sent).toEqual(["high", undefined, undefined]);
    const unknown = await post(
      "/messages",
      acct.apiKey,
      ask("openai/gpt-4.1-mini", { output_config: { effort: "extreme" } }),
    );
    expect(unknown.res.status).toBe(400);
  });
});
