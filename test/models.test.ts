// Model discovery through @openrouter/sdk: its parsers prove the shapes; the catalog decides the content.
import { describe, expect, it } from "vitest";
import { usdString } from "../src/routes/model-shapes";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor } from "./helpers/sdk";

describe("model discovery", () => {
  it("GET /models lists every modality with SDK-parseable entries", async () => {
    const acct = await createAccount();
    const out = (await sdkFor(acct.apiKey).models.list()).result;
    const ids = out.data.map((m) => m.id);
    expect(ids).toEqual(
      expect.arrayContaining(["sandbox/embed-small", "sandbox/tts-mini:free", "sandbox/video-mini"]),
    );
    expect(out.totalCount).toBe(out.data.length);
    const embed = out.data.find((m) => m.id === "sandbox/embed-small")!;
    expect(embed.pricing.prompt).toBe("0.00000002");
    expect(embed.architecture.outputModalities).toEqual(["embeddings"]);
    const tts = out.data.find((m) => m.id === "sandbox/tts-mini")!;
    expect(tts.supportedVoices).toContain("alloy");
  });

  it("GET /models lists chat models with OpenRouter's per-token pricing, parameters and limits", async () => {
    const acct = await createAccount();
    const out = (await sdkFor(acct.apiKey).models.list()).result;
    const sonnet = out.data.find((m) => m.id === "anthropic/claude-sonnet-4")!;
    // $3 / $15 per million tokens, cache reads $0.30 and writes $3.75 per million.
    expect(sonnet.pricing).toEqual({
      prompt: "0.000003",
      completion: "0.000015",
      inputCacheRead: "0.0000003",
      inputCacheWrite: "0.00000375",
    });
    expect(sonnet.architecture).toEqual({
      modality: "text+image->text",
      inputModalities: ["text", "image", "file"],
      outputModalities: ["text"],
      tokenizer: "Claude",
    });
    expect(sonnet.contextLength).toBe(200000);
    expect(sonnet.topProvider).toEqual({
      contextLength: 200000,
      maxCompletionTokens: 64000,
      isModerated: false,
    });
    expect(sonnet.supportedParameters).toEqual(expect.arrayContaining(["tools", "reasoning", "temperature"]));

    // Several hosts, one model: parameters are the union of its endpoints', prices those of the first.
    const llama = out.data.find((m) => m.id === "meta-llama/llama-3.3-70b-instruct")!;
    expect(llama.architecture).toMatchObject({ modality: "text->text", tokenizer: "Llama3" });
    expect(llama.pricing).toEqual({ prompt: "0.00000059", completion: "0.00000079" });
    expect(llama.supportedParameters).toEqual(expect.arrayContaining(["parallel_tool_calls", "top_k"]));

    const gpt5 = out.data.find((m) => m.id === "openai/gpt-5")!;
    expect(gpt5.supportedParameters).not.toContain("temperature");
    const echo = out.data.find((m) => m.id === "sandbox/chat-echo")!;
    expect(echo.pricing).toEqual({ prompt: "0.0000005", completion: "0.0000015" });
    expect(echo.topProvider.maxCompletionTokens).toBe(4096);
  });

  it("GET /embeddings/models lists only embeddings models", async () => {
    const acct = await createAccount();
    const pages = await sdkFor(acct.apiKey).embeddings.listModels();
    const ids = pages.result.data.map((m) => m.id);
    expect(ids).toContain("sandbox/embed-small:free");
    expect(ids).toContain("cohere/embed-v4.0");
    expect(ids.some((id) => id.includes("tts") || id.includes("video"))).toBe(false);
  });

  it("GET /embeddings/models pages by offset and limit: the SDK's pager reads every model once, then stops", async () => {
    const acct = await createAccount();
    const all = (await sdkFor(acct.apiKey).embeddings.listModels()).result.data.map((m) => m.id);
    expect(all.length).toBeGreaterThan(3);
    const seen: string[] = [];
    let pages = 0;
    for await (const page of await sdkFor(acct.apiKey).embeddings.listModels({ limit: 2 })) {
      seen.push(...page.result.data.map((m) => m.id));
      if (++pages > all.length) break; // a pager that never ends fails below
    }
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 2) + (all.length % 2 === 0 ? 1 : 0));
    const res = await call("/embeddings/models?offset=1&limit=1", { key: acct.apiKey });
    expect(((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([all[1]]);
  });

  it("GET /videos/models lists video models with their capabilities", async () => {
    const acct = await createAccount();
    const out = await sdkFor(acct.apiKey).videoGeneration.listVideosModels();
    const mini = out.data.find((m) => m.id === "sandbox/video-mini")!;
    expect(mini.supportedDurations).toEqual([2, 4, 8]);
    expect(mini.supportedResolutions).toContain("720p");
    expect(mini.pricingSkus).toMatchObject({ per_second_default: "0.05" });
    expect(out.data.every((m) => !m.id.includes("embed"))).toBe(true);
  });

  it("requires an API key", async () => {
    const res = await call("/models");
    expect(res.status).toBe(401);
    await errorOf(res);
  });

  it("prints prices without float noise", () => {
    expect(usdString(0.02)).toBe("0.00000002");
    expect(usdString(0)).toBe("0");
    expect(usdString(1_500_000)).toBe("1.5");
  });
});
