// What each endpoint can take, as the catalog lists it. Sampling parameters: one an endpoint does not
// list is not sent to it (a strict upstream would refuse the whole request), and under
// `provider.require_parameters` such an endpoint is not tried at all. Media parts (images, audio,
// files): an endpoint whose inputs lack the kind is never tried, on every inference format.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { getCatalog } from "../src/catalog/cache";
import { findModel } from "../src/catalog/types";
import { fittedEffort, worstCaseMicros } from "../src/inference/chat";
import { openAiChatBody } from "../src/providers/openai-compatible/chat";
import anthropicText from "./fixtures/anthropic/text.sse?raw";
import anthropicThinking from "./fixtures/anthropic/thinking.sse?raw";
import geminiText from "./fixtures/google-ai-studio/chat-text.sse?raw";
import textStream from "./fixtures/openai/chat-text.sse?raw";
import responsesReasoningTools from "./fixtures/openai/responses-reasoning-tools.sse?raw";
import responsesStream from "./fixtures/openai/responses-text.sse?raw";
import { createAccount } from "./helpers/accounts";
import { ANTHROPIC_MESSAGES, gatewayHarness, generation, sse } from "./helpers/anthropic-gateway";
import { errorOf } from "./helpers/http";

const { upstream, post } = gatewayHarness();
const OPENAI = "POST api.openai.com/v1/chat/completions";
const OPENAI_RESPONSES = "POST api.openai.com/v1/responses";
const hi = [{ role: "user", content: "Hello" }];

describe("sampling parameters an endpoint does not list", () => {
  it("are left out of the upstream body; the ones it lists are sent as given", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      temperature: 0.3,
      seed: 7,
      stop: ["\n\n"],
      logit_bias: { "50256": -100 },
      // OpenAI answers 400 "Unrecognized request argument" to these two.
      top_k: 40,
      repetition_penalty: 1.1,
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
        .content,
    ).toContain("Hello");
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0]!.body as Record<string, unknown>;
    expect(sent).toMatchObject({ temperature: 0.3, seed: 7, stop: ["\n\n"], logit_bias: { "50256": -100 } });
    expect(sent).not.toHaveProperty("top_k");
    expect(sent).not.toHaveProperty("repetition_penalty");
  });

  it("rule the endpoint out under provider.require_parameters, naming the parameter", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      top_k: 40,
      provider: { require_parameters: true },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect((await errorOf(res)).message).toContain("top_k");
    expect(mock.requests).toHaveLength(0);

    // The same request with only parameters the endpoint lists is served.
    const { res: ok } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      temperature: 0.5,
      provider: { require_parameters: true },
    });
    expect(ok.status).toBe(200);
    await ok.json();
    expect(mock.requests).toHaveLength(1);
  });
});

describe("reasoning and output formats an endpoint does not list", () => {
  const schema = { type: "json_schema", json_schema: { name: "r", schema: { type: "object" } } };

  it("are left out for a model that has none (Claude 3.5, GPT-4.1), sent where the catalog lists them", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC_MESSAGES]: sse(anthropicText), [OPENAI]: sse(textStream) });
    const ask = async (model: string) => {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model,
        messages: hi,
        reasoning: { effort: "low" },
        response_format: schema,
      });
      expect(res.status, model).toBe(200);
      await res.json();
      return mock.requests.at(-1)!.body as Record<string, unknown>;
    };
    const haiku = await ask("anthropic/claude-3.5-haiku");
    expect(haiku).not.toHaveProperty("thinking");
    expect(haiku).not.toHaveProperty("output_config");
    const gpt = await ask("openai/gpt-4.1-mini");
    expect(gpt).not.toHaveProperty("reasoning_effort");
    expect(gpt).toHaveProperty("response_format");
    // Opus 4.1 reasons and takes an output format (the catalog lists both).
    const opus = await ask("anthropic/claude-opus-4.1");
    expect(opus).toMatchObject({
      thinking: { type: "enabled" },
      output_config: { format: { type: "json_schema" } },
    });
  });

  it("parallel_tool_calls: false reaches Anthropic as disable_parallel_tool_use", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC_MESSAGES]: sse(anthropicText) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "anthropic/claude-sonnet-4",
      messages: hi,
      tools: [{ type: "function", function: { name: "a", parameters: { type: "object", properties: {} } } }],
      parallel_tool_calls: false,
    });
    expect(res.status).toBe(200);
    await res.json();
    expect(mock.requests[0]!.body).toMatchObject({
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    });
  });
});

describe("reasoning effort", () => {
  it("is fitted to the efforts an endpoint takes: the nearest (the higher of two), none where it takes none", () => {
    const gpt5 = ["minimal", "low", "medium", "high"];
    expect(fittedEffort("max", gpt5)).toBe("high");
    expect(fittedEffort("xhigh", gpt5)).toBe("high");
    expect(fittedEffort("none", gpt5)).toBe("minimal");
    expect(fittedEffort("low", gpt5)).toBe("low");
    expect(fittedEffort("medium", ["low", "high"])).toBe("high");
    expect(fittedEffort("minimal", ["low", "medium", "high"])).toBe("low");
    expect(fittedEffort("high", [])).toBeUndefined();
    expect(fittedEffort("max", undefined)).toBe("max");
  });

  it("reaches each upstream as it takes it: gpt-5 high for max, Groq low for minimal, grok-4 none", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({
      [OPENAI]: sse(textStream),
      "POST api.groq.com/openai/v1/chat/completions": sse(textStream),
      "POST api.x.ai/v1/chat/completions": sse(textStream),
    });
    const sent = async (model: string, effort: string, provider?: Record<string, unknown>) => {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model,
        messages: hi,
        reasoning: { effort },
        ...(provider ? { provider } : {}),
      });
      expect(res.status, model).toBe(200);
      await res.json();
      return (mock.requests.at(-1)!.body as { reasoning_effort?: string }).reasoning_effort;
    };
    expect(await sent("openai/gpt-5-mini", "max")).toBe("high");
    expect(await sent("openai/gpt-oss-120b", "minimal", { only: ["groq"] })).toBe("low");
    expect(await sent("x-ai/grok-3-mini", "medium")).toBe("high");
    expect(await sent("x-ai/grok-4", "high")).toBeUndefined();
  });
});

describe("reasoning.exclude", () => {
  it("a stream cut before its usage is billed for the hidden reasoning as for the shown", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const cut = anthropicThinking.slice(0, anthropicThinking.indexOf("event: message_delta"));
    upstream({ [ANTHROPIC_MESSAGES]: sse(cut) });
    const billed = async (exclude: boolean) => {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model: "anthropic/claude-sonnet-4",
        messages: hi,
        reasoning: { effort: "low", exclude },
        stream: true,
      });
      const text = await res.text();
      const usage = text
        .split("\n\n")
        .map((f) => f.replace(/^data: /, ""))
        .filter((f) => f.startsWith("{"))
        .map((f) => JSON.parse(f) as { usage?: { completion_tokens: number } })
        .findLast((c) => c.usage)!.usage!;
      return usage.completion_tokens;
    };
    const shown = await billed(false);
    expect(shown).toBeGreaterThan(8);
    expect(await billed(true)).toBe(shown);
  });

  it("an OpenAI Responses answer under exclude carries no reasoning summary (re-encoded, not passed through)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    upstream({ [OPENAI_RESPONSES]: sse(responsesReasoningTools) });
    const { res } = await post("/responses", acct.apiKey, {
      model: "openai/gpt-5",
      input: "Weather?",
      reasoning: { effort: "medium", summary: "auto", exclude: true },
      stream: true,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("response.completed");
    expect(text).not.toContain("reasoning_summary");
    expect(text).not.toContain("Checking the weather");
  });

  it.each([
    ["reasoning.exclude", { reasoning: { effort: "low", exclude: true } }],
    ["include_reasoning: false", { reasoning: { effort: "low" }, include_reasoning: false }],
  ])("%s: the model thinks (billed), the answer carries none of it, streamed or not", async (_name, ask) => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC_MESSAGES]: sse(anthropicThinking) });
    const body = { model: "anthropic/claude-sonnet-4", messages: hi, ...ask };
    const { res } = await post("/chat/completions", acct.apiKey, body);
    expect(res.status).toBe(200);
    const json = (await res.json()) as {
      choices: Array<{ message: Record<string, unknown> }>;
      usage: { completion_tokens: number };
    };
    expect(mock.requests[0]!.body).toHaveProperty("thinking");
    expect(json.choices[0]!.message.content).toBeTruthy();
    expect(json.choices[0]!.message).not.toHaveProperty("reasoning");
    expect(json.choices[0]!.message).not.toHaveProperty("reasoning_details");
    expect(json.usage.completion_tokens).toBeGreaterThan(0);
    const { res: streamed } = await post("/chat/completions", acct.apiKey, { ...body, stream: true });
    const text = await streamed.text();
    expect(text).toContain('"content"');
    expect(text).not.toContain('"reasoning":');
    expect(text).not.toContain('"reasoning_details"');
  });
});

describe("prompt_cache_key", () => {
  it("reaches OpenAI, on /chat/completions and on /responses alike", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream), [OPENAI_RESPONSES]: sse(responsesStream) });
    const chat = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      prompt_cache_key: "tenant-42",
    });
    expect(chat.res.status).toBe(200);
    await chat.res.json();
    const responses = await post("/responses", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "Hello",
      prompt_cache_key: "tenant-42",
    });
    expect(responses.res.status).toBe(200);
    await responses.res.json();
    expect(
      mock.requests.map((r) => [
        new URL(r.url).pathname,
        (r.body as Record<string, unknown>).prompt_cache_key,
      ]),
    ).toEqual([
      ["/v1/chat/completions", "tenant-42"],
      ["/v1/responses", "tenant-42"],
    ]);
  });

  it("is not sent to OpenAI-compatible hosts, which may refuse fields they do not know", () => {
    const request = { messages: [{ role: "user" as const, content: "Hello" }], promptCacheKey: "tenant-42" };
    expect(openAiChatBody(request, "m")).not.toHaveProperty("prompt_cache_key");
    expect(openAiChatBody(request, "m", { promptCacheKey: true })).toMatchObject({
      prompt_cache_key: "tenant-42",
    });
  });
});

describe("an assistant turn's refusal parts", () => {
  it("are accepted and sent as each upstream takes them: OpenAI's refusal, everyone else's text", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const messages = [
      { role: "user", content: "Do the thing" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me see." },
          { type: "refusal", refusal: "I can't help with that." },
        ],
      },
      { role: "user", content: "Why not?" },
    ];
    const GROQ = "POST api.groq.com/openai/v1/chat/completions";
    const GEMINI =
      "POST generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    const mock = upstream({
      [OPENAI]: sse(textStream),
      [GROQ]: sse(textStream),
      [ANTHROPIC_MESSAGES]: sse(anthropicText),
      [GEMINI]: sse(geminiText),
    });
    const asked: Array<[string, Record<string, unknown>?]> = [
      ["openai/gpt-4.1-mini"],
      ["meta-llama/llama-3.3-70b-instruct", { only: ["groq"] }],
      ["anthropic/claude-sonnet-4"],
      ["google/gemini-2.5-flash"],
    ];
    for (const [model, provider] of asked) {
      const { res } = await post("/chat/completions", acct.apiKey, { model, messages, provider });
      expect(res.status, model).toBe(200);
      await res.text();
    }
    const [openai, groq, anthropic, gemini] = mock.requests.map((r) => r.body as Record<string, unknown[]>);
    expect(openai!.messages![1]).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Let me see." }],
      refusal: "I can't help with that.",
    });
    expect(groq!.messages![1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "Let me see." },
        { type: "text", text: "I can't help with that." },
      ],
    });
    expect(anthropic!.messages![1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "Let me see." },
        { type: "text", text: "I can't help with that." },
      ],
    });
    expect(gemini!.contents![1]).toEqual({
      role: "model",
      parts: [{ text: "Let me see." }, { text: "I can't help with that." }],
    });
  });
});

describe("media parts an endpoint cannot read", () => {
  const image = (text: string) => [
    {
      role: "user",
      content: [
        { type: "text", text },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
      ],
    },
  ];

  it("rule a text-only model out with a 400 naming the kind; nothing is sent upstream", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({
      "POST api.deepseek.com/v1/chat/completions": sse(textStream),
      "POST api.fireworks.ai/inference/v1/chat/completions": sse(textStream),
    });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "deepseek/deepseek-chat-v3.1",
      messages: image("What is in this picture?"),
    });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.message).toContain("image inputs");
    // Both of the model's endpoints were refused for it.
    expect(
      (error.metadata as { reasons: Array<{ provider: string; reason: string }> }).reasons.map(
        (r) => r.provider,
      ),
    ).toEqual(["deepseek", "fireworks"]);
    expect(mock.requests).toHaveLength(0);
  });

  it("fall back to a model in `models` that reads them, with the image sent as given", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "deepseek/deepseek-chat-v3.1",
      models: ["openai/gpt-4.1-mini"],
      messages: image("What is in this picture?"),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("openai/gpt-4.1-mini");
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0]!.body as { messages: Array<{ content: Array<{ type: string }> }> };
    expect(sent.messages[0]!.content.map((p) => p.type)).toEqual(["text", "image_url"]);
  });

  it("go where the catalog adds what the dataset misses: a PDF reaches Claude as a document", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ "POST api.anthropic.com/v1/messages": sse(anthropicText) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "anthropic/claude-sonnet-4",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Summarise this" },
            {
              type: "file",
              file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0xLjQ=" },
            },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    await res.json();
    const sent = mock.requests[0]!.body as { messages: Array<{ content: Array<{ type: string }> }> };
    expect(sent.messages[0]!.content.map((b) => b.type)).toEqual(["text", "document"]);
  });

  it("are checked per kind: audio to a model that reads text and images is refused", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: [
        { role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] },
      ],
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("audio inputs");
    expect(mock.requests).toHaveLength(0);
  });

  it("are refused the same way on /messages and /responses", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ "POST api.deepseek.com/v1/chat/completions": sse(textStream) });
    const messages = await post("/messages", acct.apiKey, {
      model: "deepseek/deepseek-chat-v3.1",
      max_tokens: 64,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          ],
        },
      ],
    });
    expect(messages.res.status).toBe(400);
    // Anthropic's error shape on its format.
    const refused = (await messages.res.json()) as { type: string; error: { type: string; message: string } };
    expect(refused).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(refused.error.message).toContain("image inputs");
    const responses = await post("/responses", acct.apiKey, {
      model: "deepseek/deepseek-chat-v3.1",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is this?" },
            { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" },
          ],
        },
      ],
    });
    expect(responses.res.status).toBe(400);
    expect((await errorOf(responses.res)).message).toContain("image inputs");
    expect(mock.requests).toHaveLength(0);
  });
});

describe("what the answer may hold", () => {
  it("refuses image or audio output with a 400 naming it, as no catalog model writes them; text is served", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    for (const kind of ["image", "audio"]) {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        modalities: ["text", kind],
      });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toContain(`${kind} output`);
    }
    const responses = await post("/responses", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      input: "Draw a cat",
      modalities: ["text", "image"],
    });
    expect(responses.res.status).toBe(400);
    expect((await errorOf(responses.res)).message).toContain("image output");
    expect(mock.requests).toHaveLength(0);
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      modalities: ["text"],
    });
    expect(res.status).toBe(200);
    await res.json();
    expect(mock.requests).toHaveLength(1);
  });

  it("refuses n above 1 (one choice would come back for it) and accepts n: 1", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const refused = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      n: 2,
    });
    expect(refused.res.status).toBe(400);
    expect((await errorOf(refused.res)).message).toContain("n must be 1");
    expect(mock.requests).toHaveLength(0);
    const one = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      n: 1,
    });
    expect(one.res.status).toBe(200);
    expect(((await one.res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
  });
});

describe("metadata on /chat/completions", () => {
  it("holds the spec's limits, as on /responses: 16 pairs, keys of 1 to 64 characters without brackets", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [OPENAI]: sse(textStream) });
    const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
    const refused: Array<[Record<string, string>, string]> = [
      [pairs(17), "16 pairs"],
      [{ "a[b]": "v" }, "brackets"],
      [{ "": "v" }, "1 to 64"],
      [{ ["k".repeat(65)]: "v" }, "1 to 64"],
      [{ k: "v".repeat(513) }, "512"],
    ];
    for (const [metadata, named] of refused) {
      const { res } = await post("/chat/completions", acct.apiKey, {
        model: "openai/gpt-4.1-mini",
        messages: hi,
        metadata,
      });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toContain(named);
    }
    expect(mock.requests).toHaveLength(0);
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      messages: hi,
      metadata: pairs(16),
    });
    expect(res.status).toBe(200);
    await res.json();
  });
});

describe("Anthropic cache writes kept an hour", () => {
  /** text.sse with 400 prompt tokens written for 5 minutes and 600 for an hour, 10 plain, 12 out. */
  const hourWrites = anthropicText
    .replaceAll('"input_tokens":21', '"input_tokens":10')
    .replaceAll('"cache_creation_input_tokens":0', '"cache_creation_input_tokens":1000')
    .replace(
      '"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0',
      '"ephemeral_5m_input_tokens":400,"ephemeral_1h_input_tokens":600',
    );
  // Sonnet 4: $3 in, $15 out, $3.75 a 5-minute write and $6 (twice the input) an hour's, per million.
  const COST_MICROS = 10 * 3 + 400 * 3.75 + 600 * 6 + 12 * 15;

  it("are billed at the hour's price (twice the input), not the 5-minute one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ "POST api.anthropic.com/v1/messages": sse(hourWrites) });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "anthropic/claude-sonnet-4",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "A long document", cache_control: { type: "ephemeral", ttl: "1h" } },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost: number; prompt_tokens_details: unknown } };
    // The TTL reached Anthropic as given.
    const sent = mock.requests[0]!.body as {
      messages: Array<{ content: Array<{ cache_control?: unknown }> }>;
    };
    expect(sent.messages[0]!.content[0]!.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(body.usage.cost).toBeCloseTo(COST_MICROS / 1e6, 12);
    expect(body.usage.prompt_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 1000 });
    await settled();
    const record = await generation(res.headers.get("x-generation-id")!);
    expect(record.costMicros).toBe(COST_MICROS);
    expect(record.usage).toMatchObject({
      prompt_tokens: 1010,
      cache_write_tokens: 1000,
      cache_write_1h_tokens: 600,
    });
  });
});

describe("long-context rates", () => {
  const GEMINI_PRO =
    "POST generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent";
  /** The Gemini text answer with its prompt counted as `tokens`: 7 answer and 21 thinking tokens out. */
  const geminiWithPrompt = (tokens: number) =>
    geminiText.replaceAll('"promptTokenCount": 8', `"promptTokenCount": ${tokens}`);

  it("price the whole request at them past the threshold (Gemini 2.5 Pro over 200k tokens), not below", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const prompts = [150_000, 250_000];
    let answered = 0;
    const mock = upstream({ [GEMINI_PRO]: () => sse(geminiWithPrompt(prompts[answered++]!))() });
    const costs: number[] = [];
    for (const promptTokens of prompts) {
      const { res, settled } = await post("/chat/completions", acct.apiKey, {
        model: "google/gemini-2.5-pro",
        messages: hi,
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { prompt_tokens: number; cost: number } };
      expect(body.usage.prompt_tokens).toBe(promptTokens);
      await settled();
      costs.push((await generation(res.headers.get("x-generation-id")!)).costMicros);
    }
    expect(mock.requests).toHaveLength(2);
    // $1.25 in / $10 out per million up to 200k prompt tokens; $2.50 / $15 past it, output included.
    expect(costs).toEqual([150_000 * 1.25 + 28 * 10, 250_000 * 2.5 + 28 * 15]);
  });

  it("are what admission reserves for a prompt estimated past the threshold", async () => {
    const catalog = await getCatalog(env.DB);
    const pro = findModel(catalog, "google/gemini-2.5-pro")!.endpoints[0]!;
    expect(worstCaseMicros(pro, 100_000, 1000)).toBe(100_000 * 1.25 + 1000 * 10);
    expect(worstCaseMicros(pro, 300_000, 1000)).toBe(300_000 * 2.5 + 1000 * 15);
    // Claude: the dearest input-side price is the hour's cache write, long rates past 200k included.
    const sonnet = findModel(catalog, "anthropic/claude-sonnet-4")!.endpoints[0]!;
    expect(worstCaseMicros(sonnet, 100_000, 0)).toBe(100_000 * 6);
    expect(worstCaseMicros(sonnet, 300_000, 0)).toBe(300_000 * 12);
  });
});
