// Token log probabilities reach the client of a JSON chat answer as they reach a streaming one: the
// folded lists of choice 0, or null as OpenAI answers when there are none (they were dropped before).
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { addByok, createAccount } from "../helpers/accounts";
import { BASE, workerFetch } from "../helpers/http";
import { mockUpstream } from "../helpers/upstream";

let restore: (() => void) | undefined;
afterEach(() => restore?.());

const token = (t: string, logprob: number) => ({ token: t, logprob, bytes: null, top_logprobs: [] });

function chunk(content: string | null, logprobs: unknown, finish: string | null = null) {
  return `data: ${JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-4.1-mini",
    choices: [{ index: 0, delta: content === null ? {} : { content }, logprobs, finish_reason: finish }],
  })}\n\n`;
}

describe("logprobs on a JSON chat answer", () => {
  it("joins each chunk's lists into the answer's choice, as the openai SDK reads it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-user-openai-key");
    const sse = [
      chunk("Hel", { content: [token("Hel", -0.1)], refusal: null }),
      chunk("lo", { content: [token("lo", -0.2)], refusal: null }),
      chunk(null, null, "stop"),
      `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`,
      "data: [DONE]\n\n",
    ].join("");
    const upstream = mockUpstream({
      "POST api.openai.com/v1/chat/completions": () =>
        new Response(sse, { headers: { "Content-Type": "text/event-stream" } }),
    });
    restore = upstream.restore;
    const client = new OpenAI({ apiKey: acct.apiKey, baseURL: BASE, fetch: workerFetch(), maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
      logprobs: true,
    });
    expect(answer.choices[0]!.message.content).toBe("Hello");
    expect(answer.choices[0]!.logprobs?.content?.map((t) => [t.token, t.logprob])).toEqual([
      ["Hel", -0.1],
      ["lo", -0.2],
    ]);

    // None sent: the key is there, null.
    const plain = `${chunk("Hi", undefined)}${chunk(null, undefined, "stop")}data: [DONE]\n\n`;
    restore();
    restore = mockUpstream({
      "POST api.openai.com/v1/chat/completions": () =>
        new Response(plain, { headers: { "Content-Type": "text/event-stream" } }),
    }).restore;
    const without = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(without.choices[0]).toHaveProperty("logprobs", null);
  });
});
