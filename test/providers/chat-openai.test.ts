// OpenAI-compatible chat against recorded streams: the body sent, chunks read back, usage, finish reasons, errors.
import { describe, expect, it } from "vitest";
import { UpstreamError } from "../../src/providers/errors";
import { createOpenAiCompatible, openAiCompatibleAdapter } from "../../src/providers/openai-compatible";
import { openAiChunk } from "../../src/providers/openai-compatible/chat";
import { bearer } from "../../src/providers/openai-compatible/options";
import { getAdapter } from "../../src/providers/registry";
import type { CallContext, ChatChunk, ChatRequest, ChatStream } from "../../src/providers/types";
import chat401 from "../fixtures/openai/chat-401.json";
import chat429 from "../fixtures/openai/chat-429.json";
import errorMidstream from "../fixtures/openai/chat-error-midstream.sse?raw";
import lengthCached from "../fixtures/openai/chat-length-cached.sse?raw";
import reasoningDeepseek from "../fixtures/openai/chat-reasoning-deepseek.sse?raw";
import textStream from "../fixtures/openai/chat-text.sse?raw";
import toolsStream from "../fixtures/openai/chat-tools.sse?raw";

const KEY = `sk-test-${crypto.randomUUID()}`;

/** An SSE answer delivered in small pieces, so events straddle chunk boundaries as they do on the wire. */
function sse(text: string, piece = 7, onCancel?: () => void): Response {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
    cancel: onCancel,
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

function ctx(
  answer: () => Response,
  sent: Request[] = [],
  signal = new AbortController().signal,
): CallContext {
  return {
    endpoint: {
      id: crypto.randomUUID(),
      provider: "acme",
      upstreamModel: "acme/chat-large",
      baseUrl: "https://acme.example/v1",
      capabilities: {},
    },
    credential: { source: "platform", apiKey: KEY },
    signal,
    fetch: async (input, init) => {
      sent.push(new Request(input, init));
      return answer();
    },
  };
}

const hello: ChatRequest = { messages: [{ role: "user", content: "Hello" }] };

async function collect(stream: ChatStream): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

async function failure(run: () => Promise<unknown>): Promise<UpstreamError> {
  try {
    await run();
  } catch (e) {
    if (e instanceof UpstreamError) return e;
    throw e;
  }
  throw new Error("expected an UpstreamError");
}

/** Folds chunks the way a client does: text, reasoning, tool calls by index, the last finish and usage. */
function fold(chunks: ChatChunk[]) {
  let content = "";
  let reasoning = "";
  const tools: Array<{ id?: string; name: string; arguments: string }> = [];
  let finish: string | null = null;
  let native: string | null | undefined = null;
  let usage: ChatChunk["usage"];
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      content += c.delta.content ?? "";
      reasoning += c.delta.reasoning ?? "";
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
  return { content, reasoning, tools, finish, native, usage };
}

describe("openai-compatible chat: the request", () => {
  it("posts the OpenAI body streamed with usage, a bearer key and the call's signal", async () => {
    const sent: Request[] = [];
    const controller = new AbortController();
    const request: ChatRequest = {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
        {
          role: "assistant",
          content: null,
          reasoning: "The user wants weather.",
          reasoning_details: [{ type: "reasoning.text", text: "The user wants weather.", index: 0 }],
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "18C, sunny" },
      ],
      maxTokens: 512,
      temperature: 0.2,
      topP: 0.9,
      seed: 7,
      stop: ["\n\n"],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Current weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        },
      ],
      toolChoice: "auto",
      parallelToolCalls: true,
      responseFormat: { type: "json_object" },
      reasoning: { effort: "low" },
      user: "user-42",
      // The request's own temperature wins; owned fields (stream, stream_options, max_tokens) never pass.
      passthrough: {
        service_tier: "flex",
        temperature: 0.3,
        stream: false,
        stream_options: { foo: 1 },
        max_tokens: 30_000,
        logit_bias_extra: 1,
      },
    };
    const echoed: unknown[] = [];
    await openAiCompatibleAdapter.chat!(request, {
      ...ctx(() => sse(textStream), sent, controller.signal),
      onUpstreamBody: (b) => echoed.push(b),
    });
    expect(sent).toHaveLength(1);
    const req = sent[0]!;
    expect(req.method).toBe("POST");
    expect(req.url).toBe("https://acme.example/v1/chat/completions");
    expect(req.headers.get("authorization")).toBe(`Bearer ${KEY}`);
    expect(req.headers.get("content-type")).toBe("application/json");
    const body = await req.json();
    expect(body).toEqual({
      model: "acme/chat-large",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "18C, sunny" },
      ],
      max_tokens: 512,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      stop: ["\n\n"],
      tools: request.tools,
      tool_choice: "auto",
      parallel_tool_calls: true,
      response_format: { type: "json_object" },
      reasoning_effort: "low",
      user: "user-42",
      service_tier: "flex",
      stream: true,
      stream_options: { include_usage: true },
      logit_bias_extra: 1,
    });
    // What the debug echo shows: the body sent, never the key.
    expect(echoed).toEqual([body]);
    expect(JSON.stringify(echoed)).not.toContain(KEY);
    // The fetch got the attempt's signal: aborting it reaches the upstream request.
    controller.abort();
    expect(req.signal.aborted).toBe(true);
  });

  it("OpenAI itself (adapter `openai`, its catalog endpoints) sends max_completion_tokens", async () => {
    const sent: Request[] = [];
    await getAdapter("openai")!.chat!(
      { ...hello, maxTokens: 300 },
      ctx(() => sse(textStream), sent),
    );
    const body = (await sent[0]!.json()) as Record<string, unknown>;
    expect(body.max_completion_tokens).toBe(300);
    expect(body).not.toHaveProperty("max_tokens");
  });

  it("puts the bound in max_completion_tokens for a configuration that asks for it", async () => {
    const adapter = createOpenAiCompatible(
      { name: "openai-reasoning", authHeaders: bearer, sendsInputType: false },
      { maxTokensField: "max_completion_tokens" },
    );
    const sent: Request[] = [];
    await adapter.chat!(
      { ...hello, maxTokens: 300 },
      ctx(() => sse(textStream), sent),
    );
    const body = (await sent[0]!.json()) as Record<string, unknown>;
    expect(body.max_completion_tokens).toBe(300);
    expect(body).not.toHaveProperty("max_tokens");
  });

  it("sends a developer message as system to compatible hosts (most take no developer role), as developer to OpenAI", async () => {
    const request: ChatRequest = {
      messages: [
        { role: "developer", content: "Be terse." },
        { role: "user", content: "Hello" },
      ],
    };
    const compatible: Request[] = [];
    await openAiCompatibleAdapter.chat!(
      request,
      ctx(() => sse(textStream), compatible),
    );
    expect(((await compatible[0]!.json()) as { messages: unknown }).messages).toEqual([
      { role: "system", content: "Be terse." },
      { role: "user", content: "Hello" },
    ]);
    const openai: Request[] = [];
    await getAdapter("openai")!.chat!(
      request,
      ctx(() => sse(textStream), openai),
    );
    expect(((await openai[0]!.json()) as { messages: unknown }).messages).toEqual(request.messages);
  });

  it("sends no reasoning_effort when reasoning is disabled", async () => {
    const sent: Request[] = [];
    await openAiCompatibleAdapter.chat!(
      { ...hello, reasoning: { effort: "high", enabled: false } },
      ctx(() => sse(textStream), sent),
    );
    expect(await sent[0]!.json()).not.toHaveProperty("reasoning_effort");
  });
});

describe("openai-compatible chat: the stream", () => {
  it("reads a plain text stream: role, text deltas, stop, then usage", async () => {
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => sse(textStream)),
      ),
    );
    expect(chunks[0]).toEqual({
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
      model: "gpt-4.1-mini-2025-04-14",
      // The chunks' id: the record's upstream_id.
      upstreamId: "chatcmpl-CbT2xQ7vH1o9TnB3kP0aZrW4yE8sd",
    });
    const folded = fold(chunks);
    expect(folded.content).toBe("Hello! How can I help?");
    expect(folded.finish).toBe("stop");
    expect(folded.native).toBe("stop");
    // The usage chunk has no choices and comes last.
    expect(chunks.at(-1)).toEqual({
      choices: [],
      usage: { promptTokens: 19, completionTokens: 8 },
      model: "gpt-4.1-mini-2025-04-14",
      // The chunks' id: the record's upstream_id.
      upstreamId: "chatcmpl-CbT2xQ7vH1o9TnB3kP0aZrW4yE8sd",
    });
  });

  it("keeps two parallel tool calls apart when their argument deltas interleave", async () => {
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => sse(toolsStream, 5)),
      ),
    );
    const folded = fold(chunks);
    expect(folded.tools).toEqual([
      { id: "call_weather_paris", name: "get_weather", arguments: '{"city": "Paris"}' },
      { id: "call_weather_tokyo", name: "get_weather", arguments: '{"city": "Tokyo"}' },
    ]);
    expect(folded.finish).toBe("tool_calls");
    expect(folded.usage).toEqual({ promptTokens: 212, completionTokens: 41 });
    expect(chunks[1]!.choices[0]!.delta.tool_calls).toEqual([
      {
        index: 0,
        id: "call_weather_paris",
        type: "function",
        function: { name: "get_weather", arguments: "" },
      },
    ]);
  });

  it("drops a tool call's id and name repeated on every chunk (Fireworks, MiniMax): the chunks stay deltas", async () => {
    const head = { index: 0, id: "call_a", type: "function" };
    const chunk = (args: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ ...head, function: { name: "get_weather", arguments: args } }] }, finish_reason: null }] })}\n\n`;
    const text = `${chunk("")}${chunk('{"city":')}${chunk('"Paris"}')}data: [DONE]\n\n`;
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => sse(text)),
      ),
    );
    // A client that joins the deltas (as the gateway's formats and many SDKs do) reads one name.
    expect(fold(chunks).tools).toEqual([
      { id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
    ]);
    expect(chunks.map((c) => c.choices[0]!.delta.tool_calls)).toEqual([
      [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }],
      [{ index: 0, type: "function", function: { arguments: '{"city":' } }],
      [{ index: 0, type: "function", function: { arguments: '"Paris"}' } }],
    ]);
  });

  it.each([
    ["every call at index 0 (Ollama)", (call: Record<string, unknown>) => ({ index: 0, ...call })],
    ["no index at all (Gemini's compatible endpoint, SGLang)", (call: Record<string, unknown>) => call],
  ])("keeps two calls apart when the host gives them %s: a new id is a new call", async (_name, shape) => {
    const chunk = (call: Record<string, unknown>) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [shape(call)] }, finish_reason: null }] })}\n\n`;
    const text = [
      chunk({ id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }),
      chunk({ function: { arguments: '{"city":"Paris"}' } }),
      chunk({ id: "call_b", type: "function", function: { name: "get_time", arguments: "" } }),
      chunk({ function: { arguments: '{"tz":"UTC"}' } }),
      "data: [DONE]\n\n",
    ].join("");
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => sse(text)),
      ),
    );
    expect(fold(chunks).tools).toEqual([
      { id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { id: "call_b", name: "get_time", arguments: '{"tz":"UTC"}' },
    ]);
    expect(chunks.map((c) => c.choices[0]!.delta.tool_calls![0]!.index)).toEqual([0, 0, 1, 1]);
  });

  it("reads DeepSeek-style reasoning_content as reasoning, with reasoning tokens in the usage", async () => {
    const folded = fold(
      await collect(
        await openAiCompatibleAdapter.chat!(
          hello,
          ctx(() => sse(reasoningDeepseek, 11)),
        ),
      ),
    );
    expect(folded.reasoning).toBe("9.11 and 9.8: compare tenths: 1 < 8.");
    expect(folded.content).toBe("9.8 is larger.");
    expect(folded.finish).toBe("stop");
    expect(folded.usage).toEqual({ promptTokens: 64, completionTokens: 93, reasoningTokens: 81 });
  });

  it.each([
    // OpenAI: reasoning inside completion_tokens, total = prompt + completion.
    ["inside completion_tokens (OpenAI)", { completion_tokens: 1005, total_tokens: 1015 }, 1005],
    // xAI (Grok): reasoning beside completion_tokens, total = prompt + completion + reasoning.
    ["beside completion_tokens (xAI, total says so)", { completion_tokens: 5, total_tokens: 1015 }, 1005],
    ["beside completion_tokens (more reasoning than completion, no total)", { completion_tokens: 5 }, 1005],
  ])("bills reasoning tokens reported %s as output", (_name, counts, completionTokens) => {
    const chunk = openAiChunk(
      {
        choices: [],
        usage: { prompt_tokens: 10, ...counts, completion_tokens_details: { reasoning_tokens: 1000 } },
      },
      "xai",
    );
    expect(chunk?.usage).toEqual({ promptTokens: 10, completionTokens, reasoningTokens: 1000 });
  });

  it("reads an empty id and name on a continuation delta (Qwen hosts) as none: one call, not two", async () => {
    const chunk = (call: Record<string, unknown>) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }] })}\n\n`;
    const text = [
      chunk({ index: 0, id: "call_A", type: "function", function: { name: "a", arguments: "" } }),
      chunk({ index: 0, id: "", type: "function", function: { name: "", arguments: '{"x":1}' } }),
      "data: [DONE]\n\n",
    ].join("");
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => sse(text)),
      ),
    );
    expect(fold(chunks).tools).toEqual([{ id: "call_A", name: "a", arguments: '{"x":1}' }]);
    expect(chunks.map((c) => c.choices[0]!.delta.tool_calls![0]!.index)).toEqual([0, 0]);
  });

  it("reports a length finish and cached prompt tokens", async () => {
    const folded = fold(
      await collect(
        await openAiCompatibleAdapter.chat!(
          hello,
          ctx(() => sse(lengthCached)),
        ),
      ),
    );
    expect(folded.finish).toBe("length");
    expect(folded.native).toBe("length");
    expect(folded.usage).toEqual({
      promptTokens: 2306,
      completionTokens: 64,
      cachedTokens: 2048,
      reasoningTokens: 48,
    });
  });

  it("names the stop string a vLLM-style host reports in stop_reason (a token id is not one)", async () => {
    const answer = (stopReason: unknown) =>
      `data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\ndata: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":${JSON.stringify(stopReason)}}]}\n\ndata: [DONE]\n\n`;
    const finishing = async (stopReason: unknown) =>
      (
        await collect(
          await openAiCompatibleAdapter.chat!(
            hello,
            ctx(() => sse(answer(stopReason))),
          ),
        )
      )
        .flatMap((c) => c.choices)
        .find((c) => c.finish_reason !== null);
    expect(await finishing("END")).toMatchObject({ finish_reason: "stop", stop_sequence: "END" });
    expect((await finishing(128009))?.stop_sequence).toBeUndefined();
    expect((await finishing(null))?.stop_sequence).toBeUndefined();
  });

  it("throws an UpstreamError at an error object inside the stream, after the chunks before it", async () => {
    const stream = await openAiCompatibleAdapter.chat!(
      hello,
      ctx(() => sse(errorMidstream)),
    );
    const seen: ChatChunk[] = [];
    const err = await failure(async () => {
      for await (const chunk of stream) seen.push(chunk);
    });
    expect(fold(seen).content).toBe("Once upon");
    expect(err).toMatchObject({ kind: "http", providerCode: "server_error" });
    expect(err.message).toContain("The server had an error");
  });

  it("takes the status from a numeric error code (OpenRouter-style hosts)", () => {
    const err = (() => {
      try {
        openAiChunk({ error: { code: 429, message: "Rate limited upstream" }, choices: [] }, "acme");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: "http", status: 429, providerCode: 429, retryable: true });
  });

  it("normalises finish reasons and keeps the provider's own value", () => {
    const finish = (raw: string) =>
      openAiChunk({ choices: [{ index: 0, delta: {}, finish_reason: raw }] }, "acme")!.choices[0]!;
    expect(finish("function_call")).toMatchObject({
      finish_reason: "tool_calls",
      native_finish_reason: "function_call",
    });
    expect(finish("content_filter")).toMatchObject({ finish_reason: "content_filter" });
    expect(finish("error")).toMatchObject({ finish_reason: "error" });
    expect(finish("eos")).toMatchObject({ finish_reason: "stop", native_finish_reason: "eos" });
    // A legacy function_call delta reads as tool call 0; refusal text passes through.
    expect(
      openAiChunk(
        { choices: [{ index: 0, delta: { function_call: { name: "f", arguments: "{}" }, refusal: "No." } }] },
        "acme",
      )!.choices[0]!.delta,
    ).toEqual({
      tool_calls: [{ index: 0, type: "function", function: { name: "f", arguments: "{}" } }],
      refusal: "No.",
    });
  });

  it("reads a host that ignored stream:true and answered one JSON completion", async () => {
    const answer = {
      id: "c1",
      object: "chat.completion",
      model: "acme/chat-large",
      choices: [{ index: 0, message: { role: "assistant", content: "Hi." }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    };
    const chunks = await collect(
      await openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => json(answer)),
      ),
    );
    expect(chunks).toEqual([
      {
        choices: [
          {
            index: 0,
            delta: { role: "assistant", content: "Hi." },
            finish_reason: "stop",
            native_finish_reason: "stop",
          },
        ],
        usage: { promptTokens: 5, completionTokens: 2 },
        model: "acme/chat-large",
        upstreamId: "c1",
      },
    ]);
  });

  it("cancels the upstream body when the consumer stops reading", async () => {
    let cancelled = false;
    const stream = await openAiCompatibleAdapter.chat!(
      hello,
      ctx(() =>
        sse(textStream, 4096, () => {
          cancelled = true;
        }),
      ),
    );
    for await (const _ of stream) break;
    expect(cancelled).toBe(true);
  });

  it("turns a stream that breaks off into a connection UpstreamError", async () => {
    let sentOnce = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sentOnce) return controller.error(new TypeError("Network connection lost."));
        sentOnce = true;
        controller.enqueue(new TextEncoder().encode(textStream.split("\n\n")[1]!.concat("\n\n")));
      },
    });
    const stream = await openAiCompatibleAdapter.chat!(
      hello,
      ctx(() => new Response(body)),
    );
    const err = await failure(() => collect(stream));
    expect(err.kind).toBe("connection");
    expect(err.retryable).toBe(true);
  });
});

describe("openai-compatible chat: refused requests", () => {
  it("maps 401 to a retryable error with the provider code, without the key", async () => {
    const err = await failure(() =>
      openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => json(chat401, 401)),
      ),
    );
    expect(err).toMatchObject({
      kind: "http",
      status: 401,
      providerCode: "invalid_api_key",
      retryable: true,
    });
    expect(err.message).not.toContain(KEY);
  });

  it("maps 429 with Retry-After to a retryable error that says how long to wait", async () => {
    const err = await failure(() =>
      openAiCompatibleAdapter.chat!(
        hello,
        ctx(() => json(chat429, 429, { "Retry-After": "2" })),
      ),
    );
    expect(err).toMatchObject({
      status: 429,
      providerCode: "rate_limit_exceeded",
      retryAfterSeconds: 2,
      retryable: true,
    });
  });
});
