// Cohere-style embed API (POST /v2/embed): input types, typed embeddings, billed units.
import { z } from "zod";
import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import type { CallContext, EmbeddingsContentPart, EmbeddingsRequest, EmbeddingsResult } from "../types";

/** The gateway's input type hints mapped to Cohere's vocabulary; unknown hints pass through. */
const INPUT_TYPES: Record<string, string> = {
  query: "search_query",
  search_query: "search_query",
  document: "search_document",
  passage: "search_document",
  search_document: "search_document",
  classification: "classification",
  clustering: "clustering",
};
/** Cohere requires an input type; documents are the common case. */
const DEFAULT_INPUT_TYPE = "search_document";

const AnswerSchema = z.object({
  id: z.string().optional(),
  embeddings: z.object({ float: z.array(z.array(z.number())) }),
  meta: z
    .object({
      billed_units: z
        .object({
          input_tokens: z.number().optional(),
          image_tokens: z.number().optional(),
          images: z.number().optional(),
        })
        .optional(),
    })
    .optional(),
});

/**
 * Tokens per image when Cohere reports images by count only (embed v3 billed $0.0001 an image: 1,000
 * tokens at its $0.10 per million).
 */
export const COHERE_TOKENS_PER_IMAGE = 1_000;

/**
 * The prompt tokens a Cohere answer bills: its text tokens and its image tokens, or its images by
 * count where it gives no image tokens. Text tokens alone billed image embeddings at nothing (found by
 * a hostile probe: 96 images, cost 0).
 */
function billedTokens(units: { input_tokens?: number; image_tokens?: number; images?: number } | undefined) {
  const images = units?.image_tokens ?? (units?.images ?? 0) * COHERE_TOKENS_PER_IMAGE;
  return Math.round((units?.input_tokens ?? 0) + images);
}

function cohereContent(part: EmbeddingsContentPart): Record<string, unknown> {
  if (part.type === "text") return { type: "text", text: part.text };
  if (part.type === "image_url") return { type: "image_url", image_url: { url: part.image_url.url } };
  throw new UpstreamError({
    kind: "http",
    status: 400,
    retryable: false,
    message: `Cohere-style endpoints embed text and images, not ${part.type}`,
  });
}

export async function cohereEmbeddings(req: EmbeddingsRequest, call: CallContext): Promise<EmbeddingsResult> {
  const body: Record<string, unknown> = {
    model: call.endpoint.upstreamModel,
    input_type: INPUT_TYPES[req.inputType ?? ""] ?? req.inputType ?? DEFAULT_INPUT_TYPE,
    embedding_types: ["float"],
  };
  let count: number;
  if (req.input.kind === "text") {
    body.texts = req.input.texts;
    count = req.input.texts.length;
  } else if (req.input.kind === "multimodal") {
    body.inputs = req.input.items.map((parts) => ({ content: parts.map(cohereContent) }));
    count = req.input.items.length;
  } else {
    throw new UpstreamError({
      kind: "http",
      status: 400,
      retryable: false,
      message: "Cohere-style endpoints do not accept token arrays",
    });
  }
  if (req.dimensions != null) body.output_dimension = req.dimensions;
  const res = await call.fetch(`${call.endpoint.baseUrl}/v2/embed`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
      Authorization: `Bearer ${call.credential.apiKey}`,
    },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  const parsed = AnswerSchema.safeParse(await res.json().catch(() => null));
  if (!parsed.success || parsed.data.embeddings.float.length !== count) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent an embed answer the gateway cannot read`,
    });
  }
  return {
    vectors: parsed.data.embeddings.float,
    promptTokens: billedTokens(parsed.data.meta?.billed_units),
  };
}
