// POST /embeddings end to end through the Worker with the offline sandbox provider, via both SDKs and raw HTTP.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { createAccount } from "./helpers/accounts";
import { BASE, call, errorOf, workerFetch } from "./helpers/http";
import { sdkFor } from "./helpers/sdk";

interface EmbeddingsBody {
  object: string;
  id: string;
  model: string;
  provider: string;
  data: Array<{ object: string; index: number; embedding: number[] | string }>;
  usage: { prompt_tokens: number; total_tokens: number; cost: number; is_byok: boolean };
}

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

async function generationsOf(keyHash: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.keyHash, keyHash));
}

describe("POST /embeddings with the sandbox", () => {
  it("answers the common shape with stable unit vectors of the requested size", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = {
      model: "sandbox/embed-small",
      input: ["the cat sat", "the cat sat", "stock prices fell"],
      dimensions: 64,
    };
    const res = await call("/embeddings", { method: "POST", key: acct.apiKey, body });
    expect(res.status).toBe(200);
    const json = (await res.json()) as EmbeddingsBody;
    expect(json.object).toBe("list");
    expect(json.model).toBe("sandbox/embed-small");
    expect(json.id).toMatch(/^gen-/);
    expect(json.data.map((d) => [d.object, d.index])).toEqual([
      ["embedding", 0],
      ["embedding", 1],
      ["embedding", 2],
    ]);
    const [a, b, c] = json.data.map((d) => d.embedding as number[]);
    expect(a).toHaveLength(64);
    expect(a).toEqual(b);
    expect(cosine(a!, a!)).toBeCloseTo(1, 5);
    expect(cosine(a!, c!)).toBeLessThan(0.9);
    expect(json.usage.prompt_tokens).toBeGreaterThan(0);
    expect(json.usage.total_tokens).toBe(json.usage.prompt_tokens);
    expect(json.usage.is_byok).toBe(false);

    const again = (await (
      await call("/embeddings", { method: "POST", key: acct.apiKey, body })
    ).json()) as EmbeddingsBody;
    expect(again.data[0]!.embedding).toEqual(a);
    expect(again.id).not.toBe(json.id);
  });

  it("writes a generation record with usage, cost, provider and user", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: {
        model: "sandbox/embed-small",
        input: "hello world",
        user: "end-user-7",
        trace: { trace_id: "t-1" },
      },
    });
    const json = (await res.json()) as EmbeddingsBody;
    const [gen] = await generationsOf(acct.apiKeyHash);
    expect(gen).toMatchObject({
      id: json.id,
      model: "sandbox/embed-small",
      provider: "sandbox",
      isByok: false,
      status: "completed",
      region: "global",
      user: "end-user-7",
      modality: "embeddings",
      metadata: { trace_id: "t-1" },
    });
    expect(gen!.usage).toEqual({
      prompt_tokens: json.usage.prompt_tokens,
      total_tokens: json.usage.prompt_tokens,
    });
    expect(gen!.costMicros).toBe(Math.ceil(json.usage.prompt_tokens * 0.02));
  });

  it("works through the openai client, which asks for base64 floats by default", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const client = new OpenAI({ apiKey: acct.apiKey, baseURL: BASE, fetch: workerFetch(), maxRetries: 0 });
    const out = await client.embeddings.create({
      model: "sandbox/embed-small",
      input: ["alpha beta", "gamma"],
      dimensions: 8,
    });
    expect(out.data).toHaveLength(2);
    expect(out.data[0]!.embedding).toHaveLength(8);
    const raw = (await (
      await call("/embeddings", {
        method: "POST",
        key: acct.apiKey,
        body: { model: "sandbox/embed-small", input: ["alpha beta", "gamma"], dimensions: 8 },
      })
    ).json()) as EmbeddingsBody;
    const floats = raw.data[0]!.embedding as number[];
    for (const [i, x] of out.data[0]!.embedding.entries()) expect(x).toBeCloseTo(floats[i]!, 6);
  });

  it("answers base64 as little-endian float32 bytes", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const body = { model: "sandbox/embed-small", input: "bytes please", dimensions: 4 };
    const floats = (
      (await (await call("/embeddings", { method: "POST", key: acct.apiKey, body })).json()) as EmbeddingsBody
    ).data[0]!.embedding as number[];
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { ...body, encoding_format: "base64" },
    });
    const b64 = ((await res.json()) as EmbeddingsBody).data[0]!.embedding as string;
    const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    expect(bytes.byteLength).toBe(16);
    const view = new DataView(bytes.buffer);
    for (const [i, x] of floats.entries()) expect(view.getFloat32(i * 4, true)).toBeCloseTo(x, 6);
  });

  it("works through @openrouter/sdk", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const sdk = sdkFor(acct.apiKey);
    const out = await sdk.embeddings.generate({
      requestBody: {
        model: "sandbox/embed-small:free",
        input: "free text",
        inputType: "search_query",
        provider: { sort: "price" },
      },
    });
    if (typeof out === "string") throw new Error("expected JSON");
    expect(out.model).toBe("sandbox/embed-small:free");
    expect(out.data[0]!.embedding).toHaveLength(256);
    expect(out.usage?.promptTokens).toBeGreaterThan(0);
    expect(out.usage?.cost).toBe(0);
  });

  it("embeds token arrays and multimodal inputs", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const tokens = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: {
        model: "sandbox/embed-small",
        input: [
          [1, 2, 3],
          [4, 5],
        ],
      },
    });
    expect(tokens.status).toBe(200);
    expect(((await tokens.json()) as EmbeddingsBody).usage.prompt_tokens).toBe(5);
    const multi = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: {
        model: "sandbox/embed-small",
        input: [
          {
            content: [
              { type: "text", text: "a red car" },
              { type: "image_url", image_url: { url: "https://example.com/car.png" } },
            ],
          },
        ],
      },
    });
    expect(multi.status).toBe(200);
    expect(((await multi.json()) as EmbeddingsBody).data).toHaveLength(1);
  });
});

describe("POST /embeddings rejects bad input without side effects", () => {
  it.each([
    ["empty string", { model: "sandbox/embed-small", input: "" }],
    ["empty array", { model: "sandbox/embed-small", input: [] }],
    ["an empty text in an array", { model: "sandbox/embed-small", input: ["x", ""] }],
    [
      "an empty text part",
      { model: "sandbox/embed-small", input: [{ content: [{ type: "text", text: "" }] }] },
    ],
    ["zero dimensions", { model: "sandbox/embed-small", input: "x", dimensions: 0 }],
    ["missing model", { input: "x" }],
    ["unknown encoding", { model: "sandbox/embed-small", input: "x", encoding_format: "int8" }],
    ["mixed input", { model: "sandbox/embed-small", input: ["x", 1] }],
  ])("%s -> 400", async (_name, body) => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", { method: "POST", key: acct.apiKey, body });
    expect(res.status).toBe(400);
    const { message } = await errorOf(res);
    if (JSON.stringify(body).includes('""')) expect(message).toMatch(/must not be empty/);
    expect(await generationsOf(acct.apiKeyHash)).toHaveLength(0);
  });

  it("unknown model -> 404", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "nobody/nothing", input: "x" },
    });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).message).toContain("nobody/nothing");
  });

  it("a speech model -> 400 naming the modality", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/tts-mini", input: "x" },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("speech model");
  });

  it("dimensions beyond every endpoint -> 400 naming the parameter", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small", input: "x", dimensions: 5000 },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("dimensions=5000");
  });

  it("no key -> 401", async () => {
    const res = await call("/embeddings", {
      method: "POST",
      body: { model: "sandbox/embed-small", input: "x" },
    });
    expect(res.status).toBe(401);
    await errorOf(res);
  });
});
