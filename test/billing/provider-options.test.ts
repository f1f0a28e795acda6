// Provider options add provider-only fields; they never change what the gateway filtered, reserved or
// priced (a probe raised max_tokens from 1 to 64,000 and swapped the prompt through them, charging an
// account with $0.01 up to $0.96).
import { afterEach, describe, expect, it } from "vitest";
import { anthropicBody } from "../../src/providers/anthropic/request";
import { geminiBody } from "../../src/providers/google/request";
import { optionsOf, ownedOptionPaths } from "../../src/providers/options";
import type { ChatRequest } from "../../src/providers/types";
import { addByok, createAccount, createKey } from "../helpers/accounts";
import { call } from "../helpers/http";
import { chatCompletionBody, json, mockUpstream } from "../helpers/upstream";

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

const chatAnswer = () => json(chatCompletionBody(5));

const hi = [{ role: "user", content: "hi" }];

describe("provider options the gateway owns", () => {
  const refused: Array<[string, string, Record<string, unknown>, string]> = [
    [
      "chat: an output limit",
      "/chat/completions",
      {
        model: "openai/gpt-4.1-mini",
        max_tokens: 1,
        messages: hi,
        provider: { options: { openai: { max_tokens: 32_768 } } },
      },
      "provider.options.openai.max_tokens",
    ],
    [
      "chat: the prompt",
      "/chat/completions",
      {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        provider: { options: { openai: { messages: [{ role: "user", content: "x".repeat(120_000) }] } } },
      },
      "provider.options.openai.messages",
    ],
    [
      "chat: many answers",
      "/chat/completions",
      { model: "openai/gpt-4.1-mini", messages: hi, provider: { options: { openai: { n: 8 } } } },
      "provider.options.openai.n",
    ],
    [
      "chat: a dearer service tier",
      "/chat/completions",
      {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        provider: { options: { openai: { service_tier: "priority" } } },
      },
      "provider.options.openai.service_tier",
    ],
    [
      "chat: Gemini's output limit",
      "/chat/completions",
      {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        provider: { options: { google: { generationConfig: { maxOutputTokens: 65_000, temperature: 1 } } } },
      },
      "provider.options.google.generationConfig.maxOutputTokens",
    ],
    [
      "responses: an output limit",
      "/responses",
      {
        model: "openai/gpt-4.1-mini",
        input: "hi",
        max_output_tokens: 16,
        provider: { options: { openai: { max_output_tokens: 100_000 } } },
      },
      "max_output_tokens",
    ],
    [
      "messages: an output limit",
      "/messages",
      {
        model: "anthropic/claude-sonnet-4",
        max_tokens: 1,
        messages: hi,
        provider: { options: { anthropic: { max_tokens: 64_000 } } },
      },
      "max_tokens",
    ],
    [
      "messages: a billed server tool",
      "/messages",
      {
        model: "anthropic/claude-sonnet-4",
        max_tokens: 1,
        messages: hi,
        provider: {
          options: { anthropic: { tools: [{ type: "web_search_20250305", name: "web_search" }] } },
        },
      },
      "tools",
    ],
    [
      "speech: the input",
      "/audio/speech",
      {
        model: "sandbox/tts-mini",
        input: "hi",
        voice: "alloy",
        provider: { options: { sandbox: { input: "x".repeat(4_000) } } },
      },
      "provider.options.sandbox.input",
    ],
    [
      "videos: samples",
      "/videos",
      {
        model: "sandbox/video-mini",
        prompt: "a cat",
        provider: { options: { sandbox: { sampleCount: 4 } } },
      },
      "provider.options.sandbox.sampleCount",
    ],
    [
      "videos: a length",
      "/videos",
      {
        model: "sandbox/video-mini",
        prompt: "a cat",
        provider: { options: { sandbox: { durationSeconds: 60 } } },
      },
      "provider.options.sandbox.durationSeconds",
    ],
  ];

  it.each(refused)(
    "%s is refused with 400, nothing sent upstream or charged",
    async (_, path, body, named) => {
      const acct = await createAccount({ creditsUsd: 0.01 });
      await addByok(acct, "openai", "sk-user-openai-key");
      const upstream = mockUpstream({});
      restore = upstream.restore;
      const key = await createKey(acct);
      const res = await call(path, { method: "POST", key: key.key, body });
      expect(res.status).toBe(400);
      const text = await res.text();
      expect(text).toContain(named);
      expect(text).toContain("is set by the gateway");
      expect(upstream.requests).toHaveLength(0);
      const info = (await (await call("/key", { key: key.key })).json()) as {
        data: { usage: number; byok_usage: number };
      };
      expect(info.data.usage + info.data.byok_usage).toBe(0);
    },
  );

  it("passes provider-only fields, and a cheaper tier, under the request's own fields", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const upstream = mockUpstream({ "POST api.openai.com/v1/chat/completions": chatAnswer });
    restore = upstream.restore;
    const key = await createKey(acct);
    const res = await call("/chat/completions", {
      method: "POST",
      key: key.key,
      body: {
        model: "openai/gpt-4.1-mini",
        max_tokens: 3,
        messages: hi,
        provider: { options: { openai: { service_tier: "flex", prediction_extra: { a: 1 } } } },
      },
    });
    expect(res.status).toBe(200);
    const sent = upstream.requests[0]!.body as Record<string, unknown>;
    expect(sent).toMatchObject({ service_tier: "flex", prediction_extra: { a: 1 } });
    expect(sent.max_completion_tokens ?? sent.max_tokens).toBe(3);
    expect(sent.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("reads caller keys as keys only: `constructor` or `toString` is no owned nested object", () => {
    // `constructor: []` found Object.prototype.constructor and answered 500 (found by the fuzz suite).
    const odd = JSON.parse('{"constructor": [], "toString": {"x": 1}, "__proto__": {"maxOutputTokens": 1}}');
    expect(ownedOptionPaths(odd)).toEqual([]);
    expect(optionsOf(odd)).toBe(odd);
    expect(ownedOptionPaths({ generationConfig: Object.create({ maxOutputTokens: 9 }) })).toEqual([]);
  });

  it("accepts the Responses API's text settings (only a text string is the input)", async () => {
    expect(optionsOf({ text: { verbosity: "low" } })).toEqual({ text: { verbosity: "low" } });
    expect(optionsOf({ text: "read this instead", voice_settings: { stability: 1 } })).toEqual({
      voice_settings: { stability: 1 },
    });
  });
});

describe("options stored before the rule (a preset, a video job) still never reach the upstream", () => {
  const request: ChatRequest = {
    messages: [{ role: "user", content: "hi" }],
    maxTokens: 1,
    passthrough: {
      max_tokens: 64_000,
      messages: [{ role: "user", content: "swapped" }],
      n: 4,
      service_tier: "priority",
      top_k: 3,
      generationConfig: { maxOutputTokens: 65_000, candidateCount: 4, temperature: 0.7 },
    },
  };

  it("Anthropic: the request's limit and prompt win; provider-only fields pass", () => {
    const body = anthropicBody(request, "claude-sonnet-4") as unknown as Record<string, unknown>;
    expect(body.max_tokens).toBe(1);
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(body).not.toHaveProperty("n");
    expect(body).not.toHaveProperty("service_tier");
    expect(body.top_k).toBe(3);
  });

  it("Gemini: the output limit and candidate count stay the gateway's; other settings pass", () => {
    const body = geminiBody(request) as { generationConfig: Record<string, unknown> };
    expect(body.generationConfig.maxOutputTokens).toBe(1);
    expect(body.generationConfig).not.toHaveProperty("candidateCount");
    expect(body.generationConfig.temperature).toBe(0.7);
  });
});
