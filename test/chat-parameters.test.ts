// Sampling parameters against the catalog's list of what each endpoint honours: one an endpoint does not
// list is not sent to it (a strict upstream would refuse the whole request), and under
// `provider.require_parameters` such an endpoint is not tried at all.
import { describe, expect, it } from "vitest";
import { openAiChatBody } from "../src/providers/openai-compatible/chat";
import textStream from "./fixtures/openai/chat-text.sse?raw";
import responsesStream from "./fixtures/openai/responses-text.sse?raw";
import { createAccount } from "./helpers/accounts";
import { gatewayHarness, sse } from "./helpers/anthropic-gateway";
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
