// POST /embeddings: content filters, routing with failover, one common response shape (float or base64).
import type { CatalogEndpointEntry } from "../catalog/types";
import { filterTexts } from "../guardrails/apply-filters";
import type { EffectivePolicy } from "../guardrails/policy";
import { requestIo, runInference, sessionIdOf, underCurrentPolicy } from "../inference/pipeline";
import { utf8Bytes } from "../inference/prompt-estimate";
import { badRequest } from "../lib/errors";
import { chargedMicros, microsToUsd } from "../lib/money";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import type { EmbeddingsContentPart, EmbeddingsInput } from "../providers/types";
import type { Requirement } from "../routing/filters";
import {
  type EmbeddingsRequestBody,
  EmbeddingsRequestSchema,
  EmbeddingsResponseSchema,
} from "../schemas/embeddings";

const createEmbeddings = apiRoute(
  {
    method: "post",
    path: "/embeddings",
    operationId: "createEmbeddings",
    tags: ["Embeddings"],
    security: [{ bearer: [] }],
    summary: "Create embeddings",
    request: { body: jsonBody(EmbeddingsRequestSchema) },
    responses: {
      200: jsonContent(EmbeddingsResponseSchema, "One vector per input, in input order"),
    },
  },
  { inference: true },
);

/** The request's inputs in the adapters' normalized form. */
export function normalizeInput(input: EmbeddingsRequestBody["input"]): EmbeddingsInput {
  if (typeof input === "string") return { kind: "text", texts: [input] };
  const first = input[0];
  if (typeof first === "string") return { kind: "text", texts: input as string[] };
  if (typeof first === "number") return { kind: "tokens", tokens: [input as number[]] };
  if (Array.isArray(first)) return { kind: "tokens", tokens: input as number[][] };
  return {
    kind: "multimodal",
    items: (input as Array<{ content: EmbeddingsContentPart[] }>).map((i) => i.content),
  };
}

const itemCount = (input: EmbeddingsInput) =>
  input.kind === "text"
    ? input.texts.length
    : input.kind === "tokens"
      ? input.tokens.length
      : input.items.length;

/**
 * The content filters see every text, including the text parts of multimodal inputs. Token ids can
 * spell any text, and no filter can read them: under a block or redact filter they are refused
 * (fail closed, as a scan that cannot finish is).
 */
function withFilteredTexts(
  input: EmbeddingsInput,
  policy: EffectivePolicy,
  filter: (texts: string[]) => string[],
): EmbeddingsInput {
  if (input.kind === "text") return { kind: "text", texts: filter(input.texts) };
  if (input.kind === "tokens") {
    const guarding = policy.filters.find((f) => f.action !== "flag");
    if (guarding) {
      throw badRequest(
        `Token inputs cannot be read by the content filters of guardrail '${guarding.guardrailName}': send the text instead`,
      );
    }
    return input;
  }
  const texts = input.items.flatMap((parts) => parts.flatMap((p) => (p.type === "text" ? [p.text] : [])));
  const rewritten = filter(texts);
  let i = 0;
  return {
    kind: "multimodal",
    items: input.items.map((parts) =>
      parts.map((p) => (p.type === "text" ? { ...p, text: rewritten[i++]! } : p)),
    ),
  };
}

/**
 * Tokens a media part is reserved at: image embeddings are billed by size (Cohere's embed v4 counts
 * about 1,600 tokens at 512x512 and some 15,000 for a full-size image), so 1,000 was not a bound.
 */
export const MEDIA_PART_TOKENS = 16_384;

/**
 * Upper bound of billable tokens: a token per UTF-8 byte of text (a character of rare CJK is 2 to 2.5
 * tokens, so a token per character was not one), the token arrays, MEDIA_PART_TOKENS per media part.
 */
function worstCaseTokens(input: EmbeddingsInput): number {
  if (input.kind === "text") return input.texts.reduce((n, t) => n + Math.max(1, utf8Bytes(t)), 0);
  if (input.kind === "tokens") return input.tokens.reduce((n, t) => n + t.length, 0);
  return input.items
    .flat()
    .reduce((n, p) => n + (p.type === "text" ? Math.max(1, utf8Bytes(p.text)) : MEDIA_PART_TOKENS), 0);
}

function requirementsFor(body: EmbeddingsRequestBody, input: EmbeddingsInput): Requirement[] {
  const reqs: Requirement[] = [];
  const { dimensions } = body;
  if (dimensions != null) {
    reqs.push({
      param: `dimensions=${dimensions}`,
      hard: true,
      fits: (e) =>
        e.capabilities.dimensions === dimensions ||
        (e.capabilities.dimensions_configurable === true &&
          dimensions <= (e.capabilities.max_dimensions ?? 0)),
    });
  }
  const kinds = new Set<string>();
  if (input.kind === "text") kinds.add("text");
  else if (input.kind === "tokens") kinds.add("tokens");
  else
    for (const p of input.items.flat())
      kinds.add(p.type === "image_url" ? "image" : p.type.replace("input_", ""));
  for (const kind of kinds) {
    reqs.push({
      param: `${kind} inputs`,
      hard: true,
      fits: (e) => (e.capabilities.inputs ?? ["text"]).includes(kind as "text"),
    });
  }
  const count = itemCount(input);
  reqs.push({
    param: `${count} inputs per request`,
    hard: true,
    fits: (e) => count <= (e.capabilities.max_batch ?? 2048),
  });
  if (body.input_type) {
    const inputType = body.input_type;
    reqs.push({
      param: `input_type=${inputType}`,
      hard: false,
      fits: (e) => e.capabilities.input_types?.includes(inputType) === true,
    });
  }
  return reqs;
}

const priceOf = (e: CatalogEndpointEntry, tokens: number) =>
  tokens * (e.pricing.input_token ?? 0) + (e.pricing.request ?? 0);

/** Little-endian float32 bytes, base64: what the `openai` client decodes when it asks for base64. */
export function encodeBase64Floats(vector: number[]): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (const [i, x] of vector.entries()) view.setFloat32(i * 4, x, true);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

export const embeddingsRoutes = createRouter().openapi(createEmbeddings, (c) =>
  underCurrentPolicy(c, async () => {
    const body = c.req.valid("json");
    const auth = c.get("auth");
    const flags: string[] = [];
    const input = withFilteredTexts(normalizeInput(body.input), auth.policy, (texts) => {
      const verdict = filterTexts(auth.policy, texts);
      flags.push(...verdict.flags);
      return verdict.texts;
    });
    const worstTokens = worstCaseTokens(input);
    const sessionId = sessionIdOf(c.req.header("x-session-id"), body.session_id);

    const base64 = body.encoding_format === "base64";
    return runInference(requestIo(c), {
      capability: "embeddings",
      route: {
        modality: "embeddings",
        model: body.model,
        models: body.models,
        provider: body.provider,
        requirements: requirementsFor(body, input),
      },
      worstCaseMicros: (a) => priceOf(a.endpoint, worstTokens),
      call: (adapter, _attempt, ctx) =>
        adapter.embeddings!({ input, dimensions: body.dimensions, inputType: body.input_type }, ctx),
      respond: (value, served) => {
        const costMicros = chargedMicros(priceOf(served.attempt.endpoint, value.promptTokens));
        const usage = { prompt_tokens: value.promptTokens, total_tokens: value.promptTokens };
        const response = c.json(
          {
            object: "list" as const,
            data: value.vectors.map((v, index) => ({
              object: "embedding" as const,
              index,
              embedding: base64 ? encodeBase64Floats(v) : v,
            })),
            model: served.attempt.model.slug,
            id: served.generationId,
            provider: served.attempt.endpoint.provider,
            usage: { ...usage, cost: microsToUsd(costMicros), is_byok: served.isByok },
          },
          200,
        );
        return { response, done: Promise.resolve({ costMicros, usage }) };
      },
      record: { metadata: body.trace ?? null, user: body.user ?? null, flags, streamed: false, sessionId },
      timeoutStatus: 408,
    });
  }),
);
