// The responses format without the pipeline: input items -> the chat normal form, recorded Anthropic streams
// -> the response object and its events (stream and JSON agree), and reasoning replayed byte for byte.
import { describe, expect, it } from "vitest";
import { type ChatMeta, Folded } from "../../src/inference/chat-stream";
import { responsesJson, responsesStream } from "../../src/inference/formats/responses";
import type { responseObject } from "../../src/inference/formats/responses-object";
import { responsesToChat } from "../../src/inference/formats/responses-request";
import { anthropicAdapter } from "../../src/providers/anthropic";
import { anthropicBody } from "../../src/providers/anthropic/request";
import type { CallContext, ChatChunk, ChatMessage, ChatStream } from "../../src/providers/types";
import { MAX_TURN_ITEMS } from "../../src/schemas/common";
import { type ResponsesRequest, ResponsesRequestSchema } from "../../src/schemas/responses-request";
import thinkingStream from "../fixtures/anthropic/thinking.sse?raw";
import toolsStream from "../fixtures/anthropic/tools.sse?raw";

const SIGNATURE =
  "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/9g+Rmo1ln9ZkPjHGpb6HF0NB2A5lZ5RC5kx8Xqv3dfa+b4yvKVtMZMOSLf6yoQcU0U5GgKQ/r2jhmxP8A8EpNgXWwtZXCUlMtEmTrn3sKjBEBK2zw==";

const meta: ChatMeta = {
  id: "gen-test",
  created: 1_700_000_000,
  model: "anthropic/claude-sonnet-4.5",
  provider: "anthropic",
  isByok: true,
  promptEstimate: 10,
  price: (u) => ({ prompt: u.promptTokens * 3, completion: u.completionTokens * 15 }),
};

const request = (body: Record<string, unknown>): ResponsesRequest => ResponsesRequestSchema.parse(body);

/** An Anthropic adapter stream replaying a recorded answer, collected as chunks. */
async function anthropicRun(answer: string): Promise<ChatChunk[]> {
  const call: CallContext = {
    endpoint: {
      id: "e",
      provider: "anthropic",
      upstreamModel: "claude-sonnet-4-5",
      baseUrl: "https://api.anthropic.example",
      capabilities: {},
    },
    credential: { source: "byok", apiKey: "sk-ant-test" },
    signal: new AbortController().signal,
    fetch: async () => new Response(answer, { headers: { "Content-Type": "text/event-stream" } }),
  };
  const stream = (await anthropicAdapter.chat!(
    { messages: [{ role: "user", content: "Q" }] },
    call,
  )) as ChatStream;
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

type Event = Record<string, unknown> & { type: string; sequence_number: number };

/** The stream format's events for the chunks, and the JSON body of the same answer. */
function both(req: ResponsesRequest, chunks: ChatChunk[]) {
  const format = responsesStream(req, meta);
  const json = responsesJson(req, meta);
  const folded = new Folded();
  let text = format.open();
  for (const chunk of chunks) {
    folded.add(chunk);
    text += format.chunk(chunk, folded);
    json.chunk?.(chunk, folded);
  }
  const { usage } = folded.finalUsage(meta);
  text += format.end(folded, usage);
  const events = text
    .split("\n\n")
    .filter((e) => e.startsWith("data: ") && e !== "data: [DONE]")
    .map((e) => JSON.parse(e.slice(6)) as Event);
  return { events, body: json.body(folded, usage) as ReturnType<typeof responseObject> };
}

describe("input items -> the chat normal form", () => {
  it("instructions first; one assistant turn per reasoning/text/calls; outputs as tool messages", () => {
    const chat = responsesToChat(
      request({
        model: "m",
        instructions: "Be brief.",
        input: [
          { role: "user", content: [{ type: "input_text", text: "Weather?" }] },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [],
            content: [{ type: "reasoning_text", text: "think" }],
          },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
          { type: "function_call", call_id: "c1", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "function_call", call_id: "c2", name: "get_time", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "sunny" },
          { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "noon" }] },
          { role: "assistant", content: "Sunny at noon." },
          { role: "user", content: "Thanks" },
        ],
      }),
    );
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: "Checking.",
        reasoning_details: [{ type: "reasoning.text", text: "think", index: 0 }],
        tool_calls: [
          { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "c2", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
      { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "noon" }] },
      { role: "assistant", content: "Sunny at noon." },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("function tools (deferred ones withheld), tool_choice, text.format, reasoning and max_output_tokens", () => {
    const chat = responsesToChat(
      request({
        model: "m",
        input: "hi",
        tools: [
          { type: "function", name: "a", parameters: { type: "object" }, async: true },
          { type: "function", name: "b", defer_loading: true },
        ],
        tool_choice: { type: "function", name: "a" },
        text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
        reasoning: { effort: "high", summary: "auto" },
        max_output_tokens: 50,
      }),
    );
    expect(chat.tools).toEqual([
      { type: "function", function: { name: "a", parameters: { type: "object" } } },
    ]);
    expect(chat.tool_choice).toEqual({ type: "function", function: { name: "a" } });
    expect(chat.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "out", schema: { type: "object" }, strict: true },
    });
    expect(chat.reasoning).toEqual({ effort: "high", summary: "auto" });
    expect(chat.max_tokens).toBe(50);
  });

  it("a turn of 20,000 calls or reasoning items (the most a request holds) is one assistant message holding them all, in order", () => {
    // Each item is appended in place: copying the turn's list per item took seconds at this size.
    const n = MAX_TURN_ITEMS;
    const calls = Array.from({ length: n }, (_, i) => ({
      type: "function_call",
      call_id: `c${i}`,
      name: "f",
      arguments: "{}",
    }));
    const thoughts = Array.from({ length: n }, () => ({
      type: "reasoning",
      summary: [{ type: "summary_text", text: "x" }],
    }));
    const [called] = responsesToChat(request({ model: "m", input: calls })).messages as unknown as Array<{
      tool_calls: Array<{ id: string }>;
    }>;
    expect(called!.tool_calls).toHaveLength(n);
    expect(called!.tool_calls[n - 1]!.id).toBe(`c${n - 1}`);
    const [thought] = responsesToChat(request({ model: "m", input: thoughts })).messages as unknown as Array<{
      reasoning_details: Array<{ index: number }>;
    }>;
    expect(thought!.reasoning_details).toHaveLength(n);
    expect(thought!.reasoning_details[n - 1]!.index).toBe(n - 1);
  });

  it("a chat-made preset's own fields fill only what the request leaves undefined", () => {
    const chat = responsesToChat(request({ model: "m", input: "hi", max_output_tokens: 9 }), {
      max_tokens: 100,
      stop: ["END"],
    });
    expect(chat.max_tokens).toBe(9);
    expect(chat.stop).toEqual(["END"]);
  });
});

describe("recorded Anthropic streams -> the response object and events", () => {
  it("thinking: a signed reasoning item, the same in the stream and the JSON; replayed, Anthropic gets the block byte for byte", async () => {
    const req = request({ model: "anthropic/claude-sonnet-4.5", input: "Which is larger, 9.11 or 9.8?" });
    const { events, body } = both(req, await anthropicRun(thinkingStream));
    const thought = "Compare 9.11 and 9.8 digit by digit: tenths 1 < 8, so 9.8 is larger.";
    expect(body.output).toEqual([
      {
        id: "rs_test_0",
        type: "reasoning",
        status: "completed",
        summary: [],
        content: [{ type: "reasoning_text", text: thought }],
        signature: SIGNATURE,
        format: "anthropic-claude-v1",
      },
      {
        id: "msg_test_1",
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "9.8 is larger than 9.11.", annotations: [], logprobs: [] }],
      },
    ]);
    const completed = events.at(-1) as Event & { response: typeof body };
    expect(completed.type).toBe("response.completed");
    expect(completed.response.output).toEqual(body.output);
    expect(completed.response.usage).toEqual(body.usage);
    expect(body.usage!.output_tokens_details.reasoning_tokens).toBe(112);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === "response.reasoning_text.delta").map((e) => e.delta)).toEqual([
      "Compare 9.11 and 9.8 digit by digit:",
      " tenths 1 < 8, so 9.8 is larger.",
    ]);

    const replay = responsesToChat(
      request({
        model: "anthropic/claude-sonnet-4.5",
        input: [
          { role: "user", content: "Which is larger, 9.11 or 9.8?" },
          ...body.output,
          { role: "user", content: "Why?" },
        ],
      }),
    );
    const anthropic = anthropicBody({ messages: replay.messages as ChatMessage[] }, "m");
    expect(anthropic.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: thought, signature: SIGNATURE },
        { type: "text", text: "9.8 is larger than 9.11." },
      ],
    });
  });

  it("encrypted reasoning replays as a redacted_thinking block", () => {
    const replay = responsesToChat(
      request({
        model: "m",
        input: [
          { role: "user", content: "Q" },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [],
            encrypted_content: "opaque==",
            format: "anthropic-claude-v1",
          },
          { role: "assistant", content: "A" },
          { role: "user", content: "More" },
        ],
      }),
    );
    const anthropic = anthropicBody({ messages: replay.messages as ChatMessage[] }, "m");
    expect(anthropic.messages[1]!.content).toEqual([
      { type: "redacted_thinking", data: "opaque==" },
      { type: "text", text: "A" },
    ]);
  });

  it("two tool calls: each added -> arguments deltas -> done -> item done before the next; async tools marked", async () => {
    const req = request({
      model: "anthropic/claude-sonnet-4.5",
      input: "Weather in Tokyo?",
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" }, async: true }],
    });
    const { events, body } = both(req, await anthropicRun(toolsStream));
    const calls = body.output.filter((o) => o.type === "function_call");
    expect(calls.map((c) => c.call_id)).toEqual([
      "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      "toolu_01WbgqfE5Fq3kM8b9nZrX2aD",
    ]);
    for (const c of calls) expect(c).toMatchObject({ name: "get_weather", async: true, status: "completed" });
    const completed = events.at(-1) as Event & { response: typeof body };
    expect(completed.response.output).toEqual(body.output);
    const itemOf = (e: Event) => e.item_id ?? (e.item as { id?: string } | undefined)?.id;
    const order = events
      .filter((e) => calls.some((c) => c.id === itemOf(e)))
      .map((e) => `${e.type} ${itemOf(e)}`);
    for (const c of calls) {
      const own = order.filter((o) => o.endsWith(` ${c.id}`)).map((o) => o.split(" ")[0]);
      expect(own[0]).toBe("response.output_item.added");
      expect(own.slice(-2)).toEqual(["response.function_call_arguments.done", "response.output_item.done"]);
      const deltas = events.filter(
        (e) => e.type === "response.function_call_arguments.delta" && e.item_id === c.id,
      );
      expect(deltas.map((e) => e.delta).join("")).toBe(c.arguments);
    }
    // The first call is finished before the second is added.
    expect(order.indexOf(`response.output_item.done ${calls[0]!.id}`)).toBeLessThan(
      order.indexOf(`response.output_item.added ${calls[1]!.id}`),
    );
  });
  it("text, a call, more text, another call: four items in that order, in the JSON answer as in the stream", () => {
    const req = request({ model: "m", input: "Weather in Paris and Rome?" });
    const delta = (d: Record<string, unknown>, finish: string | null = null): ChatChunk =>
      ({ choices: [{ index: 0, delta: d, finish_reason: finish }] }) as unknown as ChatChunk;
    const call = (index: number, id: string, args: string) =>
      delta({
        tool_calls: [{ index, id, type: "function", function: { name: "get_weather", arguments: args } }],
      });
    const { events, body } = both(req, [
      delta({ role: "assistant", content: "Checking Paris." }),
      call(0, "call_paris", '{"city":"Paris"}'),
      delta({ content: "Now Rome." }),
      call(1, "call_rome", '{"city":"Rome"}'),
      delta({}, "tool_calls"),
    ]);
    const shape = (o: Record<string, unknown>) =>
      o.type === "message"
        ? `message ${(o.content as Array<{ text: string }>).map((p) => p.text).join("")}`
        : `${o.type} ${o.call_id}`;
    expect((body.output as Array<Record<string, unknown>>).map(shape)).toEqual([
      "message Checking Paris.",
      "function_call call_paris",
      "message Now Rome.",
      "function_call call_rome",
    ]);
    const completed = events.at(-1) as Event & { response: typeof body };
    expect(completed.response.output).toEqual(body.output);
  });
});
