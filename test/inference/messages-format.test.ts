// The Anthropic Messages format, without a runtime: a request into the chat normal form, chunks into
// Messages events (block boundaries, deltas, signatures), folded answers into one `message`.
import { describe, expect, it } from "vitest";
import { type ChatMeta, Folded } from "../../src/inference/chat-stream";
import {
  anthropicUsage,
  messagesJson,
  messagesStream,
  stopReasonOf,
} from "../../src/inference/formats/messages";
import { chatBodyOf } from "../../src/inference/formats/messages-request";
import { anthropicBody } from "../../src/providers/anthropic/request";
import type { ChatChunk, ChatMessage } from "../../src/providers/types";
import { MessagesRequestSchema } from "../../src/schemas/messages";

const meta: ChatMeta = {
  id: "gen-test",
  created: 0,
  model: "a/b",
  provider: "p",
  isByok: false,
  promptEstimate: 10,
  price: () => ({ prompt: 1, completion: 2 }),
};

const parse = (body: unknown) => MessagesRequestSchema.parse(body);

describe("a Messages request in the chat normal form", () => {
  it("system blocks, tool results, tool uses, thinking and cache markers", () => {
    const signature = "sig/+==";
    const body = chatBodyOf(
      parse({
        model: "m",
        max_tokens: 100,
        system: [{ type: "text", text: "Sys", cache_control: { type: "ephemeral", ttl: "1h" } }],
        stop_sequences: ["X"],
        top_k: 5,
        metadata: { user_id: "u1" },
        cache_control: { type: "ephemeral" },
        thinking: { type: "enabled", budget_tokens: 2000 },
        tool_choice: { type: "any", disable_parallel_tool_use: true },
        tools: [{ name: "t", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } }],
        fallbacks: [{ model: "n" }],
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "look" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
              { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" } },
            ],
          },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "hmm", signature },
              { type: "redacted_thinking", data: "R" },
              { type: "text", text: "calling" },
              { type: "tool_use", id: "toolu_1", name: "t", input: { a: 1 } },
            ],
          },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: "toolu_1",
                content: "ok",
                is_error: true,
                cache_control: { type: "ephemeral" },
              },
              { type: "text", text: "go on" },
            ],
          },
        ],
      }),
    );
    expect(body).toMatchObject({
      model: "m",
      models: ["n"],
      max_tokens: 100,
      stop: ["X"],
      top_k: 5,
      user: "u1",
      cache_control: { type: "ephemeral" },
      reasoning: { max_tokens: 2000 },
      tool_choice: "required",
      parallel_tool_calls: false,
      tools: [
        {
          type: "function",
          function: { name: "t", parameters: { type: "object" } },
          cache_control: { type: "ephemeral" },
        },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: "system",
        content: [{ type: "text", text: "Sys", cache_control: { type: "ephemeral", ttl: "1h" } }],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          { type: "file", file: { file_data: "data:application/pdf;base64,JVBE" } },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "text", text: "calling" }],
        tool_calls: [{ id: "toolu_1", type: "function", function: { name: "t", arguments: '{"a":1}' } }],
        reasoning_details: [
          { type: "reasoning.text", text: "hmm", signature, format: "anthropic-claude-v1", index: 0 },
          { type: "reasoning.encrypted", data: "R", format: "anthropic-claude-v1", index: 1 },
        ],
      },
      {
        role: "tool",
        tool_call_id: "toolu_1",
        content: "ok",
        is_error: true,
        cache_control: { type: "ephemeral" },
      },
      { role: "user", content: [{ type: "text", text: "go on" }] },
    ]);

    // Through the Anthropic adapter, the same turns come back as they were sent.
    const upstream = anthropicBody(
      {
        messages: body.messages as ChatMessage[],
        maxTokens: 100,
        reasoning: { max_tokens: 2000 },
        cacheControl: { type: "ephemeral" },
      },
      "claude",
    );
    expect(upstream.cache_control).toEqual({ type: "ephemeral" });
    expect(upstream.messages[0]!.content).toEqual([
      { type: "text", text: "look" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" } },
    ]);
    expect(upstream.messages[1]!.content).toEqual([
      { type: "thinking", thinking: "hmm", signature },
      { type: "redacted_thinking", data: "R" },
      { type: "text", text: "calling" },
      { type: "tool_use", id: "toolu_1", name: "t", input: { a: 1 } },
    ]);
    // Consecutive user turns are allowed (Anthropic joins them): the results, then the text.
    expect(upstream.messages.slice(2)).toEqual([
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: "ok",
            is_error: true,
            cache_control: { type: "ephemeral" },
          },
        ],
      },
      { role: "user", content: [{ type: "text", text: "go on" }] },
    ]);
  });

  it("refuses what it cannot translate: thinking in a user turn, models and fallbacks both, no max_tokens, a preset as fallback", () => {
    expect(() =>
      chatBodyOf(
        parse({
          max_tokens: 1,
          messages: [{ role: "user", content: [{ type: "thinking", thinking: "x", signature: "y" }] }],
        }),
      ),
    ).toThrow(/messages\.0\.content\.0/);
    expect(
      MessagesRequestSchema.safeParse({
        max_tokens: 1,
        models: ["a"],
        fallbacks: [{ model: "b" }],
        messages: [{ role: "user", content: "x" }],
      }).success,
    ).toBe(false);
    expect(MessagesRequestSchema.safeParse({ messages: [{ role: "user", content: "x" }] }).success).toBe(
      false,
    );
    expect(
      MessagesRequestSchema.safeParse({
        max_tokens: 1,
        models: ["a", "b", "c", "d"],
        messages: [{ role: "user", content: "x" }],
      }).success,
    ).toBe(false);
    const presetFallback = MessagesRequestSchema.safeParse({
      max_tokens: 1,
      fallbacks: [{ model: "@preset/other" }],
      messages: [{ role: "user", content: "x" }],
    });
    expect(presetFallback.error?.issues[0]?.message).toContain("cannot be a preset");
  });
});

/** Runs chunks through the stream format; answers the parsed frames. */
function stream(chunks: ChatChunk[]) {
  const format = messagesStream(meta);
  const json = messagesJson(meta);
  const folded = new Folded();
  let text = format.open();
  for (const chunk of chunks) {
    folded.add(chunk);
    text += format.chunk(chunk, folded);
    json.chunk?.(chunk, folded);
  }
  text += format.end(folded, folded.finalUsage({ promptEstimate: 10 }).usage);
  const body = json.body(folded, folded.finalUsage({ promptEstimate: 10 }).usage) as { content: unknown[] };
  const frames = text
    .split("\n\n")
    .filter(Boolean)
    .map((f) => {
      const [event, data] = f.split("\n");
      return { event: event!.slice(7), data: JSON.parse(data!.slice(6)) as Record<string, unknown> };
    });
  return { frames, body };
}

const delta = (
  d: ChatChunk["choices"][number]["delta"],
  finish: "stop" | "tool_calls" | null = null,
): ChatChunk => ({
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});

describe("chunks as Messages events", () => {
  it("thinking with its signature, then text, then two tool calls with split arguments", () => {
    const detail = (fields: Record<string, unknown>) => ({
      type: "reasoning.text",
      format: "anthropic-claude-v1",
      index: 0,
      ...fields,
    });
    const { frames, body } = stream([
      delta({ reasoning: "Let ", reasoning_details: [detail({ text: "Let " })] }),
      delta({ reasoning: "me see", reasoning_details: [detail({ text: "me see" })] }),
      delta({ reasoning_details: [detail({ signature: "SIG" })] }),
      delta({ content: "Sure." }),
      delta({
        tool_calls: [{ index: 0, id: "c0", type: "function", function: { name: "a", arguments: "" } }],
      }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
      delta({
        tool_calls: [{ index: 1, id: "c1", type: "function", function: { name: "b", arguments: "{}" } }],
      }),
      {
        ...delta({}, "tool_calls"),
        usage: { promptTokens: 30, completionTokens: 7, cachedTokens: 20, cacheWriteTokens: 4 },
      },
    ]);
    const shape = frames.map((f) =>
      f.event === "content_block_delta"
        ? `${f.data.index}:${(f.data.delta as { type: string }).type}`
        : f.event === "content_block_start"
          ? `${f.data.index}:start:${(f.data.content_block as { type: string }).type}`
          : f.event,
    );
    expect(shape).toEqual([
      "message_start",
      "0:start:thinking",
      "0:thinking_delta",
      "0:thinking_delta",
      "0:signature_delta",
      "content_block_stop",
      "1:start:text",
      "1:text_delta",
      "content_block_stop",
      "2:start:tool_use",
      "2:input_json_delta",
      "2:input_json_delta",
      "content_block_stop",
      "3:start:tool_use",
      "3:input_json_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(frames.at(-2)!.data).toMatchObject({
      delta: { stop_reason: "tool_use" },
      usage: {
        input_tokens: 6,
        cache_read_input_tokens: 20,
        cache_creation_input_tokens: 4,
        output_tokens: 7,
      },
    });
    // The JSON answer holds the same blocks.
    expect(body.content).toEqual([
      { type: "thinking", thinking: "Let me see", signature: "SIG" },
      { type: "text", text: "Sure." },
      { type: "tool_use", id: "c0", name: "a", input: { x: 1 } },
      { type: "tool_use", id: "c1", name: "b", input: {} },
    ]);
  });

  it("tool calls one after another stream as their deltas come: named once its name is known, a repeated head not doubled", () => {
    const format = messagesStream(meta);
    const folded = new Folded();
    const call = (fields: Record<string, unknown>) => delta({ tool_calls: [{ index: 0, ...fields }] });
    const written = [
      call({ id: "c0", function: { arguments: "" } }),
      call({ function: { name: "a" } }),
      call({ id: "c0", function: { name: "a", arguments: '{"x":1}' } }),
      delta({ tool_calls: [{ index: 1, id: "c1", function: { name: "b", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '{"y":2}' } }] }),
    ].map((chunk) => {
      folded.add(chunk);
      return format
        .chunk(chunk, folded)
        .split("\n\n")
        .filter(Boolean)
        .map((f) => JSON.parse(f.split("\n")[1]!.slice(6)) as Record<string, unknown>);
    });
    expect(written).toEqual([
      [],
      [
        {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: "c0", name: "a", input: {} },
        },
      ],
      [
        {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: '{"x":1}' },
        },
      ],
      [],
      [
        { type: "content_block_stop", index: 0 },
        {
          type: "content_block_start",
          index: 1,
          content_block: { type: "tool_use", id: "c1", name: "b", input: {} },
        },
        {
          type: "content_block_delta",
          index: 1,
          delta: { type: "input_json_delta", partial_json: '{"y":2}' },
        },
      ],
    ]);
  });

  it("calls whose deltas interleave: the open one streams, the others are written whole at the end", () => {
    const head = (index: number, name: string) =>
      delta({ tool_calls: [{ index, id: `c${index}`, function: { name, arguments: "" } }] });
    const args = (index: number, a: string) => delta({ tool_calls: [{ index, function: { arguments: a } }] });
    const { frames, body } = stream([
      head(0, "a"),
      head(1, "b"),
      args(0, '{"x":'),
      args(1, '{"y":'),
      args(0, "1}"),
      args(1, "2}"),
      delta({}, "tool_calls"),
    ]);
    const shape = frames.map((f) =>
      f.event === "content_block_delta"
        ? `${f.data.index}:${(f.data.delta as { partial_json: string }).partial_json}`
        : f.event === "content_block_start"
          ? `${f.data.index}:start`
          : f.event,
    );
    expect(shape).toEqual([
      "message_start",
      "0:start",
      '0:{"x":',
      "0:1}",
      "content_block_stop",
      "1:start",
      '1:{"y":2}',
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const calls = [
      { type: "tool_use", id: "c0", name: "a", input: { x: 1 } },
      { type: "tool_use", id: "c1", name: "b", input: { y: 2 } },
    ];
    expect(body.content).toEqual(calls);
  });

  it("interleaved thinking (thinking -> tool_use -> thinking -> text) keeps its order and signatures", () => {
    const detail = (index: number, fields: Record<string, unknown>) => ({
      type: "reasoning.text",
      format: "anthropic-claude-v1",
      index,
      ...fields,
    });
    const { frames, body } = stream([
      delta({ reasoning: "Call it.", reasoning_details: [detail(0, { text: "Call it." })] }),
      delta({ reasoning_details: [detail(0, { signature: "S0" })] }),
      delta({
        tool_calls: [{ index: 0, id: "c0", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
      }),
      delta({ reasoning: "Then say.", reasoning_details: [detail(1, { text: "Then say." })] }),
      delta({ reasoning_details: [detail(1, { signature: "S1" })] }),
      delta({ content: "Done." }, "stop"),
    ]);
    const starts = frames
      .filter((f) => f.event === "content_block_start")
      .map((f) => `${f.data.index}:${(f.data.content_block as { type: string }).type}`);
    expect(starts).toEqual(["0:thinking", "1:tool_use", "2:thinking", "3:text"]);
    const signatures = frames
      .filter((f) => (f.data.delta as { type?: string } | undefined)?.type === "signature_delta")
      .map((f) => `${f.data.index}:${(f.data.delta as { signature: string }).signature}`);
    expect(signatures).toEqual(["0:S0", "2:S1"]);
    expect(body.content).toEqual([
      { type: "thinking", thinking: "Call it.", signature: "S0" },
      { type: "tool_use", id: "c0", name: "f", input: { a: 1 } },
      { type: "thinking", thinking: "Then say.", signature: "S1" },
      { type: "text", text: "Done." },
    ]);
  });

  it("reasoning sent both as text and as one whole detail is not doubled; other formats' signatures stay out", () => {
    const { frames, body } = stream([
      delta({ reasoning: "one" }),
      delta({ reasoning: " two" }),
      delta({
        reasoning_details: [
          { type: "reasoning.text", text: "one two", signature: "G", format: "google-gemini-v1", index: 0 },
        ],
      }),
      delta({ content: "hi" }, "stop"),
    ]);
    const thinking = frames
      .filter((f) => (f.data.delta as { type?: string } | undefined)?.type === "thinking_delta")
      .map((f) => (f.data.delta as { thinking: string }).thinking);
    expect(thinking).toEqual(["one", " two"]);
    expect(
      frames.some((f) => (f.data.delta as { type?: string } | undefined)?.type === "signature_delta"),
    ).toBe(false);
    expect(body.content[0]).toEqual({
      type: "thinking",
      thinking: "one two",
      signature: "",
    });
  });

  it("stop reasons, usage without cache, the error event and the ping", () => {
    expect(stopReasonOf({ finish: "length", native: "length" })).toBe("max_tokens");
    expect(stopReasonOf({ finish: "stop", native: "stop_sequence" })).toBe("stop_sequence");
    expect(stopReasonOf({ finish: null, native: null })).toBe("end_turn");
    expect(anthropicUsage({ promptTokens: 12, completionTokens: 3 })).toEqual({
      input_tokens: 12,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 3,
    });
    const format = messagesStream(meta);
    expect(format.keepalive).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    const fail = format.fail(
      { code: 529, message: "busy", metadata: { error_type: "provider_overloaded" } },
      new Folded(),
    );
    // Nothing came: the usage before the error says the prompt, at no cost (zero-completion insurance).
    expect(fail).toBe(
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},' +
        '"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"cost":0,"is_byok":false}}\n\n' +
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n',
    );
  });
});
