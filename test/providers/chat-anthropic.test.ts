// Anthropic Messages chat against recorded streams: the translated body, events read back as chunks, errors.
import { describe, expect, it } from "vitest";
import { anthropicAdapter } from "../../src/providers/anthropic";
import { anthropicBody } from "../../src/providers/anthropic/request";
import { anthropicChunks } from "../../src/providers/anthropic/stream";
import { UpstreamError } from "../../src/providers/errors";
import { getAdapter } from "../../src/providers/registry";
import type { CallContext, ChatChunk, ChatRequest, ChatStream, SseEvent } from "../../src/providers/types";
import cacheLength from "../fixtures/anthropic/cache-length.sse?raw";
import error401 from "../fixtures/anthropic/error-401.json";
import error429 from "../fixtures/anthropic/error-429.json";
import error529 from "../fixtures/anthropic/error-529.json";
import errorOverloaded from "../fixtures/anthropic/error-overloaded.sse?raw";
import textStream from "../fixtures/anthropic/text.sse?raw";
import thinkingStream from "../fixtures/anthropic/thinking.sse?raw";
import toolsStream from "../fixtures/anthropic/tools.sse?raw";

const KEY = `sk-ant-test-${crypto.randomUUID()}`;

function sse(text: string, piece = 9): Response {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

function ctx(answer: () => Response, sent: Request[] = []): CallContext {
  return {
    endpoint: {
      id: crypto.randomUUID(),
      provider: "anthropic",
      upstreamModel: "claude-sonnet-4-5",
      baseUrl: "https://api.anthropic.example",
      capabilities: {},
    },
    credential: { source: "byok", apiKey: KEY, credentialId: crypto.randomUUID() },
    signal: new AbortController().signal,
    fetch: async (input, init) => {
      sent.push(new Request(input, init));
      return answer();
    },
  };
}

const hello: ChatRequest = { messages: [{ role: "user", content: "Hello" }] };

async function collect(stream: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

async function run(answer: string): Promise<ChatChunk[]> {
  return collect(
    (await anthropicAdapter.chat!(
      hello,
      ctx(() => sse(answer)),
    )) as ChatStream,
  );
}

async function failure(work: () => Promise<unknown>): Promise<UpstreamError> {
  try {
    await work();
  } catch (e) {
    if (e instanceof UpstreamError) return e;
    throw e;
  }
  throw new Error("expected an UpstreamError");
}

function fold(chunks: ChatChunk[]) {
  let content = "";
  let reasoning = "";
  const details: Array<Record<string, unknown>> = [];
  const tools: Array<{ id?: string; name: string; arguments: string }> = [];
  let finish: string | null = null;
  let native: string | null | undefined = null;
  let usage: ChatChunk["usage"];
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      content += c.delta.content ?? "";
      reasoning += c.delta.reasoning ?? "";
      details.push(...(c.delta.reasoning_details ?? []));
      for (const t of c.delta.tool_calls ?? []) {
        const tool = tools[t.index] ?? { name: "", arguments: "" };
        tools[t.index] = tool;
        if (t.id) tool.id = t.id;
        tool.name += t.function?.name ?? "";
        tool.arguments += t.function?.arguments ?? "";
      }
      if (c.finish_reason) {
        finish = c.finish_reason;
        native = c.native_finish_reason;
      }
    }
  }
  return { content, reasoning, details, tools, finish, native, usage };
}

/** Events as the SSE reader yields them, for streams built in the test. */
async function* events(...list: Array<Record<string, unknown>>): AsyncGenerator<SseEvent> {
  for (const e of list) yield { event: String(e.type), data: JSON.stringify(e) };
}

const SIGNATURE =
  "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/9g+Rmo1ln9ZkPjHGpb6HF0NB2A5lZ5RC5kx8Xqv3dfa+b4yvKVtMZMOSLf6yoQcU0U5GgKQ/r2jhmxP8A8EpNgXWwtZXCUlMtEmTrn3sKjBEBK2zw==";

describe("anthropic chat: the request", () => {
  it("is registered as the `anthropic` adapter with chat only", () => {
    expect(getAdapter("anthropic")).toBe(anthropicAdapter);
    expect(anthropicAdapter.requiresApiKey).toBe(true);
    expect(anthropicAdapter.embeddings).toBeUndefined();
  });

  it("posts /v1/messages with x-api-key, the API version and the translated conversation", async () => {
    const sent: Request[] = [];
    const weatherTool = {
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    };
    const request: ChatRequest = {
      messages: [
        { role: "system", content: "You are terse." },
        {
          role: "developer",
          content: [{ type: "text", text: "Cite sources.", cache_control: { type: "ephemeral" } }],
        },
        {
          role: "user",
          content: [
            { type: "text", text: "Weather in Paris and Tokyo?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            {
              type: "image_url",
              image_url: { url: "https://maps.example/eu.jpg" },
              cache_control: { type: "ephemeral" },
            },
          ],
        },
        {
          role: "assistant",
          content: "Checking both.",
          reasoning: "Two cities, two calls.",
          reasoning_details: [
            { type: "reasoning.text", text: "Two cities,", format: "anthropic-claude-v1", index: 0 },
            { type: "reasoning.text", text: " two calls.", format: "anthropic-claude-v1", index: 0 },
            { type: "reasoning.text", signature: SIGNATURE, format: "anthropic-claude-v1", index: 0 },
            { type: "reasoning.text", text: "unsigned", format: "anthropic-claude-v1", index: 1 },
            { type: "reasoning.encrypted", data: "gAAAAB-other", format: "openai-responses-v1", index: 2 },
          ],
          tool_calls: [
            {
              id: "toolu_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
            {
              id: "toolu_2",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Tokyo"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "18C, sunny" },
        {
          role: "tool",
          tool_call_id: "toolu_2",
          content: [{ type: "text", text: "25C, rain", cache_control: { type: "ephemeral" } }],
        },
        { role: "user", content: "Which is warmer?" },
      ],
      maxTokens: 2048,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      frequencyPenalty: 0.4,
      seed: 11,
      stop: ["END"],
      tools: [weatherTool],
      toolChoice: "required",
      parallelToolCalls: false,
      user: "user-42",
      passthrough: { service_tier: "standard_only", stream: false, model: "other" },
    };
    const echoed: unknown[] = [];
    await anthropicAdapter.chat!(request, {
      ...ctx(() => sse(textStream), sent),
      onUpstreamBody: (b) => echoed.push(b),
    });
    const req = sent[0]!;
    expect(req.url).toBe("https://api.anthropic.example/v1/messages");
    expect(req.method).toBe("POST");
    expect(req.headers.get("x-api-key")).toBe(KEY);
    expect(req.headers.get("anthropic-version")).toBe("2023-06-01");
    expect(req.headers.get("authorization")).toBeNull();
    const body = await req.json();
    expect(body).toEqual({
      model: "claude-sonnet-4-5",
      max_tokens: 2048,
      stream: true,
      system: [
        { type: "text", text: "You are terse." },
        { type: "text", text: "Cite sources.", cache_control: { type: "ephemeral" } },
      ],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Weather in Paris and Tokyo?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            {
              type: "image",
              source: { type: "url", url: "https://maps.example/eu.jpg" },
              cache_control: { type: "ephemeral" },
            },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "Two cities, two calls.", signature: SIGNATURE },
            { type: "text", text: "Checking both." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Tokyo" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "18C, sunny" },
            {
              type: "tool_result",
              tool_use_id: "toolu_2",
              content: [{ type: "text", text: "25C, rain", cache_control: { type: "ephemeral" } }],
            },
          ],
        },
        { role: "user", content: "Which is warmer?" },
      ],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ["END"],
      tools: [
        {
          name: "get_weather",
          description: "Current weather",
          input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      metadata: { user_id: "user-42" },
      service_tier: "standard_only",
    });
    // What the debug echo shows: the body sent, never the key.
    expect(echoed).toEqual([body]);
    expect(JSON.stringify(echoed)).not.toContain(KEY);
  });

  it("maps tool_choice auto, none and a named function", () => {
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    const choice = (toolChoice: unknown) => anthropicBody({ ...hello, tools, toolChoice }, "m").tool_choice;
    expect(choice("auto")).toEqual({ type: "auto" });
    expect(choice("none")).toEqual({ type: "none" });
    expect(choice({ type: "function", function: { name: "f" } })).toEqual({ type: "tool", name: "f" });
    expect(choice(undefined)).toBeUndefined();
    // A tool without parameters gets an empty object schema (Anthropic requires input_schema).
    expect(
      anthropicBody({ ...hello, tools: [{ type: "function", function: { name: "g" } }] }, "m").tools,
    ).toEqual([{ name: "g", input_schema: { type: "object", properties: {} } }]);
  });

  it("gives other providers' tool call ids the characters Anthropic takes; a call and its result still pair", () => {
    const call = (id: string) => ({
      type: "function",
      id,
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    });
    const { messages } = anthropicBody(
      {
        messages: [
          { role: "user", content: "Weather?" },
          // Kimi's ids, and two that differ only in characters Anthropic refuses.
          {
            role: "assistant",
            content: null,
            tool_calls: [call("functions.get_weather:0"), call("a.b"), call("a:b"), call("toolu_01-ok")],
          },
          { role: "tool", tool_call_id: "functions.get_weather:0", content: "sunny" },
          { role: "tool", tool_call_id: "a.b", content: "1" },
          { role: "tool", tool_call_id: "a:b", content: "2" },
          { role: "tool", tool_call_id: "toolu_01-ok", content: "3" },
        ],
      },
      "m",
    );
    const uses = (messages[1]!.content as Array<{ id: string }>).map((b) => b.id);
    const results = (messages[2]!.content as Array<{ tool_use_id: string }>).map((b) => b.tool_use_id);
    for (const id of uses) expect(id).toMatch(/^[a-zA-Z0-9_-]+$/);
    expect(uses[0]).toMatch(/^functions_get_weather_0_/);
    // Valid ids go as they are; the others stay apart and each result names its call.
    expect(uses[3]).toBe("toolu_01-ok");
    expect(new Set(uses).size).toBe(4);
    expect(results).toEqual(uses);
  });

  it("defaults max_tokens to 4096 and turns reasoning into a thinking budget that fits under it", () => {
    const body = (request: Partial<ChatRequest>) => anthropicBody({ ...hello, ...request }, "m");
    expect(body({}).max_tokens).toBe(4096);
    expect(body({}).thinking).toBeUndefined();
    // Effort budgets: low 2048, medium 8192, high 16384; without a bound, max_tokens is budget + 4096.
    expect(body({ reasoning: { effort: "high" } })).toMatchObject({
      max_tokens: 20480,
      thinking: { type: "enabled", budget_tokens: 16384 },
    });
    expect(body({ reasoning: { effort: "low" } }).thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(body({ reasoning: { enabled: true } }).thinking).toEqual({ type: "enabled", budget_tokens: 8192 });
    expect(body({ reasoning: { max_tokens: 3000 }, maxTokens: 8000 })).toMatchObject({
      max_tokens: 8000,
      thinking: { type: "enabled", budget_tokens: 3000 },
    });
    // A bound too small for the budget cuts it to 80% of the bound; under 1024 there is no thinking.
    expect(body({ reasoning: { effort: "high" }, maxTokens: 10000 }).thinking).toEqual({
      type: "enabled",
      budget_tokens: 8000,
    });
    expect(body({ reasoning: { effort: "low" }, maxTokens: 1000 }).thinking).toBeUndefined();
    expect(body({ reasoning: { effort: "high", enabled: false } }).thinking).toBeUndefined();
    expect(body({ reasoning: { effort: "none" } }).thinking).toBeUndefined();
    // max: the most the bound allows (80% of it).
    expect(body({ reasoning: { effort: "max" }, maxTokens: 64000 }).thinking).toEqual({
      type: "enabled",
      budget_tokens: 51200,
    });
  });

  it("leaves thinking out under a tool choice that forces a call (Anthropic refuses both), keeps it under auto", () => {
    const tools: ChatRequest["tools"] = [
      { type: "function", function: { name: "a", parameters: { type: "object", properties: {} } } },
    ];
    const body = (toolChoice: ChatRequest["toolChoice"]) =>
      anthropicBody({ ...hello, tools, toolChoice, reasoning: { max_tokens: 2000 } }, "m");
    expect(body("required")).toMatchObject({ tool_choice: { type: "any" }, max_tokens: 4096 });
    expect(body("required")).not.toHaveProperty("thinking");
    const named = body({ type: "function", function: { name: "a" } });
    expect(named.tool_choice).toEqual({ type: "tool", name: "a" });
    expect(named).not.toHaveProperty("thinking");
    expect(body("auto").thinking).toEqual({ type: "enabled", budget_tokens: 2000 });
  });

  it("leaves out sampling Anthropic refuses with thinking on, and maps a JSON schema to output_config", () => {
    const thinking = anthropicBody(
      { ...hello, reasoning: { effort: "medium" }, temperature: 0.2, topP: 0.9, topK: 5 },
      "m",
    );
    expect(thinking).not.toHaveProperty("temperature");
    expect(thinking).not.toHaveProperty("top_p");
    expect(thinking).not.toHaveProperty("top_k");
    expect(anthropicBody({ ...hello, reasoning: { effort: "medium" }, topP: 0.97 }, "m").top_p).toBe(0.97);
    const schema = { type: "object", properties: { answer: { type: "string" } } };
    expect(
      anthropicBody(
        { ...hello, responseFormat: { type: "json_schema", json_schema: { name: "a", schema } } },
        "m",
      ).output_config,
    ).toEqual({ format: { type: "json_schema", schema } });
  });

  it("refuses parts it cannot translate with a retryable 400, so another endpoint can take them", () => {
    let err: unknown;
    try {
      anthropicBody(
        {
          messages: [
            { role: "user", content: [{ type: "input_audio", input_audio: { data: "AAA", format: "wav" } }] },
          ],
        },
        "m",
      );
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 400, retryable: true });
  });
});

describe("anthropic chat: the stream", () => {
  it("reads a text stream: role on the first chunk, text deltas, end_turn as stop, usage", async () => {
    const chunks = await run(textStream);
    const { raw, ...first } = chunks[0]!;
    expect(first).toEqual({
      choices: [{ index: 0, delta: { role: "assistant", content: "Hello" }, finish_reason: null }],
      model: "claude-sonnet-4-5-20250929",
      // message_start's id: the record's upstream_id.
      upstreamId: "msg_01XFDUDYJgAACzvnptvVoYEL",
      // message_start's prompt count: what a stream cut before its usage bills for its prompt.
      promptUsage: { promptTokens: 21, completionTokens: 0 },
    });
    // Each chunk carries the upstream events it was read from, in order, every event exactly once (the
    // first holds those before it; after it, an event with nothing to translate comes as a chunk of its own).
    expect(raw!.map((e) => e.event)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
    ]);
    const all = chunks.flatMap((c) => c.raw!);
    expect(all.map((e) => `event: ${e.event}\ndata: ${e.data}\n\n`).join("")).toBe(textStream);
    expect(chunks.at(-1)).toEqual({
      choices: [],
      raw: [{ event: "message_stop", data: '{"type":"message_stop"}' }],
    });
    expect(chunks.filter((c) => c.choices[0]?.delta.role)).toHaveLength(1);
    const folded = fold(chunks);
    expect(folded.content).toBe("Hello! How can I help you today?");
    expect(folded.finish).toBe("stop");
    expect(folded.native).toBe("end_turn");
    expect(folded.usage).toEqual({ promptTokens: 21, completionTokens: 12 });
  });

  it("numbers tool calls 0, 1 in the order their blocks start, with ids, names and argument deltas", async () => {
    const chunks = await run(toolsStream);
    const folded = fold(chunks);
    expect(folded.content).toBe("I'll check both cities.");
    expect(folded.tools).toEqual([
      { id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", arguments: '{"city": "Paris"}' },
      { id: "toolu_01WbgqfE5Fq3kM8b9nZrX2aD", name: "get_weather", arguments: '{"city": "Tokyo"}' },
    ]);
    expect(folded.finish).toBe("tool_calls");
    expect(folded.native).toBe("tool_use");
    expect(folded.usage).toEqual({ promptTokens: 472, completionTokens: 89 });
  });

  it("keeps argument deltas apart when tool blocks interleave, and gives an input-less call {}", async () => {
    const chunks = await collect(
      anthropicChunks(
        events(
          { type: "message_start", message: { model: "m", usage: { input_tokens: 5, output_tokens: 1 } } },
          {
            type: "content_block_start",
            index: 0,
            content_block: { type: "tool_use", id: "a", name: "f", input: {} },
          },
          {
            type: "content_block_start",
            index: 1,
            content_block: { type: "tool_use", id: "b", name: "g", input: {} },
          },
          {
            type: "content_block_start",
            index: 2,
            content_block: { type: "tool_use", id: "c", name: "h", input: {} },
          },
          {
            type: "content_block_delta",
            index: 1,
            delta: { type: "input_json_delta", partial_json: '{"y":' },
          },
          {
            type: "content_block_delta",
            index: 0,
            delta: { type: "input_json_delta", partial_json: '{"x":' },
          },
          { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "2}" } },
          { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "1}" } },
          { type: "content_block_stop", index: 0 },
          { type: "content_block_stop", index: 1 },
          { type: "content_block_stop", index: 2 },
          { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 30 } },
          { type: "message_stop" },
        ),
        "anthropic",
      ),
    );
    expect(fold(chunks).tools).toEqual([
      { id: "a", name: "f", arguments: '{"x":1}' },
      { id: "b", name: "g", arguments: '{"y":2}' },
      { id: "c", name: "h", arguments: "{}" },
    ]);
  });

  it("reads thinking as reasoning with signed reasoning_details that replay byte for byte", async () => {
    const chunks = await run(thinkingStream);
    const folded = fold(chunks);
    const thought = "Compare 9.11 and 9.8 digit by digit: tenths 1 < 8, so 9.8 is larger.";
    expect(folded.reasoning).toBe(thought);
    expect(folded.content).toBe("9.8 is larger than 9.11.");
    expect(folded.details).toEqual([
      {
        type: "reasoning.text",
        text: "Compare 9.11 and 9.8 digit by digit:",
        format: "anthropic-claude-v1",
        index: 0,
      },
      {
        type: "reasoning.text",
        text: " tenths 1 < 8, so 9.8 is larger.",
        format: "anthropic-claude-v1",
        index: 0,
      },
      { type: "reasoning.text", signature: SIGNATURE, format: "anthropic-claude-v1", index: 0 },
    ]);
    expect(folded.usage).toEqual({ promptTokens: 58, completionTokens: 131, reasoningTokens: 112 });
    // The client sends the turn back: Anthropic gets the thinking block exactly as it streamed it.
    const replay = anthropicBody(
      {
        messages: [
          { role: "user", content: "Which is larger, 9.11 or 9.8?" },
          { role: "assistant", content: folded.content, reasoning_details: folded.details },
          { role: "user", content: "Why?" },
        ],
      },
      "m",
    );
    expect(replay.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: thought, signature: SIGNATURE },
        { type: "text", text: "9.8 is larger than 9.11." },
      ],
    });
  });

  it("counts cache reads and writes into the prompt and reads max_tokens as a length finish", async () => {
    const folded = fold(await run(cacheLength));
    expect(folded.finish).toBe("length");
    expect(folded.native).toBe("max_tokens");
    expect(folded.usage).toEqual({
      promptTokens: 14 + 2048 + 1536,
      completionTokens: 16,
      cachedTokens: 2048,
      cacheWriteTokens: 1536,
    });
  });

  it("reads a refusal stop as content_filter", async () => {
    const chunks = await collect(
      anthropicChunks(
        events(
          { type: "message_start", message: { model: "m", usage: { input_tokens: 9, output_tokens: 1 } } },
          { type: "message_delta", delta: { stop_reason: "refusal" }, usage: { output_tokens: 3 } },
          { type: "message_stop" },
        ),
        "anthropic",
      ),
    );
    expect(fold(chunks)).toMatchObject({ finish: "content_filter", native: "refusal" });
  });

  it("names the stop sequence that ended the answer on its finishing chunk", async () => {
    const chunks = await collect(
      anthropicChunks(
        events(
          { type: "message_start", message: { model: "m", usage: { input_tokens: 9, output_tokens: 1 } } },
          { type: "message_delta", delta: { stop_reason: "stop_sequence", stop_sequence: "END" }, usage: {} },
          { type: "message_stop" },
        ),
        "anthropic",
      ),
    );
    const finishing = chunks.flatMap((c) => c.choices).find((c) => c.finish_reason !== null);
    expect(finishing).toMatchObject({
      finish_reason: "stop",
      native_finish_reason: "stop_sequence",
      stop_sequence: "END",
    });
  });

  it("throws a 529 UpstreamError at an overloaded error event, after the text before it", async () => {
    const stream = await anthropicAdapter.chat!(
      hello,
      ctx(() => sse(errorOverloaded)),
    );
    const seen: ChatChunk[] = [];
    const err = await failure(async () => {
      for await (const chunk of stream) seen.push(chunk);
    });
    expect(fold(seen).content).toBe("Once upon a time");
    expect(err).toMatchObject({
      kind: "http",
      status: 529,
      providerCode: "overloaded_error",
      retryable: true,
    });
    expect(err.message).toContain("Overloaded");
  });

  it("yields nothing before an error that comes ahead of any output", async () => {
    const seen: ChatChunk[] = [];
    const err = await failure(async () => {
      for await (const chunk of anthropicChunks(
        events(
          { type: "message_start", message: { model: "m", usage: { input_tokens: 9, output_tokens: 1 } } },
          { type: "error", error: { type: "rate_limit_error", message: "Slow down" } },
        ),
        "anthropic",
      )) {
        seen.push(chunk);
      }
    });
    expect(seen).toEqual([]);
    expect(err).toMatchObject({ status: 429, providerCode: "rate_limit_error" });
  });
});

describe("anthropic chat: refused requests", () => {
  it("maps 401 to a retryable error with Anthropic's error type, without the key", async () => {
    const err = await failure(() =>
      anthropicAdapter.chat!(
        hello,
        ctx(() => json(error401, 401)),
      ),
    );
    expect(err).toMatchObject({
      kind: "http",
      status: 401,
      providerCode: "authentication_error",
      retryable: true,
    });
    expect(err.message).not.toContain(KEY);
  });

  it("maps 429 with retry-after to a retryable error that says how long to wait", async () => {
    const err = await failure(() =>
      anthropicAdapter.chat!(
        hello,
        ctx(() => json(error429, 429, { "retry-after": "30" })),
      ),
    );
    expect(err).toMatchObject({
      status: 429,
      providerCode: "rate_limit_error",
      retryAfterSeconds: 30,
      retryable: true,
    });
  });

  it("maps 529 overloaded to a retryable error", async () => {
    const err = await failure(() =>
      anthropicAdapter.chat!(
        hello,
        ctx(() => json(error529, 529)),
      ),
    );
    expect(err).toMatchObject({ status: 529, providerCode: "overloaded_error", retryable: true });
  });
});
