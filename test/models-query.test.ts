// GET /models' query through @openrouter/sdk's models.list: each filter, sort and page against the catalog
// as the unfiltered list shows it; filters on data the gateway does not keep are refused.
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor } from "./helpers/sdk";

type Listing = Awaited<ReturnType<ReturnType<typeof sdkFor>["models"]["list"]>>["result"];
type Model = Listing["data"][number];
type ListRequest = NonNullable<Parameters<ReturnType<typeof sdkFor>["models"]["list"]>[0]>;

async function lister() {
  const acct = await createAccount();
  const sdk = sdkFor(acct.apiKey);
  const list = async (request: ListRequest = {}) => (await sdk.models.list(request)).result;
  const all = (await list()).data;
  return { acct, list, all };
}

const ids = (models: Array<Pick<Model, "id">>) => models.map((m) => m.id);
/** USD per million units, from the listing's USD-per-unit string. */
const perMillion = (usd: string) => Number(usd) * 1e6;

describe("GET /models filters", () => {
  it("supported_parameters keeps the models listing every one of them", async () => {
    const { list, all } = await lister();
    const { data, totalCount } = await list({ supportedParameters: "tools,response_format" });
    const expected = all.filter(
      (m) => m.supportedParameters.includes("tools") && m.supportedParameters.includes("response_format"),
    );
    expect(ids(data)).toEqual(ids(expected));
    expect(totalCount).toBe(expected.length);
    expect(ids(data)).toContain("openai/gpt-4.1-mini");
    // A model with tools but no response_format is left out.
    expect(ids(data)).not.toContain("anthropic/claude-sonnet-4");
    expect(ids(all.filter((m) => m.supportedParameters.includes("tools")))).toContain(
      "anthropic/claude-sonnet-4",
    );
  });

  it("a video model's supported_parameters are what its endpoints' capabilities say", async () => {
    const { all } = await lister();
    const params = (id: string) => all.find((m) => m.id === id)!.supportedParameters;
    expect(params("sandbox/video-upscale")).toEqual([
      "duration",
      "input_references",
      "creativity",
      "upscale_factor",
    ]);
    expect(params("openai/sora-2")).not.toContain("seed");
    expect(params("sandbox/video-mini")).toEqual(
      expect.arrayContaining(["aspect_ratio", "resolution", "duration"]),
    );
  });

  it("output and input modalities: the outputs listed, and every input listed", async () => {
    const { list, all } = await lister();
    const embeddings = await list({ outputModalities: "embeddings" });
    expect(embeddings.data.length).toBeGreaterThan(0);
    expect(embeddings.data.every((m) => m.architecture.outputModalities[0] === "embeddings")).toBe(true);
    const spoken = await list({ outputModalities: "text,audio" });
    expect(ids(spoken.data)).toEqual(
      ids(all.filter((m) => ["text", "audio"].includes(m.architecture.outputModalities[0]!))),
    );
    // The modalities OpenRouter lists that no model here has: an empty list, not a 400; `speech` is audio.
    expect((await list({ outputModalities: "image,rerank" })).data).toEqual([]);
    expect(ids((await list({ outputModalities: "speech" })).data)).toEqual(
      ids(all.filter((m) => m.architecture.outputModalities[0] === "audio")),
    );

    const { data } = await list({ inputModalities: "image,file" });
    const expected = all.filter(
      (m) =>
        m.architecture.inputModalities.includes("image") && m.architecture.inputModalities.includes("file"),
    );
    expect(ids(data)).toEqual(ids(expected));
    expect(ids(data)).toContain("google/gemini-2.5-flash");
    expect(ids(data)).not.toContain("mistralai/mistral-small");
  });

  it("authors, providers (slug or name), family, words, context, prices, ZDR, region and age", async () => {
    const { acct, list, all } = await lister();
    const authors = (await list({ modelAuthors: "anthropic,openai" })).data;
    expect(ids(authors)).toEqual(ids(all.filter((m) => /^(anthropic|openai)\//.test(m.id))));

    const bySlug = ids((await list({ providers: "groq" })).data);
    expect(bySlug).toEqual([
      "meta-llama/llama-3.1-8b-instruct",
      "meta-llama/llama-3.3-70b-instruct",
      "openai/gpt-oss-120b",
    ]);
    expect(ids((await list({ providers: "Groq" })).data)).toEqual(bySlug);

    expect(ids((await list({ arch: "claude" })).data)).toEqual(
      ids(all.filter((m) => m.architecture.tokenizer === "Claude")),
    );
    expect(ids((await list({ q: "Haiku" })).data)).toEqual(["anthropic/claude-3.5-haiku"]);

    const large = (await list({ context: 1_000_000 })).data;
    expect(large.length).toBeGreaterThan(0);
    expect(ids(large)).toEqual(ids(all.filter((m) => (m.contextLength ?? 0) >= 1_000_000)));

    // Video models are priced by the second, not the token (their listing says "0"): price filters
    // leave them out rather than take them for free.
    const bySecond = (m: Model) =>
      m.architecture.outputModalities.includes("video") && !m.id.endsWith(":free");
    const tokenPriced = all.filter((m) => !bySecond(m));
    expect(tokenPriced.length).toBeLessThan(all.length);
    const cheap = (await list({ maxPrice: 0.5, minOutputPrice: 0.1 })).data;
    expect(cheap.length).toBeGreaterThan(0);
    expect(ids(cheap)).toEqual(
      ids(
        tokenPriced.filter(
          (m) => perMillion(m.pricing.prompt) <= 0.5 && perMillion(m.pricing.completion) >= 0.1,
        ),
      ),
    );
    expect(ids((await list({ minPrice: 10 })).data)).toEqual(
      ids(tokenPriced.filter((m) => perMillion(m.pricing.prompt) >= 10)),
    );
    const free = ids((await list({ maxPrice: 0, maxOutputPrice: 0 })).data);
    expect(free).toContain("sandbox/chat-echo:free");
    // A free video model is free.
    expect(free.filter((id) => /video|veo|sora/.test(id))).toEqual(["sandbox/video-mini:free"]);

    // Every catalog model has an endpoint serving Europe; the sandbox's are zero-data-retention.
    expect(ids((await list({ region: "eu" })).data)).toContain("openai/gpt-4.1-mini");
    // The data region's own name reads the same.
    const europe = await call("/models?region=europe", { key: acct.apiKey });
    expect(europe.status).toBe(200);
    expect(ids(((await europe.json()) as { data: Array<{ id: string }> }).data)).toEqual(
      ids((await list({ region: "eu" })).data),
    );
    const zdr = ids((await list({ zdr: "true" })).data);
    expect(zdr).toContain("sandbox/chat-echo");
    expect(zdr.length).toBeLessThan(all.length);

    const nowS = Date.now() / 1000;
    const recent = (await list({ maxAgeDays: 400 })).data;
    expect(ids(recent)).toEqual(ids(all.filter((m) => nowS - m.created <= 400 * 86_400)));
    expect(ids((await list({ minAgeDays: 400 })).data)).toEqual(
      ids(all.filter((m) => nowS - m.created >= 400 * 86_400)),
    );
  });

  it("sorts by price, context or age; usage and benchmark sorts keep the catalog's order", async () => {
    const { list, all } = await lister();
    const average = (m: Model) => (Number(m.pricing.prompt) + Number(m.pricing.completion)) / 2;
    const video = (m: Model) => m.architecture.outputModalities.includes("video") && !m.id.endsWith(":free");
    const cheapest = (await list({ sort: "pricing-low-to-high" })).data;
    expect(cheapest).toHaveLength(all.length);
    // Models priced by the video second come last either way, never first as if free.
    const videos = all.filter(video).length;
    expect(cheapest.slice(-videos).every(video)).toBe(true);
    const ranked = cheapest.slice(0, -videos);
    for (let i = 1; i < ranked.length; i++)
      expect(average(ranked[i]!)).toBeGreaterThanOrEqual(average(ranked[i - 1]!));
    const dearest = (await list({ sort: "pricing-high-to-low" })).data;
    expect(average(dearest[0]!)).toBe(Math.max(...all.map(average)));
    expect(dearest.slice(-videos).every(video)).toBe(true);
    const newest = (await list({ sort: "newest" })).data;
    for (let i = 1; i < newest.length; i++)
      expect(newest[i]!.created).toBeLessThanOrEqual(newest[i - 1]!.created);
    const widest = (await list({ sort: "context-high-to-low" })).data;
    expect(widest[0]!.contextLength).toBe(Math.max(...all.map((m) => m.contextLength ?? 0)));
    expect(ids((await list({ sort: "throughput-high-to-low" })).data)).toEqual(ids(all));
  });

  it("pages with offset and limit, the next link carrying the filters", async () => {
    const { list, all } = await lister();
    const chat = all.filter((m) => m.architecture.outputModalities[0] === "text");
    const seen: string[] = [];
    let page = await list({ outputModalities: "text", limit: 7, offset: 0 });
    for (;;) {
      expect(page.totalCount).toBe(chat.length);
      expect(page.data.length).toBeLessThanOrEqual(7);
      seen.push(...ids(page.data));
      if (!page.links.next) break;
      const next = new URL(page.links.next, "http://x").searchParams;
      expect(next.get("output_modalities")).toBe("text");
      page = await list({
        outputModalities: "text",
        offset: Number(next.get("offset")),
        limit: Number(next.get("limit")),
      });
    }
    expect(seen).toEqual(ids(chat));
    expect(seen.length).toBeGreaterThan(7);
  });
});

describe("GET /models refusals", () => {
  it("a filter on data the gateway does not keep is a 400 naming it", async () => {
    const { acct } = await lister();
    const res = await call("/models?category=programming&min_coding_index=50", { key: acct.apiKey });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.message).toContain("category, min_coding_index");
    expect(error.metadata).toEqual({ parameters: ["category", "min_coding_index"] });
  });

  it("malformed values are 400s", async () => {
    const { acct } = await lister();
    for (const query of [
      "limit=0",
      "limit=1001",
      "input_modalities=smell",
      "sort=random",
      "region=mars",
      "max_price=-1",
    ]) {
      const res = await call(`/models?${query}`, { key: acct.apiKey });
      expect([query, res.status]).toEqual([query, 400]);
      await errorOf(res);
    }
  });
});
