// Presets from chat bodies (POST /presets/{slug}/chat/completions) and presets applied on POST /chat/completions:
// `@preset/<slug>`, `<model>@preset/<slug>` and `preset: <slug>`, where the request wins.
import { afterEach, describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { post, type StreamedCall } from "./helpers/media";
import { sdkFor as sdk } from "./helpers/sdk";

const slugOf = () => `chat-preset-${crypto.randomUUID().slice(0, 8)}`;
const hi = { role: "user" as const, content: "Hello there gateway" };

let pending: StreamedCall[] = [];
afterEach(async () => {
  await Promise.all(pending.map((p) => p.settled()));
  pending = [];
});

interface UpstreamBody {
  model: string;
  messages: Array<{ role: string; content: unknown }>;
  max_tokens?: number;
}

/** A streamed chat with `debug.echo_upstream_body`: what reached the upstream, and the model that served it. */
async function upstreamOf(key: string, body: Record<string, unknown>) {
  const sent = await post("/chat/completions", key, {
    ...body,
    stream: true,
    debug: { echo_upstream_body: true },
  });
  pending.push(sent);
  expect(sent.res.status).toBe(200);
  const chunks = (await sent.res.text())
    .split("\n\n")
    .filter((e) => e.startsWith("data: ") && e !== "data: [DONE]")
    .map((e) => JSON.parse(e.slice(6)) as { model: string; debug?: { echo_upstream_body: UpstreamBody } });
  return { upstream: chunks[0]!.debug!.echo_upstream_body, model: chunks.at(-1)!.model };
}

/** A preset made through the SDK from a chat body; answers the version the SDK parsed. */
async function chatPreset(managementKey: string, slug: string, chatRequest: Record<string, unknown>) {
  const res = await sdk(managementKey).presets.createPresetsChatCompletions({
    slug,
    chatRequest: { messages: [], ...chatRequest } as never,
  });
  return res.data;
}

describe("POST /presets/{slug}/chat/completions", () => {
  it("keeps the config fields, the system and developer messages as system prompt, nothing else", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const data = await chatPreset(acct.managementKey, slug, {
      model: "sandbox/chat-echo",
      models: ["sandbox/chat-reasoning"],
      temperature: 0.3,
      topP: 0.9,
      maxTokens: 7,
      responseFormat: { type: "json_object" },
      provider: { sort: "price" },
      messages: [
        { role: "system", content: "Be terse." },
        { role: "user", content: "never stored" },
        { role: "developer", content: "Answer in French." },
      ],
      stream: true,
      user: "end-user",
      metadata: { team: "a" },
    });
    expect(data.slug).toBe(slug);
    expect(data.workspaceId).toBe(acct.workspaceId);
    const version = data.designatedVersion!;
    expect(version.version).toBe(1);
    expect(data.designatedVersionId).toBe(version.id);
    expect(version.systemPrompt).toBe("Be terse.\n\nAnswer in French.");
    expect(version.config).toEqual({
      model: "sandbox/chat-echo",
      models: ["sandbox/chat-reasoning"],
      temperature: 0.3,
      top_p: 0.9,
      max_tokens: 7,
      response_format: { type: "json_object" },
      provider: { sort: "price" },
    });

    const next = await chatPreset(acct.managementKey, slug, { model: "sandbox/chat-reasoning" });
    expect(next.designatedVersion).toMatchObject({ version: 2, systemPrompt: null });
    expect(next.designatedVersion!.config).toEqual({ model: "sandbox/chat-reasoning" });
    const read = await sdk(acct.apiKey).presets.get({ slug });
    expect(read.data.designatedVersion?.version).toBe(2);
  });

  it.each([
    ["a preset as the model", { model: "@preset/other" }, "another preset"],
    ["a model under a preset", { model: "sandbox/chat-echo@preset/other" }, "another preset"],
    ["a preset among the fallbacks", { models: ["a/b", "@preset/other"] }, "cannot be a preset"],
    [
      "a preset as fusion's model",
      { model: "a/b", plugins: [{ id: "fusion", model: "@preset/other" }] },
      "another preset",
    ],
    [
      "a preset among fusion's analysis models",
      { model: "a/b", plugins: [{ id: "fusion", analysis_models: ["c/d", "x/y@preset/other"] }] },
      "another preset",
    ],
    ["temperature out of range", { temperature: 3 }, "temperature"],
    ["a message with an unknown role", { messages: [{ role: "robot", content: "x" }] }, undefined],
  ])("%s -> 400, nothing created", async (_name, body, message) => {
    const acct = await createAccount();
    const slug = slugOf();
    const res = await call(`/presets/${slug}/chat/completions`, {
      method: "POST",
      key: acct.managementKey,
      body,
    });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    if (message) expect(error.message).toContain(message);
    expect((await call(`/presets/${slug}`, { key: acct.managementKey })).status).toBe(404);
  });

  it("needs a management key", async () => {
    const acct = await createAccount();
    const res = await call(`/presets/${slugOf()}/chat/completions`, {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/chat-echo", messages: [] },
    });
    expect(res.status).toBe(403);
  });
});

describe("POST /chat/completions under a preset", () => {
  it.each([
    ["/chat/completions", { messages: [hi] }],
    ["/responses", { input: "hi" }],
    ["/embeddings", { input: "hi" }],
  ])(
    "%s: a preset among the fallback models is a 400 (it was applied in part, or skipped)",
    async (path, body) => {
      const acct = await createAccount({ creditsUsd: 5 });
      for (const models of [["@preset/any"], ["sandbox/chat-echo@preset/any"]]) {
        const res = await call(path, { method: "POST", key: acct.apiKey, body: { ...body, models } });
        expect(res.status, JSON.stringify(models)).toBe(400);
        expect((await errorOf(res)).message).toContain("cannot be a preset");
      }
    },
  );

  it("@preset/<slug>: the preset's model serves and its system prompt and config reach the upstream", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await chatPreset(acct.managementKey, slug, {
      model: "sandbox/chat-reasoning",
      maxTokens: 40,
      messages: [{ role: "system", content: "You are a pirate." }],
    });
    const { upstream, model } = await upstreamOf(acct.apiKey, { model: `@preset/${slug}`, messages: [hi] });
    expect(model).toBe("sandbox/chat-reasoning");
    expect(upstream.model).toBe("chat-reasoning");
    expect(upstream.max_tokens).toBe(40);
    expect(upstream.messages).toEqual([
      { role: "system", content: "You are a pirate." },
      { role: "user", content: hi.content },
    ]);

    // Through the SDK, not streamed: the answer names the preset's model and echoes the user's words.
    const answer = (await sdk(acct.apiKey).chat.send({
      chatRequest: { model: `@preset/${slug}`, messages: [hi] },
    })) as unknown as { model: string; choices: Array<{ message: { content: string } }> };
    expect(answer.model).toBe("sandbox/chat-reasoning");
    expect(answer.choices[0]!.message.content).toContain("Hello there gateway");
  });

  it("the generation names the preset it ran under, on chat, responses and messages alike", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    const preset = await chatPreset(acct.managementKey, slug, { model: "sandbox/chat-echo" });
    const presetOf = async (path: string, body: Record<string, unknown>) => {
      const sent = await post(path, acct.apiKey, body);
      expect(sent.res.status).toBe(200);
      await sent.res.text();
      await sent.settled();
      const { data } = await sdk(acct.apiKey).generations.getGeneration({
        id: sent.res.headers.get("x-generation-id")!,
      });
      return data.presetId;
    };
    expect(await presetOf("/chat/completions", { model: `@preset/${slug}`, messages: [hi] })).toBe(preset.id);
    expect(await presetOf("/responses", { preset: slug, input: "Hello" })).toBe(preset.id);
    expect(
      await presetOf("/messages", {
        model: `sandbox/chat-echo@preset/${slug}`,
        max_tokens: 16,
        messages: [hi],
      }),
    ).toBe(preset.id);
    expect(await presetOf("/chat/completions", { model: "sandbox/chat-echo", messages: [hi] })).toBeNull();

    // On embeddings only a preset's routing applies; the record names it all the same.
    const embedSlug = slugOf();
    const made = await call(`/presets/${embedSlug}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: { model: "sandbox/embed-small" },
    });
    expect(made.status).toBe(200);
    const { data: embedPreset } = (await made.json()) as { data: { id: string } };
    expect(await presetOf("/embeddings", { model: `@preset/${embedSlug}`, input: "hello" })).toBe(
      embedPreset.id,
    );
  });

  it("the request wins: its fields over the preset's, its own system message instead of the preset's", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await chatPreset(acct.managementKey, slug, {
      model: "sandbox/chat-echo",
      maxTokens: 40,
      messages: [{ role: "system", content: "You are a pirate." }],
    });
    const { upstream } = await upstreamOf(acct.apiKey, {
      model: `@preset/${slug}`,
      max_tokens: 12,
      messages: [{ role: "developer", content: "You are a butler." }, hi],
    });
    expect(upstream.max_tokens).toBe(12);
    expect(upstream.messages).toEqual([
      { role: "developer", content: "You are a butler." },
      { role: "user", content: hi.content },
    ]);
  });

  it("<model>@preset/<slug>: the named model serves, the preset supplies the rest", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await chatPreset(acct.managementKey, slug, {
      model: "sandbox/chat-echo",
      maxTokens: 33,
      messages: [{ role: "system", content: "You are a pirate." }],
    });
    const { upstream, model } = await upstreamOf(acct.apiKey, {
      model: `sandbox/chat-reasoning@preset/${slug}`,
      messages: [hi],
    });
    expect(model).toBe("sandbox/chat-reasoning");
    expect(upstream.max_tokens).toBe(33);
    expect(upstream.messages[0]).toEqual({ role: "system", content: "You are a pirate." });
  });

  it("preset: <slug> applies the preset; a model sent beside it wins", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await chatPreset(acct.managementKey, slug, {
      model: "sandbox/chat-reasoning",
      maxTokens: 21,
      messages: [{ role: "system", content: "You are a pirate." }],
    });
    const alone = await upstreamOf(acct.apiKey, { preset: slug, messages: [hi] });
    expect(alone.model).toBe("sandbox/chat-reasoning");
    expect(alone.upstream.max_tokens).toBe(21);
    expect(alone.upstream.messages[0]).toEqual({ role: "system", content: "You are a pirate." });
    const beside = await upstreamOf(acct.apiKey, {
      preset: slug,
      model: "sandbox/chat-echo",
      messages: [hi],
    });
    expect(beside.model).toBe("sandbox/chat-echo");
    expect(beside.upstream.max_tokens).toBe(21);
  });

  it("a preset made from a responses body applies too: instructions and max_output_tokens", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await sdk(acct.managementKey).presets.createPresetsResponses({
      slug,
      responsesRequest: { model: "sandbox/chat-echo", instructions: "Be brief.", maxOutputTokens: 17 },
    });
    const { upstream, model } = await upstreamOf(acct.apiKey, { model: `@preset/${slug}`, messages: [hi] });
    expect(model).toBe("sandbox/chat-echo");
    expect(upstream.max_tokens).toBe(17);
    expect(upstream.messages[0]).toEqual({ role: "system", content: "Be brief." });
  });

  it("a preset made from a chat body lends its max_tokens to responses: the response object says so", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    await chatPreset(acct.managementKey, slug, { model: "sandbox/chat-echo", maxTokens: 3 });
    const answer = (await sdk(acct.apiKey).responses.send({
      responsesRequest: { model: `@preset/${slug}`, input: "one two three four five six seven" },
    })) as unknown as { maxOutputTokens: number | null; status: string; usage: { outputTokens: number } };
    expect(answer.maxOutputTokens).toBe(3);
    // The limit reached the upstream: the echo stopped at 3 tokens, incomplete.
    expect(answer.usage.outputTokens).toBe(3);
    expect(answer.status).toBe("incomplete");
  });

  it("a stored field chat cannot take is a 400 naming the preset, not dropped", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = slugOf();
    const made = await call(`/presets/${slug}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: { model: "sandbox/chat-echo", tools: [{ type: "function", name: "lookup", parameters: {} }] },
    });
    expect(made.status).toBe(200);
    const { res } = await post("/chat/completions", acct.apiKey, {
      model: `@preset/${slug}`,
      messages: [hi],
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(new RegExp(`Preset '${slug}'.*tools`));
  });

  it("an unknown preset, or another workspace's, is 404 in every form; naming two presets is 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const other = await createAccount({ creditsUsd: 5 });
    const theirs = slugOf();
    await chatPreset(other.managementKey, theirs, { model: "sandbox/chat-echo" });
    for (const slug of [slugOf(), theirs]) {
      for (const form of [
        { model: `@preset/${slug}` },
        { model: `sandbox/chat-echo@preset/${slug}` },
        { preset: slug },
      ]) {
        const { res } = await post("/chat/completions", acct.apiKey, { ...form, messages: [hi] });
        expect(res.status).toBe(404);
        expect((await errorOf(res)).message).toContain(`Preset '${slug}' not found`);
      }
    }
    const { res } = await post("/chat/completions", acct.apiKey, {
      preset: theirs,
      model: `@preset/${theirs}`,
      messages: [hi],
    });
    expect(res.status).toBe(400);
  });
});

describe("OpenAPI document", () => {
  it("describes POST /presets/{slug}/chat/completions with its own request schema", async () => {
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths).toHaveProperty(["/api/v1/presets/{slug}/chat/completions"]);
    expect(doc.components.schemas).toHaveProperty("PresetChatRequest");
    expect(doc.components.schemas).toHaveProperty("ChatRequest");
  });
});
