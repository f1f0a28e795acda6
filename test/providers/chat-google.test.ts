// The google-gemini chat adapter against recorded Gemini API streams: the body it sends, the chunks it reads.
import { describe, expect, it } from "vitest";
import { UpstreamError } from "../../src/providers/errors";
import { googleGeminiAdapter } from "../../src/providers/google";
import { geminiBody, thinkingConfig } from "../../src/providers/google/request";
import { supports } from "../../src/providers/registry";
import type { CallContext, ChatChunk, ChatMessage, ChatRequest, ChatStream } from "../../src/providers/types";
import error400 from "../fixtures/google-ai-studio/chat-error-400.json";
import error400Key from "../fixtures/google-ai-studio/chat-error-400-api-key.json";
import error429 from "../fixtures/google-ai-studio/chat-error-429.json";
import midstreamSse from "../fixtures/google-ai-studio/chat-error-midstream.sse?raw";
import functionCallSse from "../fixtures/google-ai-studio/chat-function-call.sse?raw";
import maxTokensSse from "../fixtures/google-ai-studio/chat-max-tokens-cached.sse?raw";
import promptBlockedSse from "../fixtures/google-ai-studio/chat-prompt-blocked.sse?raw";
import safetySse from "../fixtures/google-ai-studio/chat-safety.sse?raw";
import textSse from "../fixtures/google-ai-studio/chat-text.sse?raw";
import thoughtsSse from "../fixtures/google-ai-studio/chat-thoughts.sse?raw";

const KEY = "AIzaSyTEST-secret-key-000000000000000";

/** An SSE body delivered in small pieces, so events straddle reads as they do on the wire. */
function sseBody(text: string, pieceBytes = 37): Response {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + pieceBytes));
      at += pieceBytes;
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

function ctx(answer: () => Response, sent: Request[] = [], upstreamModel = "gemini-2.5-flash"): CallContext {
  return {
    endpoint: {
      id: `google/${upstreamModel}@google-ai-studio`,
      provider: "google-ai-studio",
      upstreamModel,
      baseUrl: "https://generativelanguage.googleapis.com/v1beta",
      capabilities: { max_output_tokens: 65536 },
    },
    credential: { source: "platform", apiKey: KEY },
    signal: new AbortController().signal,
    fetch: async (input, init) => {
      sent.push(new Request(input, init));
      return answer();
    },
  };
}

const hi: ChatMessage[] = [{ role: "user", content: "What is the capital of France?" }];
const chat = (request: ChatRequest, call: CallContext) => googleGeminiAdapter.chat!(request, call);

async function collect(stream: ChatStream): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const deltas = (chunks: ChatChunk[]) => chunks.flatMap((c) => c.choices.map((ch) => ch.delta));
const contentOf = (chunks: ChatChunk[]) =>
  deltas(chunks)
    .map((d) => d.content ?? "")
    .join("");
const last = (chunks: ChatChunk[]) => chunks[chunks.length - 1]!;

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a failure");
}

describe("google-gemini request", () => {
  it("posts to :streamGenerateContent?alt=sse with the key in x-goog-api-key, and reports the body it sent", async () => {
    const sent: Request[] = [];
    const echoed: unknown[] = [];
    const stream = await chat(
      { messages: hi },
      { ...ctx(() => sseBody(textSse), sent), onUpstreamBody: (b) => echoed.push(b) },
    );
    expect(sent[0]!.method).toBe("POST");
    expect(sent[0]!.url).toBe(
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    );
    expect(sent[0]!.headers.get("x-goog-api-key")).toBe(KEY);
    expect(sent[0]!.headers.get("authorization")).toBeNull();
    const body = await sent[0]!.json();
    expect(body).toEqual({
      contents: [{ role: "user", parts: [{ text: "What is the capital of France?" }] }],
    });
    // What the debug echo shows: the body sent, never the key.
    expect(echoed).toEqual([body]);
    expect(JSON.stringify(echoed)).not.toContain(KEY);
    await collect(stream);
  });

  it("maps a whole conversation: system, media, tool calls with their signature, tool results, tools, config", () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    };
    const body = geminiBody({
      messages: [
        { role: "system", content: "You are terse." },
        { role: "developer", content: [{ type: "text", text: "Use metric units." }] },
        {
          role: "user",
          content: [
            { type: "text", text: "Weather here?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "image_url", image_url: { url: "https://example.com/photo.JPG?size=large" } },
            { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
            { type: "file", file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0=" } },
          ],
        },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [
            {
              id: "call_a",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
            { id: "call_b", type: "function", function: { name: "get_time", arguments: "" } },
          ],
          reasoning_details: [
            {
              type: "reasoning.encrypted",
              data: "c2lnLWE=",
              id: "call_a",
              format: "google-gemini-v1",
              index: 0,
            },
            { type: "reasoning.encrypted", data: "b3RoZXI=", id: "call_b", format: "anthropic-claude-v1" },
          ],
        },
        { role: "tool", tool_call_id: "call_a", content: '{"temp":21}' },
        { role: "tool", tool_call_id: "call_b", content: "noon" },
        { role: "user", content: "Thanks" },
      ],
      tools: [
        {
          type: "function",
          function: { name: "get_weather", description: "Weather by city", parameters: schema },
        },
        { type: "function", function: { name: "get_time" } },
      ],
      toolChoice: { type: "function", function: { name: "get_weather" } },
      maxTokens: 1000,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      stop: ["END"],
      seed: 7,
      responseFormat: { type: "json_schema", json_schema: { name: "w", strict: true, schema } },
      reasoning: { max_tokens: 512 },
      passthrough: { safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }] },
    });
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: "You are terse." }, { text: "Use metric units." }] },
      contents: [
        {
          role: "user",
          parts: [
            { text: "Weather here?" },
            { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
            { fileData: { fileUri: "https://example.com/photo.JPG?size=large", mimeType: "image/jpeg" } },
            { inlineData: { mimeType: "audio/wav", data: "UklGRg==" } },
            { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
          ],
        },
        {
          role: "model",
          parts: [
            { text: "Checking." },
            { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "c2lnLWE=" },
            { functionCall: { name: "get_time", args: {} } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_weather", response: { temp: 21 } } },
            { functionResponse: { name: "get_time", response: { content: "noon" } } },
            { text: "Thanks" },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: "get_weather", description: "Weather by city", parametersJsonSchema: schema },
            { name: "get_time" },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
      generationConfig: {
        maxOutputTokens: 1000,
        temperature: 0.2,
        topP: 0.9,
        topK: 40,
        stopSequences: ["END"],
        seed: 7,
        responseMimeType: "application/json",
        responseJsonSchema: schema,
        thinkingConfig: { includeThoughts: true, thinkingBudget: 512 },
      },
      safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
    });
  });

  it("maps tool_choice auto/none/required and json_object; tool_choice alone sends no toolConfig", () => {
    const tools = [{ type: "function", function: { name: "f" } }];
    const mode = (toolChoice: unknown) =>
      (
        geminiBody({ messages: hi, tools, toolChoice }).toolConfig as
          | { functionCallingConfig: unknown }
          | undefined
      )?.functionCallingConfig;
    expect(mode("auto")).toEqual({ mode: "AUTO" });
    expect(mode("none")).toEqual({ mode: "NONE" });
    expect(mode("required")).toEqual({ mode: "ANY" });
    expect(mode(undefined)).toBeUndefined();
    expect(geminiBody({ messages: hi, toolChoice: "required" }).toolConfig).toBeUndefined();
    expect(geminiBody({ messages: hi, responseFormat: { type: "json_object" } }).generationConfig).toEqual({
      responseMimeType: "application/json",
    });
  });

  it("maps reasoning to thinkingConfig: off, effort shares of the bound, exclude, dynamic", () => {
    const think = (reasoning: ChatRequest["reasoning"], maxTokens?: number) =>
      thinkingConfig({ messages: hi, reasoning, maxTokens });
    expect(think(undefined)).toBeUndefined();
    expect(think({ enabled: false })).toEqual({ thinkingBudget: 0 });
    expect(think({ effort: "none" })).toEqual({ thinkingBudget: 0 });
    expect(think({ effort: "high" }, 65536)).toEqual({ includeThoughts: true, thinkingBudget: 24576 });
    expect(think({ effort: "medium" }, 65536)).toEqual({ includeThoughts: true, thinkingBudget: 16384 });
    expect(think({ effort: "low" }, 10_000)).toEqual({ includeThoughts: true, thinkingBudget: 2000 });
    expect(think({ effort: "minimal" }, 2000)).toEqual({ includeThoughts: true, thinkingBudget: 1024 });
    expect(think({ effort: "high", exclude: true })).toEqual({
      includeThoughts: false,
      thinkingBudget: 24576,
    });
    expect(think({ enabled: true })).toEqual({ includeThoughts: true });
    expect(think({ effort: "xhigh" }, 20_000)).toEqual({ includeThoughts: true, thinkingBudget: 18000 });
    expect(think({ effort: "max" }, 20_000)).toEqual({ includeThoughts: true, thinkingBudget: 20000 });
    expect(think({ effort: "max" }, 65536)).toEqual({ includeThoughts: true, thinkingBudget: 24576 });
  });

  it("keeps budgets within what each model takes: 2.5 Pro always thinks (128..32768), Flash up to 24576", () => {
    const think = (model: string, reasoning: ChatRequest["reasoning"]) =>
      thinkingConfig({ messages: hi, reasoning }, model);
    // 2.5 Pro refuses a zero budget: off is its least budget, thoughts hidden.
    expect(think("gemini-2.5-pro", { enabled: false })).toEqual({
      includeThoughts: false,
      thinkingBudget: 128,
    });
    expect(think("gemini-2.5-pro", { effort: "none" })).toEqual({
      includeThoughts: false,
      thinkingBudget: 128,
    });
    expect(think("gemini-2.5-pro", { max_tokens: 0 })).toEqual({
      includeThoughts: false,
      thinkingBudget: 128,
    });
    expect(think("gemini-2.5-flash", { max_tokens: 0 })).toEqual({ thinkingBudget: 0 });
    expect(think("gemini-2.5-pro", { max_tokens: 50 })).toEqual({
      includeThoughts: true,
      thinkingBudget: 128,
    });
    expect(think("gemini-2.5-pro", { max_tokens: 40_000 })).toEqual({
      includeThoughts: true,
      thinkingBudget: 32768,
    });
    expect(think("gemini-2.5-flash", { max_tokens: 40_000 })).toEqual({
      includeThoughts: true,
      thinkingBudget: 24576,
    });
    expect(think("gemini-2.5-flash", { enabled: false })).toEqual({ thinkingBudget: 0 });
    expect(think("gemini-2.5-flash-lite", { max_tokens: 100 })).toEqual({
      includeThoughts: true,
      thinkingBudget: 512,
    });
    // The body sent names the model's range too.
    expect(
      geminiBody({ messages: hi, reasoning: { enabled: false } }, "gemini-2.5-pro").generationConfig,
    ).toEqual({
      thinkingConfig: { includeThoughts: false, thinkingBudget: 128 },
    });
  });
});

describe("google-gemini stream", () => {
  it("text: content deltas in order (role first), then finish stop with usage counting thoughts as output", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(textSse)),
      ),
    );
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: "assistant", content: "The capital of France" },
      { content: " is Paris." },
      {},
    ]);
    expect(last(chunks)).toEqual({
      choices: [{ index: 0, delta: {}, finish_reason: "stop", native_finish_reason: "STOP" }],
      usage: { promptTokens: 8, completionTokens: 7 + 21, reasoningTokens: 21 },
      model: "gemini-2.5-flash",
      // The events' responseId: the record's upstream_id.
      upstreamId: "mTtEaZ-dNqXZxs0PlKyk8QQ",
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true);
  });

  it("reads the same chunks however the bytes are split", async () => {
    const whole = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(textSse, 1 << 20)),
      ),
    );
    const bytewise = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(textSse, 1)),
      ),
    );
    expect(bytewise).toEqual(whole);
  });

  it("function calls: whole tool calls with minted ids and indexes, the signature tied to its call, finish tool_calls", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(functionCallSse)),
      ),
    );
    const delta = chunks[0]!.choices[0]!.delta;
    const calls = delta.tool_calls!;
    expect(calls.map((c) => [c.index, c.type, c.function])).toEqual([
      [0, "function", { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' }],
      [1, "function", { name: "get_time", arguments: '{"timezone":"Europe/Paris"}' }],
    ]);
    expect(calls[0]!.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(calls[1]!.id).not.toBe(calls[0]!.id);
    expect(delta.reasoning_details).toEqual([
      {
        type: "reasoning.encrypted",
        data: "CiQB0e2Kb1ZNv0Hh3m6oZ3q1tHk3S2cV9r0dJk2bqvN8wZg6f0MSbAHR7YpvJX1pbG8x0Z7y9g==",
        format: "google-gemini-v1",
        index: 0,
        id: calls[0]!.id,
      },
    ]);
    expect(last(chunks).choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      native_finish_reason: "STOP",
    });
    expect(last(chunks).usage).toEqual({ promptTokens: 63, completionTokens: 86, reasoningTokens: 52 });

    // The client sends the turn back as it received it: the signature returns on its functionCall part.
    const replay = geminiBody({
      messages: [
        ...hi,
        {
          role: "assistant",
          content: null,
          tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: c.function })),
          reasoning_details: delta.reasoning_details,
        },
        { role: "tool", tool_call_id: calls[0]!.id, content: '{"temp":21}' },
        { role: "tool", tool_call_id: calls[1]!.id, content: '"12:00"' },
      ],
    });
    expect((replay.contents as Array<{ parts: unknown[] }>).slice(1)).toEqual([
      {
        role: "model",
        parts: [
          {
            functionCall: { name: "get_weather", args: { city: "Paris", unit: "celsius" } },
            thoughtSignature: delta.reasoning_details![0]!.data,
          },
          { functionCall: { name: "get_time", args: { timezone: "Europe/Paris" } } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_weather", response: { temp: 21 } } },
          { functionResponse: { name: "get_time", response: { content: '"12:00"' } } },
        ],
      },
    ]);
  });

  it("thoughts: reasoning deltas before the answer, no chunk for an empty part, reasoning tokens in usage", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi, reasoning: { effort: "low" } },
        ctx(() => sseBody(thoughtsSse), [], "gemini-2.5-pro"),
      ),
    );
    expect(deltas(chunks)).toEqual([
      {
        role: "assistant",
        reasoning: '**Counting the letters**\n\nI need to count each "r" in "strawberry".',
      },
      { reasoning: " Spelling it out: s-t-r-a-w-b-e-r-r-y, three in all." },
      { content: 'There are three r\'s in "strawberry".' },
      {},
    ]);
    expect(last(chunks)).toMatchObject({
      choices: [{ finish_reason: "stop", native_finish_reason: "STOP" }],
      usage: { promptTokens: 12, completionTokens: 178, reasoningTokens: 168 },
      model: "gemini-2.5-pro",
    });
  });

  it("a safety stop keeps the text sent so far and ends content_filter", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(safetySse)),
      ),
    );
    expect(contentOf(chunks)).toBe("Here is an overview of");
    expect(last(chunks).choices[0]).toMatchObject({
      finish_reason: "content_filter",
      native_finish_reason: "SAFETY",
    });
    expect(last(chunks).usage).toEqual({ promptTokens: 14, completionTokens: 45, reasoningTokens: 40 });
  });

  it("a blocked prompt answers nothing and ends content_filter with the block reason", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(promptBlockedSse)),
      ),
    );
    expect(chunks).toEqual([
      {
        choices: [
          {
            index: 0,
            delta: {},
            finish_reason: "content_filter",
            native_finish_reason: "PROHIBITED_CONTENT",
          },
        ],
        usage: { promptTokens: 15, completionTokens: 0 },
        model: "gemini-2.5-flash",
        upstreamId: "1TxEabu2CNfZxs0P85uY-Ak",
      },
    ]);
  });

  it("MAX_TOKENS ends length; cached prompt tokens are reported", async () => {
    const chunks = await collect(
      await chat(
        { messages: hi, maxTokens: 16 },
        ctx(() => sseBody(maxTokensSse), [], "gemini-2.5-flash-lite"),
      ),
    );
    expect(contentOf(chunks)).toBe("Chapter one opens on a quiet harbour town where the ferry");
    expect(last(chunks).choices[0]).toMatchObject({
      finish_reason: "length",
      native_finish_reason: "MAX_TOKENS",
    });
    expect(last(chunks).usage).toEqual({ promptTokens: 2110, completionTokens: 16, cachedTokens: 2048 });
  });

  it("a stream cut before its last event ends without finish_reason; usage so far still comes", async () => {
    const firstEvent = `${textSse.split("\r\n\r\n")[0]}\r\n\r\n`;
    const chunks = await collect(
      await chat(
        { messages: hi },
        ctx(() => sseBody(firstEvent)),
      ),
    );
    expect(contentOf(chunks)).toBe("The capital of France");
    expect(chunks.every((c) => c.choices.every((ch) => ch.finish_reason === null))).toBe(true);
    expect(last(chunks)).toEqual({
      choices: [],
      usage: { promptTokens: 8, completionTokens: 25, reasoningTokens: 21 },
      model: "gemini-2.5-flash",
      upstreamId: "mTtEaZ-dNqXZxs0PlKyk8QQ",
    });
  });
});

describe("google-gemini errors", () => {
  it("429: provider code is Google's status name; RetryInfo gives the wait; retryable", async () => {
    const err = await failure(
      chat(
        { messages: hi },
        ctx(() => json(error429, 429)),
      ),
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({
      kind: "http",
      status: 429,
      providerCode: "RESOURCE_EXHAUSTED",
      retryAfterSeconds: 23,
      retryable: true,
    });
    expect((err as Error).message).toContain("You exceeded your current quota");
    const withHeader = await failure(
      chat(
        { messages: hi },
        ctx(() => json(error429, 429, { "Retry-After": "5" })),
      ),
    );
    expect(withHeader).toMatchObject({ retryAfterSeconds: 5 });
  });

  it("400 with API_KEY_INVALID fails over (the platform key's fault); another 400 does not", async () => {
    const key = await failure(
      chat(
        { messages: hi },
        ctx(() => json(error400Key, 400)),
      ),
    );
    expect(key).toMatchObject({ status: 400, providerCode: "INVALID_ARGUMENT", retryable: true });
    expect((key as Error).message).not.toContain(KEY);
    const bad = await failure(
      chat(
        { messages: hi },
        ctx(() => json(error400, 400)),
      ),
    );
    expect(bad).toMatchObject({ status: 400, providerCode: "INVALID_ARGUMENT", retryable: false });
    expect((bad as Error).message).toContain("Budget 0 is invalid");
  });

  it("a non-JSON error page keeps the HTTP status as provider code", async () => {
    const err = await failure(
      chat(
        { messages: hi },
        ctx(() => new Response("<html>Bad Gateway</html>", { status: 502 })),
      ),
    );
    expect(err).toMatchObject({ status: 502, providerCode: 502, retryable: true });
  });

  it("an error event mid-stream fails the iteration with an UpstreamError after the text so far", async () => {
    const stream = await chat(
      { messages: hi },
      ctx(() => sseBody(midstreamSse)),
    );
    const got: ChatChunk[] = [];
    const err = await failure(
      (async () => {
        for await (const c of stream) got.push(c);
      })(),
    );
    expect(contentOf(got)).toBe("Once upon");
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: "http", status: 503, providerCode: "UNAVAILABLE" });
  });

  it("an unreadable event is an invalid_response; a broken connection a connection failure", async () => {
    const garbled = await chat(
      { messages: hi },
      ctx(() => sseBody("data: {not json\r\n\r\n")),
    );
    expect(await failure(collect(garbled))).toMatchObject({ kind: "invalid_response" });
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`${textSse.split("\r\n\r\n")[0]}\r\n\r\n`));
        controller.error(new Error("reset"));
      },
    });
    const cut = await chat(
      { messages: hi },
      ctx(() => new Response(broken)),
    );
    expect(await failure(collect(cut))).toMatchObject({ kind: "connection" });
  });

  it("is registered as google-gemini with chat", () => {
    expect(supports("google-gemini", "chat")).toBe(true);
    expect(googleGeminiAdapter.requiresApiKey).toBe(true);
  });
});
