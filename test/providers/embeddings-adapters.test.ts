// Embeddings adapters against recorded payloads: request mapping, answer parsing, error mapping.
import { describe, expect, it } from "vitest";
import { cohereAdapter } from "../../src/providers/cohere";
import { COHERE_TOKENS_PER_IMAGE } from "../../src/providers/cohere/embeddings";
import { UpstreamError } from "../../src/providers/errors";
import { openAiCompatibleAdapter } from "../../src/providers/openai-compatible";
import { sandboxAdapter } from "../../src/providers/sandbox";
import type { CallContext, EmbeddingsRequest } from "../../src/providers/types";
import cohereOk from "../fixtures/cohere/embed-200.json";
import cohere429 from "../fixtures/cohere/embed-429.json";
import openaiOk from "../fixtures/openai/embeddings-200.json";
import openai400 from "../fixtures/openai/embeddings-400.json";
import openai401 from "../fixtures/openai/embeddings-401.json";

function ctx(answer: Response, sent: Request[], over: Partial<CallContext["endpoint"]> = {}): CallContext {
  return {
    endpoint: {
      id: "e",
      provider: "acme",
      upstreamModel: "up-model",
      baseUrl: "https://acme.example/v1",
      capabilities: { dimensions: 8 },
      ...over,
    },
    credential: { source: "platform", apiKey: "sk-secret" },
    signal: new AbortController().signal,
    fetch: async (input, init) => {
      sent.push(new Request(input, init));
      return answer;
    },
  };
}
const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const texts = (...t: string[]): EmbeddingsRequest => ({ input: { kind: "text", texts: t } });

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof UpstreamError) return e;
    throw e;
  }
  throw new Error("expected an UpstreamError");
}

describe("openai-compatible embeddings", () => {
  it("posts the OpenAI body with a bearer key and reads vectors and usage", async () => {
    const sent: Request[] = [];
    const out = await openAiCompatibleAdapter.embeddings!(
      { ...texts("a", "b"), dimensions: 8 },
      ctx(json(openaiOk), sent),
    );
    expect(sent[0]!.url).toBe("https://acme.example/v1/embeddings");
    expect(sent[0]!.headers.get("authorization")).toBe("Bearer sk-secret");
    expect(await sent[0]!.json()).toEqual({
      model: "up-model",
      input: ["a", "b"],
      encoding_format: "float",
      dimensions: 8,
    });
    expect(out.vectors).toEqual(openaiOk.data.map((d) => d.embedding));
    expect(out.promptTokens).toBe(9);
  });

  it("maps 401 to a retryable error with the provider code and 400 to a non-retryable one", async () => {
    const auth = await failure(
      openAiCompatibleAdapter.embeddings!(texts("a"), ctx(json(openai401, 401), [])),
    );
    expect(auth).toMatchObject({ status: 401, providerCode: "invalid_api_key", retryable: true });
    expect(auth.message).not.toContain("sk-secret");
    const bad = await failure(openAiCompatibleAdapter.embeddings!(texts("a"), ctx(json(openai400, 400), [])));
    expect(bad).toMatchObject({ status: 400, retryable: false });
  });

  it("rejects an answer with the wrong number of vectors", async () => {
    const e = await failure(
      openAiCompatibleAdapter.embeddings!(texts("a", "b", "c"), ctx(json(openaiOk), [])),
    );
    expect(e.kind).toBe("invalid_response");
  });
});

describe("cohere-style embeddings", () => {
  it("posts /v2/embed with texts, a mapped input type and float embeddings", async () => {
    const sent: Request[] = [];
    const out = await cohereAdapter.embeddings!(
      { ...texts("hello", "world"), inputType: "document", dimensions: 8 },
      ctx(json(cohereOk), sent, { baseUrl: "https://api.cohere.example" }),
    );
    expect(sent[0]!.url).toBe("https://api.cohere.example/v2/embed");
    expect(await sent[0]!.json()).toEqual({
      model: "up-model",
      texts: ["hello", "world"],
      input_type: "search_document",
      embedding_types: ["float"],
      output_dimension: 8,
    });
    expect(out).toEqual({ vectors: cohereOk.embeddings.float, promptTokens: 4 });
  });

  it("bills image embeddings: image tokens, or images by count where only those are given", async () => {
    const answer = (billed_units: Record<string, number>) => json({ ...cohereOk, meta: { billed_units } });
    const image = { type: "image_url" as const, image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } };
    const request = { input: { kind: "multimodal" as const, items: [[image], [image]] } };
    const billed = async (units: Record<string, number>) =>
      (await cohereAdapter.embeddings!(request, ctx(answer(units), []))).promptTokens;
    // Text tokens alone billed these at nothing.
    expect(await billed({ images: 2 })).toBe(2 * COHERE_TOKENS_PER_IMAGE);
    expect(await billed({ input_tokens: 3, image_tokens: 3_200 })).toBe(3_203);
  });

  it("maps 429 with Retry-After", async () => {
    const e = await failure(
      cohereAdapter.embeddings!(texts("a"), ctx(json(cohere429, 429, { "Retry-After": "30" }), [])),
    );
    expect(e).toMatchObject({ status: 429, retryAfterSeconds: 30, retryable: true });
    expect(e.message).toContain("Trial key");
  });

  it("refuses token inputs without calling the upstream", async () => {
    const sent: Request[] = [];
    const e = await failure(
      cohereAdapter.embeddings!({ input: { kind: "tokens", tokens: [[1]] } }, ctx(json(cohereOk), sent)),
    );
    expect(e.retryable).toBe(false);
    expect(sent).toHaveLength(0);
  });
});

describe("sandbox embeddings", () => {
  it("is deterministic, unit length, honours dimensions, and varies with the input type", async () => {
    const call = ctx(json({}), [], { upstreamModel: "embed-small" });
    const a = await sandboxAdapter.embeddings!({ ...texts("same words"), dimensions: 32 }, call);
    const b = await sandboxAdapter.embeddings!({ ...texts("same words"), dimensions: 32 }, call);
    const q = await sandboxAdapter.embeddings!(
      { ...texts("same words"), dimensions: 32, inputType: "search_query" },
      call,
    );
    expect(a.vectors[0]).toEqual(b.vectors[0]);
    expect(a.vectors[0]).toHaveLength(32);
    expect(Math.hypot(...a.vectors[0]!)).toBeCloseTo(1, 6);
    expect(q.vectors[0]).not.toEqual(a.vectors[0]);
  });
});
