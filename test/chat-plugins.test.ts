// Plugins and transforms on chat: context compression (middle-out) and response healing run here; the
// plugins this gateway cannot run are refused rather than silently left out.
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { HEAL_MAX_CHARS, healedJson, middleOut } from "../src/inference/plugins";
import { estimatePromptTokens } from "../src/inference/prompt-estimate";
import type { ChatMessage } from "../src/providers/types";
import textStream from "./fixtures/openai/chat-text.sse?raw";
import { createAccount } from "./helpers/accounts";
import { gatewayHarness, sse } from "./helpers/anthropic-gateway";
import { BASE, errorOf } from "./helpers/http";

const { upstream, post, send } = gatewayHarness();
const OPENAI = "POST api.openai.com/v1/chat/completions";
const GROQ = "POST api.groq.com/openai/v1/chat/completions";
const hi = [{ role: "user", content: "Hello" }];

/** An OpenAI-style stream whose answer is `content`, in two chunks, with usage. */
const answering = (content: string) =>
  [
    {
      choices: [
        { index: 0, delta: { role: "assistant", content: content.slice(0, 5) }, finish_reason: null },
      ],
    },
    { choices: [{ index: 0, delta: { content: content.slice(5) }, finish_reason: "stop" }] },
    { choices: [], usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 } },
  ]
    .map(
      (chunk) =>
        `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", ...chunk })}\n\n`,
    )
    .join("")
    .concat("data: [DONE]\n\n");

describe("plugins this gateway cannot run", () => {
  it("are refused with a 400 naming them, before any upstream call; disabled ones are left out", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    for (const id of ["web", "fusion", "moderation", "auto-router", "file-parser"]) {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        plugins: [{ id }],
      });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toContain(`'${id}' plugin is not available`);
    }
    const transform = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      transforms: ["summarize"],
    });
    expect(transform.res.status).toBe(400);
    // Responses bodies name plugins too, and meet the same rule.
    const responses = await post("/responses", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "Hello",
      plugins: [{ id: "web" }],
    });
    expect(responses.res.status).toBe(400);
    expect(mock.requests).toHaveLength(0);

    const off = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      plugins: [{ id: "web", enabled: false }],
    });
    expect(off.res.status).toBe(200);
    await off.res.json();
    expect(mock.requests).toHaveLength(1);
  });
});

describe("middle-out", () => {
  const page = (n: number) => `${n} ${"lorem ipsum ".repeat(1700)}`; // about 6.8k estimated tokens
  /** A system prompt, a first question, 60 long turns with a tool call in the middle, and the question. */
  function longConversation() {
    const turns: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 60; i++) {
      if (i === 30) {
        turns.push({
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_mid", type: "function", function: { name: "lookup", arguments: "{}" } }],
        });
        turns.push({ role: "tool", tool_call_id: "call_mid", content: page(i) });
      } else turns.push({ role: i % 2 ? "assistant" : "user", content: page(i) });
    }
    return [
      { role: "system", content: "You are terse." },
      { role: "user", content: "First question" },
      ...turns,
      { role: "user", content: "And the last question?" },
    ];
  }

  it("drops turns from the middle until the conversation fits the model's window, its output cap kept free", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [GROQ]: sse(textStream) });
    const messages = longConversation();
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "meta-llama/llama-3.1-8b-instruct",
      messages,
      plugins: [{ id: "context-compression", engine: "middle-out" }],
    });
    expect(res.status).toBe(200);
    await res.json();
    const sent = (mock.requests[0]!.body as { messages: ChatMessage[] }).messages;
    expect(sent.length).toBeLessThan(messages.length);
    // Instructions, the first question and the last one stay, in order.
    expect(sent.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(sent.at(-1)).toEqual(messages.at(-1));
    // What was dropped is one run from the middle: the ends of the conversation are all there.
    const kept = new Set(sent.map((m) => JSON.stringify(m)));
    const dropped = messages.map((m, i) => (kept.has(JSON.stringify(m)) ? -1 : i)).filter((i) => i >= 0);
    expect(dropped.at(-1)! - dropped[0]! + 1).toBe(dropped.length);
    expect(dropped).toContain(32);
    // The tool call left with its result: no tool message without its call.
    expect(sent.some((m) => m.role === "tool")).toBe(false);
    // It fits Llama 3.1 8B's 131,072 tokens less Groq's 8,192-token output cap, by the estimate.
    expect(estimatePromptTokens(sent)).toBeLessThanOrEqual(131_072 - 8_192);
    expect(estimatePromptTokens(sent)).toBeGreaterThan(131_072 - 8_192 - 8_000);
  });

  it("runs for transforms: ['middle-out'] too, and not at all without either", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [GROQ]: sse(textStream) });
    const messages = longConversation();
    const model = "meta-llama/llama-3.1-8b-instruct";
    for (const extra of [{ transforms: ["middle-out"] }, {}]) {
      const { res } = await post("/chat/completions", acct.apiKey, { model, messages, ...extra });
      expect(res.status).toBe(200);
      await res.json();
    }
    const [compressed, whole] = mock.requests.map((r) => (r.body as { messages: unknown[] }).messages.length);
    expect(compressed).toBeLessThan(messages.length);
    expect(whole).toBe(messages.length);
  });

  it("leaves a conversation that fits as it is, and one that cannot fit as short as it gets", () => {
    const short: ChatMessage[] = [{ role: "user", content: "Hi" }];
    expect(middleOut(short, 1_000)).toBe(short);
    const two: ChatMessage[] = [
      { role: "user", content: "a".repeat(30_000) },
      { role: "user", content: "b".repeat(30_000) },
    ];
    expect(middleOut(two, 100)).toEqual(two);
  });
});

describe("response healing", () => {
  const fenced = '```json\n{"city": "Paris", "sunny": true,}\n```';

  it("repairs a malformed JSON answer of a JSON response_format (non-streamed), for the openai client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [OPENAI]: sse(answering(fenced)) });
    const client = new OpenAI({
      apiKey: acct.apiKey,
      baseURL: BASE,
      fetch: async (input, init) => (await send(new Request(input as string, init))).res,
    });
    const healed = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "Weather in Paris as JSON" }],
      response_format: { type: "json_object" },
      // @ts-expect-error: OpenRouter's field, which the openai client passes through
      plugins: [{ id: "response-healing" }],
    });
    expect(JSON.parse(healed.choices[0]!.message.content!)).toEqual({ city: "Paris", sunny: true });

    // Without the plugin the answer is the model's, as it wrote it.
    const raw = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "Weather in Paris as JSON" }],
      response_format: { type: "json_object" },
    });
    expect(raw.choices[0]!.message.content).toBe(fenced);
  });

  it("repairs the JSON answer of a responses request too (non-streamed), for the openai client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const client = new OpenAI({
      apiKey: acct.apiKey,
      baseURL: BASE,
      fetch: async (input, init) => (await send(new Request(input as string, init))).res,
    });
    // The sandbox answers JSON for a JSON format; 4 tokens cut it off mid-string.
    const ask = (plugins?: unknown) =>
      client.responses.create({
        model: "sandbox/chat-echo",
        input: "hello there friend of mine how are you",
        text: { format: { type: "json_object" } },
        max_output_tokens: 4,
        ...(plugins ? { plugins } : {}),
      });
    const raw = await ask();
    expect(() => JSON.parse(raw.output_text)).toThrow();
    const healed = await ask([{ id: "response-healing" }]);
    expect(JSON.parse(healed.output_text)).toEqual(expect.any(Object));
    expect(healed.output_text.startsWith(raw.output_text.slice(0, 5))).toBe(true);
  });

  it("leaves valid JSON, plain text formats and what cannot be repaired alone", () => {
    expect(healedJson('{"a": [1, 2]}')).toBe('{"a": [1, 2]}');
    expect(JSON.parse(healedJson("{'a': 1, 'b': [1, 2"))).toEqual({ a: 1, b: [1, 2] });
    expect(healedJson("")).toBe("");
  });

  it("repairs answers up to HEAL_MAX_CHARS only (jsonrepair's time grows faster than the text)", () => {
    // A cut-off answer just within the bound is repaired; one just past it is returned as it came.
    const cutOff = (chars: number) => `{"items": ["${"x".repeat(chars - 13)}"`;
    expect(cutOff(HEAL_MAX_CHARS)).toHaveLength(HEAL_MAX_CHARS);
    expect(JSON.parse(healedJson(cutOff(HEAL_MAX_CHARS))).items[0]).toHaveLength(HEAL_MAX_CHARS - 13);
    expect(healedJson(cutOff(HEAL_MAX_CHARS + 1))).toBe(cutOff(HEAL_MAX_CHARS + 1));
  });
});
