// Presets: creation and versioning from a responses body, reads through the SDK, validation and isolation.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { getDb } from "../src/db/client";
import { applyPreset, presetRefOf, resolvePreset } from "../src/db/presets";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor as sdk } from "./helpers/sdk";

const slugOf = () => `preset-${crypto.randomUUID().slice(0, 8)}`;

describe("POST /presets/{slug}/responses", () => {
  it("creates version 1 with only the config fields, instructions as system prompt", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const res = await sdk(acct.managementKey).presets.createPresetsResponses({
      slug,
      responsesRequest: {
        model: "openai/gpt-4o",
        temperature: 0.3,
        topP: 0.9,
        instructions: "Be terse.",
        input: "hello there",
        stream: true,
        metadata: { team: "a" },
        plugins: [{ id: "auto-router", allowedModels: ["openai/*"], costTier: "low", enabled: false }],
      },
    });
    expect(res.data.slug).toBe(slug);
    expect(res.data.status).toBe("active");
    expect(res.data.workspaceId).toBe(acct.workspaceId);
    const version = res.data.designatedVersion!;
    expect(version.version).toBe(1);
    expect(res.data.designatedVersionId).toBe(version.id);
    expect(version.systemPrompt).toBe("Be terse.");
    expect(version.config).toEqual({
      model: "openai/gpt-4o",
      temperature: 0.3,
      top_p: 0.9,
      plugins: [{ id: "auto-router", allowed_models: ["openai/*"], cost_tier: "low", enabled: false }],
      service_tier: "auto",
    });
  });

  it("ignores fields outside the responses object and the non-config ones", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const res = await call(`/presets/${slug}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: { model: "m/x", messages: [{ role: "user", content: "hi" }], prompt: { id: "p" }, user: "u1" },
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { designated_version: { config: unknown } } };
    expect(data.designated_version.config).toEqual({ model: "m/x" });
  });

  it("refuses a config the responses route would refuse (400) and stores nothing", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    for (const body of [
      { model: "sandbox/chat-reasoning", reasoning: { effort: "bogus" } },
      { model: "sandbox/chat-reasoning", reasoning: { max_tokens: -5 } },
      { model: "m/x", text: { format: { type: "bogus" } } },
      { model: "m/x", text: { verbosity: "loud" } },
      { model: "m/x", tool_choice: { type: "function" } },
      // Server tools: the responses route runs function tools only.
      { model: "m/x", tools: [{ type: "web_search" }] },
      // A plugin the gateway does not run, switched on: every request would be refused.
      { model: "m/x", plugins: [{ id: "web" }] },
    ]) {
      const res = await call(`/presets/${slug}/responses`, { method: "POST", key: acct.managementKey, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await errorOf(res)).message).toMatch(/reasoning|text|tool_choice|tools|plugin/);
    }
    expect((await call(`/presets/${slug}`, { key: acct.managementKey })).status).toBe(404);
    // The same fields, well-formed, are stored; a preset may leave the model to the request.
    const ok = await call(`/presets/${slug}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: { reasoning: { effort: "low" }, text: { verbosity: "low" }, tool_choice: "auto" },
    });
    expect(ok.status).toBe(200);
  });

  it("appends and designates a new version for an existing slug", async () => {
    const acct = await createAccount();
    const client = sdk(acct.managementKey);
    const slug = slugOf();
    await client.presets.createPresetsResponses({ slug, responsesRequest: { model: "a/one" } });
    const second = await client.presets.createPresetsResponses({
      slug,
      responsesRequest: { model: "a/two", serviceTier: "fast" },
    });
    expect(second.data.designatedVersion?.version).toBe(2);
    expect(second.data.designatedVersion?.config).toEqual({ model: "a/two", service_tier: "priority" });

    const got = await client.presets.get({ slug });
    expect(got.data.designatedVersionId).toBe(second.data.designatedVersion?.id);
    const versions = await client.presets.listVersions({ slug });
    expect(versions.result.totalCount).toBe(2);
    expect(versions.result.data.map((v) => v?.version)).toEqual([2, 1]);
    const first = await client.presets.getVersion({ slug, version: "1" });
    expect(first.data?.config).toEqual({ model: "a/one", service_tier: "auto" });
  });

  it("gives N parallel posts consecutive versions with no duplicates or gaps", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const n = 12;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        call(`/presets/${slug}/responses`, { method: "POST", key: acct.managementKey, body: { top_k: i } }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    for (const r of results) expect([200, 409]).toContain(r.status);
    const versions = await Promise.all(
      ok.map(async (r) => ((await r.json()) as { data: { designated_version: { version: number } } }).data),
    );
    const numbers = versions.map((d) => d.designated_version.version).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: ok.length }, (_, i) => i + 1));
    const listed = await sdk(acct.managementKey).presets.listVersions({ slug, limit: 100 });
    expect(listed.result.totalCount).toBe(ok.length);
    const latest = await sdk(acct.managementKey).presets.get({ slug });
    expect(latest.data.designatedVersion?.version).toBe(ok.length);
  });

  it("accepts the full range of valid fields", async () => {
    const acct = await createAccount();
    const res = await call(`/presets/${slugOf()}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: {
        model: "x/y",
        models: ["x/z"],
        max_output_tokens: 100,
        max_tool_calls: 30,
        metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v".repeat(512)])),
        session_id: "s".repeat(256),
        user: "u".repeat(256),
        store: false,
        previous_response_id: null,
        include: ["reasoning.encrypted_content"],
        modalities: ["text", "image"],
        cache_control: { type: "ephemeral", ttl: "1h" },
        debug: { echo_upstream_body: true },
        input: [
          { role: "user", content: "hi" },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "yo" }] },
          { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "42" },
          { type: "item_reference", id: "ref_1" },
          { type: "svc:web_search", id: "ws_1", status: "completed" },
        ],
        plugins: [
          // Plugins the gateway does not run are stored only switched off (see the test below).
          {
            id: "fusion",
            analysis_models: Array.from({ length: 8 }, (_, i) => `m/${i}`),
            max_tool_calls: 16,
            enabled: false,
          },
          { id: "auto-beta-router", excluded_models: ["*:free"], cost_quality_tradeoff: 10, enabled: false },
          { id: "file-parser", pdf: { engine: "cloudflare-ai" }, enabled: false },
          { id: "context-compression", engine: "middle-out" },
          { id: "web", max_results: 3, enabled: false },
        ],
        tools: [
          { type: "function", name: "lookup", parameters: { type: "object" }, async: true },
          { type: "function", name: "rare", parameters: null, defer_loading: true },
        ],
      },
    });
    expect(res.status, await res.clone().text()).toBe(200);
  });
});

describe("POST /presets/{slug}/responses rejects bad input and changes nothing", () => {
  const many = (n: number, len: number) => Array.from({ length: n }, (_, i) => `${i}`.padEnd(len, "x"));
  const cases: Array<[string, Record<string, unknown>, string?]> = [
    ["17 metadata pairs", { metadata: Object.fromEntries(many(17, 2).map((k) => [k, "v"])) }, "16 pairs"],
    ["metadata key over 64", { metadata: { ["k".repeat(65)]: "v" } }, "64"],
    ["metadata key with brackets", { metadata: { "a[b]": "v" } }, "brackets"],
    ["metadata value over 512", { metadata: { k: "v".repeat(513) } }, "512"],
    ["session_id over 256", { session_id: "s".repeat(257) }, "session_id"],
    ["user over 256", { user: "u".repeat(257) }, "user"],
    ["max_tool_calls over 30", { max_tool_calls: 31 }, "30"],
    ["store true", { store: true }, "store must be false"],
    ["previous_response_id", { previous_response_id: "resp_123" }, "`input`"],
    ["unknown include", { include: ["everything"] }],
    ["unknown service tier", { service_tier: "turbo" }],
    ["unknown modality", { modalities: ["audio"] }],
    ["cache_control without type", { cache_control: { ttl: "5m" } }],
    ["cache_control of another type", { cache_control: { type: "persistent" } }, "ephemeral"],
    ["debug with unknown field", { debug: { echo: true } }],
    ["temperature out of range", { temperature: 3 }],
    ["top_k not an integer", { top_k: 1.5 }],
    ["unknown input item type", { input: [{ type: "teleport" }] }, "teleport"],
    ["message with a bad role", { input: [{ role: "robot", content: "x" }] }],
    ["function_call without call_id", { input: [{ type: "function_call", name: "f", arguments: "{}" }] }],
    ["unknown plugin id", { plugins: [{ id: "telepathy" }] }],
    ["duplicate plugin", { plugins: [{ id: "moderation" }, { id: "moderation" }] }, "once"],
    ["1025 router patterns", { plugins: [{ id: "auto-router", allowed_models: many(1025, 3) }] }, "1024"],
    ["router pattern over 1024", { plugins: [{ id: "auto-router", excluded_models: ["a".repeat(1025)] }] }],
    [
      "router patterns over 65536 total",
      { plugins: [{ id: "auto-router", allowed_models: many(65, 1024) }] },
      "65536",
    ],
    ["router pattern with spaces", { plugins: [{ id: "auto-router", allowed_models: ["open ai/*"] }] }],
    ["unknown cost tier", { plugins: [{ id: "auto-router", cost_tier: "ultra" }] }],
    ["cost_quality_tradeoff 11", { plugins: [{ id: "auto-router", cost_quality_tradeoff: 11 }] }],
    ["pin_model on auto-beta-router", { plugins: [{ id: "auto-beta-router", pin_model: true }] }],
    ["9 fusion analysis models", { plugins: [{ id: "fusion", analysis_models: many(9, 3) }] }, "8"],
    ["0 fusion analysis models", { plugins: [{ id: "fusion", analysis_models: [] }] }],
    ["fusion max_tool_calls 0", { plugins: [{ id: "fusion", max_tool_calls: 0 }] }],
    ["fusion max_tool_calls 17", { plugins: [{ id: "fusion", max_tool_calls: 17 }] }],
    ["unknown fusion preset", { plugins: [{ id: "fusion", preset: "general-best" }] }],
    ["unknown pdf engine", { plugins: [{ id: "file-parser", pdf: { engine: "magic" } }] }],
    [
      "every tool deferred",
      { tools: [{ type: "function", name: "a", parameters: {}, defer_loading: true }] },
      "defer_loading",
    ],
    ["function tool with a bad name", { tools: [{ type: "function", name: "has space", parameters: {} }] }],
    [
      "duplicate function names",
      {
        tools: [
          { type: "function", name: "a" },
          { type: "function", name: "a" },
        ],
      },
    ],
    ["unknown service tool", { tools: [{ type: "svc:teleport" }] }],
    ["SDK-style service tool prefix", { tools: [{ type: "openrouter:web_search" }] }],
    ["custom tool without name", { tools: [{ type: "custom" }] }],
    // What inference would refuse, a preset never stores (each option below changes what is billed).
    [
      "a provider option the gateway sets",
      { provider: { options: { sandbox: { n: 8 } } } },
      "provider.options.sandbox.n",
    ],
    [
      "max_tokens as a provider option",
      { provider: { options: { openai: { max_tokens: 9 } } } },
      "max_tokens",
    ],
    ["an unknown provider sort", { provider: { sort: "vibes" } }, "provider.sort"],
    ["a preset as the model", { model: "@preset/other" }, "another preset"],
    ["a preset among the fallbacks", { models: ["a/b", "@preset/other"] }, "cannot be a preset"],
    // D1 would store U+FFFD, so the preset read back would not be the one sent.
    ["instructions with a lone surrogate", { instructions: "be \ud800 brief" }, "unpaired surrogate"],
    [
      "a tool description with a lone surrogate",
      { tools: [{ type: "function", name: "f", description: "\udc00" }] },
      "unpaired surrogate",
    ],
  ];

  it.each(cases)("%s -> 400", async (_name, body, message) => {
    const acct = await createAccount();
    const slug = slugOf();
    const res = await call(`/presets/${slug}/responses`, { method: "POST", key: acct.managementKey, body });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    if (message) expect(error.message).toContain(message);
    expect((await call(`/presets/${slug}`, { key: acct.managementKey })).status).toBe(404);
  });

  it("rejects a slug that is not URL-safe", async () => {
    const acct = await createAccount();
    const res = await call("/presets/bad%20slug/responses", {
      method: "POST",
      key: acct.managementKey,
      body: {},
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("URL-safe");
  });

  it("rejects an absent or non-JSON body", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    expect(
      (await call(`/presets/${slug}/responses`, { method: "POST", key: acct.managementKey })).status,
    ).toBe(400);
    const bad = await call(`/presets/${slug}/responses`, {
      method: "POST",
      key: acct.managementKey,
      body: "{oops",
    });
    expect(bad.status).toBe(400);
    expect((await call(`/presets/${slug}`, { key: acct.managementKey })).status).toBe(404);
  });

  it("requires a management key to create, any key to read", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const denied = await call(`/presets/${slug}/responses`, { method: "POST", key: acct.apiKey, body: {} });
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).message).toContain("management keys");
    await sdk(acct.managementKey).presets.createPresetsResponses({
      slug,
      responsesRequest: { model: "a/b" },
    });
    const read = await sdk(acct.apiKey).presets.get({ slug });
    expect(read.data.designatedVersion?.config).toMatchObject({ model: "a/b" });
  });
});

describe("reading presets", () => {
  it("lists the workspace's presets with a total and pages", async () => {
    const acct = await createAccount();
    const client = sdk(acct.managementKey);
    const slugs = [slugOf(), slugOf(), slugOf()];
    for (const slug of slugs) await client.presets.createPresetsResponses({ slug, responsesRequest: {} });
    const page = await client.presets.list({ limit: 2 });
    expect(page.result.totalCount).toBe(3);
    expect(page.result.data).toHaveLength(2);
    const rest = await client.presets.list({ offset: 2, limit: 2 });
    expect(rest.result.data).toHaveLength(1);
    const seen = [...page.result.data, ...rest.result.data].map((p) => p.slug).sort();
    expect(seen).toEqual([...slugs].sort());
  });

  it("answers 404 for unknown presets and versions, 400 for a bad version", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    expect((await call(`/presets/${slug}`, { key: acct.apiKey })).status).toBe(404);
    expect((await call(`/presets/${slug}/versions`, { key: acct.apiKey })).status).toBe(404);
    await sdk(acct.managementKey).presets.createPresetsResponses({ slug, responsesRequest: {} });
    expect((await call(`/presets/${slug}/versions/2`, { key: acct.apiKey })).status).toBe(404);
    expect((await call(`/presets/${slug}/versions/zero`, { key: acct.apiKey })).status).toBe(400);
    expect((await call(`/presets/${slug}/versions/0`, { key: acct.apiKey })).status).toBe(400);
    for (const odd of ["0x1", "1e0", "01", "1.0", "%201"]) {
      expect((await call(`/presets/${slug}/versions/${odd}`, { key: acct.apiKey })).status, odd).toBe(400);
    }
    expect((await call("/presets?limit=101", { key: acct.apiKey })).status).toBe(400);
  });

  it("keeps accounts apart: another account's preset is 404 and its posts create its own", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const slug = slugOf();
    await sdk(a.managementKey).presets.createPresetsResponses({ slug, responsesRequest: { model: "a/a" } });
    for (const path of [`/presets/${slug}`, `/presets/${slug}/versions`, `/presets/${slug}/versions/1`]) {
      const res = await call(path, { key: b.managementKey });
      expect(res.status, path).toBe(404);
      await errorOf(res);
    }
    expect((await sdk(b.managementKey).presets.list({})).result.totalCount).toBe(0);
    const own = await sdk(b.managementKey).presets.createPresetsResponses({
      slug,
      responsesRequest: { model: "b/b" },
    });
    expect(own.data.designatedVersion?.version).toBe(1);
    const mine = await sdk(a.managementKey).presets.get({ slug });
    expect(mine.data.designatedVersion?.config).toEqual({ model: "a/a", service_tier: "auto" });
    expect((await sdk(a.managementKey).presets.listVersions({ slug })).result.totalCount).toBe(1);
  });
});

describe("@preset/<slug> resolution", () => {
  it("resolves the designated version and applies it under a request", async () => {
    const acct = await createAccount();
    const slug = slugOf();
    const client = sdk(acct.managementKey);
    await client.presets.createPresetsResponses({ slug, responsesRequest: { model: "a/old" } });
    await client.presets.createPresetsResponses({
      slug,
      responsesRequest: { model: "a/new", temperature: 0.2, topK: 5, instructions: "Sys" },
    });
    expect(presetRefOf(`@preset/${slug}`)).toEqual({ slug, model: null });
    expect(presetRefOf("openai/gpt-4o")).toBeNull();
    const db = getDb(env.DB);
    const preset = await resolvePreset(db, acct.workspaceId, slug);
    expect(preset).toMatchObject({ slug, version: 2, systemPrompt: "Sys" });
    expect(applyPreset(preset!, { model: `@preset/${slug}`, temperature: 0.9, input: "hi" })).toEqual({
      model: "a/new",
      temperature: 0.9,
      top_k: 5,
      service_tier: "auto",
      input: "hi",
      instructions: "Sys",
    });
    const other = await createAccount();
    expect(await resolvePreset(db, other.workspaceId, slug)).toBeNull();
  });
});

describe("OpenAPI document", () => {
  it("describes the presets routes and the responses request", async () => {
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, unknown> };
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/api/v1/presets/{slug}/responses",
        "/api/v1/presets/{slug}/versions/{version}",
      ]),
    );
    expect(doc.components.schemas).toHaveProperty("ResponsesRequest");
  });
});
