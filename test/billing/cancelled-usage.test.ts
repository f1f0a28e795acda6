// A stream the client leaves before its final usage is billed for what is known: the prompt as the
// upstream counted it when it said so early (Anthropic's message_start), else the estimate; the output
// from its text. A probe had 25,000 reported prompt tokens billed as 3,348 estimated ones.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import app from "../../src/app";
import { getDb, tables } from "../../src/db/client";
import { addByok, createAccount } from "../helpers/accounts";
import { BASE } from "../helpers/http";
import { mockUpstream } from "../helpers/upstream";

let restore: (() => void) | undefined;
afterEach(() => restore?.());

/** An SSE body that sends `head` at once, then nothing more (the model still writing). */
function stalledSse(head: string): Response {
  const bytes = new TextEncoder().encode(head);
  const body = new ReadableStream<Uint8Array>({
    start: (c) => c.enqueue(bytes),
    pull: () => new Promise(() => {}),
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}
const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Streams a chat answer, reads its first bytes, leaves, and returns the generation record. */
async function leaveEarly(key: string, body: unknown) {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`${BASE}/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
    { ...env, REGION: "global" },
    ctx,
  );
  expect(res.status).toBe(200);
  const id = res.headers.get("x-generation-id")!;
  const reader = res.body!.getReader();
  await reader.read();
  await reader.cancel();
  await waitOnExecutionContext(ctx);
  return (await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)))[0]!;
}

describe("a stream the client leaves before its usage", () => {
  it("bills the prompt Anthropic counted in message_start, cache writes included, not the estimate", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "anthropic", "sk-ant-user-key");
    const upstream = mockUpstream({
      "POST api.anthropic.com/v1/messages": () =>
        stalledSse(
          event("message_start", {
            message: {
              id: "msg_1",
              type: "message",
              role: "assistant",
              model: "claude-sonnet-4",
              content: [],
              stop_reason: null,
              usage: { input_tokens: 25_000, cache_creation_input_tokens: 1_000, output_tokens: 1 },
            },
          }) +
            event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
            event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Key points:" } }),
        ),
    });
    restore = upstream.restore;
    const record = await leaveEarly(acct.apiKey, {
      model: "anthropic/claude-sonnet-4",
      stream: true,
      max_tokens: 100,
      // About 3,300 tokens by the estimate (three characters a token).
      messages: [{ role: "user", content: "龘靐齉麤".repeat(2_500) }],
    });
    expect(record.status).toBe("cancelled");
    expect(record.usage).toMatchObject({
      prompt_tokens: 26_000,
      cache_write_tokens: 1_000,
      completion_tokens: 3,
      estimated: 1,
    });
    // $3 per million input tokens and $3.75 per million cache writes, at the least.
    expect(record.costMicros).toBeGreaterThanOrEqual(25_000 * 3 + 1_000 * 3.75);
  });

  it("bills the estimate where the upstream said nothing of the prompt yet", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const chunk = `data: ${JSON.stringify({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "gpt-4.1-mini",
      choices: [{ index: 0, delta: { role: "assistant", content: "The answer is" }, finish_reason: null }],
    })}\n\n`;
    const upstream = mockUpstream({ "POST api.openai.com/v1/chat/completions": () => stalledSse(chunk) });
    restore = upstream.restore;
    const record = await leaveEarly(acct.apiKey, {
      model: "openai/gpt-4.1-mini",
      stream: true,
      messages: [{ role: "user", content: "x".repeat(3_000) }],
    });
    expect(record.status).toBe("cancelled");
    expect(record.usage).toMatchObject({ completion_tokens: 4, estimated: 1 });
    // About 4 characters a token of the messages' JSON (3,000 characters: 750 and framing), as common
    // tokenizers count English: a cut answer is not billed above a whole one.
    const prompt = (record.usage as { prompt_tokens: number }).prompt_tokens;
    expect(prompt).toBeGreaterThanOrEqual(750);
    expect(prompt).toBeLessThan(800);
  });
});
