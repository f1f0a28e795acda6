// Upstream chat streams of tool calls in the shapes real hosts send that once broke the gateway, built
// from a test's own chunk writer (its model and ids).

export type ChunkWriter = (delta: unknown, finish?: string | null) => string;

/** Both calls' heads first, then their arguments in turn: get_weather {"city":"Paris"}, get_time {"tz":"UTC"}. */
export function interleavedToolCalls(chunk: ChunkWriter): string {
  return [
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [
        { index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } },
      ],
    }),
    chunk({
      tool_calls: [
        { index: 1, id: "call_b", type: "function", function: { name: "get_time", arguments: "" } },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '"UTC"}' } }] }),
    chunk({}, "tool_calls"),
    "data: [DONE]\n\n",
  ].join("");
}

/** One call whose id and name come again on every chunk (Fireworks, some NIM hosts): get_weather {"city":"Paris"}. */
export function repeatedHeadToolCall(chunk: ChunkWriter): string {
  const head = { index: 0, id: "call_a", type: "function" };
  return [
    chunk({ role: "assistant", tool_calls: [{ ...head, function: { name: "get_weather", arguments: "" } }] }),
    chunk({ tool_calls: [{ ...head, function: { name: "get_weather", arguments: '{"city":' } }] }),
    chunk({ tool_calls: [{ ...head, function: { name: "get_weather", arguments: '"Paris"}' } }] }),
    chunk({}, "tool_calls"),
    "data: [DONE]\n\n",
  ].join("");
}

/** Two calls under one index, one after the other (Ollama gives every call index 0). */
export function sameIndexToolCalls(chunk: ChunkWriter): string {
  const call = (fields: Record<string, unknown>) => chunk({ tool_calls: [{ index: 0, ...fields }] });
  return [
    call({ id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }),
    call({ function: { arguments: '{"city":"Paris"}' } }),
    call({ id: "call_b", type: "function", function: { name: "get_time", arguments: "" } }),
    call({ function: { arguments: '{"tz":"UTC"}' } }),
    chunk({}, "tool_calls"),
    "data: [DONE]\n\n",
  ].join("");
}
