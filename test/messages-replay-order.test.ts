// A Messages client's assistant turn with thinking interleaved among its tool calls is replayed to an
// Anthropic upstream in the order it was sent (Anthropic verifies a turn's thinking where it stood); a turn
// in the usual order carries no `block_order`, and no other upstream is ever sent one.
import { describe, expect, it } from "vitest";
import text from "./fixtures/anthropic/text.sse?raw";
import { addByok, createAccount } from "./helpers/accounts";
import { ANTHROPIC_MESSAGES, gatewayHarness, sse } from "./helpers/anthropic-gateway";
import { chatCompletionBody, json } from "./helpers/upstream";

const { upstream, post } = gatewayHarness();

const weather = {
  name: "get_weather",
  input_schema: { type: "object", properties: { city: { type: "string" } } },
};
const toolUse = (id: string, city: string) => ({
  type: "tool_use",
  id,
  name: "get_weather",
  input: { city },
});
const thinking = (n: number) => ({ type: "thinking", thinking: `step ${n}`, signature: `sig-${n}==` });

/** A conversation whose second turn is the assistant's, with `content` as its blocks. */
const conversation = (content: unknown[]) => [
  { role: "user", content: "Weather in Paris and Rome?" },
  { role: "assistant", content },
  {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "toolu_a", content: "18C" },
      { type: "tool_result", tool_use_id: "toolu_b", content: "24C" },
    ],
  },
];

const body = (content: unknown[], model = "anthropic/claude-sonnet-4") => ({
  model,
  max_tokens: 4096,
  thinking: { type: "enabled", budget_tokens: 2048 },
  tools: [weather],
  messages: conversation(content),
});

describe("replaying an assistant turn to Anthropic", () => {
  it("keeps thinking -> tool_use -> thinking -> tool_use -> text as sent, signatures byte for byte", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC_MESSAGES]: sse(text) });
    const turn = [
      thinking(1),
      toolUse("toolu_a", "Paris"),
      { type: "redacted_thinking", data: "opaque==" },
      toolUse("toolu_b", "Rome"),
      { type: "text", text: "Checking both." },
    ];
    const { res, settled } = await post("/messages", acct.apiKey, body(turn));
    expect(res.status).toBe(200);
    await res.text();
    await settled();
    const sent = mock.requests[0]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages[1]).toEqual({ role: "assistant", content: turn });
    expect(JSON.stringify(sent)).not.toContain("block_order");
  });

  it("a turn already in the usual order is sent as it was, without a block_order", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const mock = upstream({ [ANTHROPIC_MESSAGES]: sse(text) });
    const turn = [
      thinking(1),
      { type: "text", text: "Checking." },
      toolUse("toolu_a", "Paris"),
      toolUse("toolu_b", "Rome"),
    ];
    const { res, settled } = await post("/messages", acct.apiKey, body(turn));
    await res.text();
    await settled();
    const sent = mock.requests[0]!.body as { messages: Array<{ content: unknown }> };
    expect(sent.messages[1]!.content).toEqual(turn);
  });

  it("an OpenAI upstream of the same conversation is sent no block_order (nor the reasoning)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const mock = upstream({
      "POST api.openai.com/v1/chat/completions": () => json(chatCompletionBody(9, "Done")),
    });
    const turn = [thinking(1), toolUse("toolu_a", "Paris"), thinking(2), toolUse("toolu_b", "Rome")];
    const { res, settled } = await post("/messages", acct.apiKey, body(turn, "openai/gpt-4.1-mini"));
    await res.text();
    await settled();
    expect(mock.requests).toHaveLength(1);
    const sent = JSON.stringify(mock.requests[0]!.body);
    expect(sent).not.toContain("block_order");
    expect(sent).not.toContain("reasoning_details");
    expect(sent).toContain("toolu_b");
  });
});
