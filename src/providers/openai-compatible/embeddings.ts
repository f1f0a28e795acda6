// OpenAI-style POST /embeddings: request mapping and a validated reading of the answer.

import { z } from "zod";
import { fromBase64 } from "../../lib/base64";
import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import type { CallContext, EmbeddingsRequest, EmbeddingsResult } from "../types";
import type { OpenAiCompatibleOptions } from "./options";

/** A vector of finite numbers: one plain loop, where a per-element schema costs a parse per float. */
const isVector = (v: unknown): v is number[] => {
  if (!Array.isArray(v)) return false;
  for (const x of v) if (typeof x !== "number" || !Number.isFinite(x)) return false;
  return true;
};

const AnswerSchema = z.object({
  data: z.array(
    z.object({
      index: z.int().min(0).optional(),
      embedding: z.custom<number[] | string>((v) => typeof v === "string" || isVector(v)),
    }),
  ),
  usage: z
    .object({ prompt_tokens: z.int().min(0).optional(), total_tokens: z.int().min(0).optional() })
    .optional(),
});

/** Little-endian float32 bytes in base64, as some upstreams answer even when asked for floats. */
function decodeBase64Floats(b64: string): number[] {
  const bytes = fromBase64(b64);
  const view = new DataView(bytes.buffer);
  const out: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i += 4) out.push(view.getFloat32(i, true));
  return out;
}

function wireInput(req: EmbeddingsRequest): unknown {
  switch (req.input.kind) {
    case "text":
      return req.input.texts;
    case "tokens":
      return req.input.tokens;
    default:
      return req.input.items.map((content) => ({ content }));
  }
}

export async function openAiEmbeddings(
  options: OpenAiCompatibleOptions,
  req: EmbeddingsRequest,
  call: CallContext,
): Promise<EmbeddingsResult> {
  const body: Record<string, unknown> = {
    model: call.endpoint.upstreamModel,
    input: wireInput(req),
    encoding_format: "float",
  };
  if (req.dimensions != null) body.dimensions = req.dimensions;
  if (req.inputType != null && options.sendsInputType) body.input_type = req.inputType;
  const res = await call.fetch(`${call.endpoint.baseUrl}/embeddings`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...options.authHeaders(call.credential.apiKey) },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  const parsed = AnswerSchema.safeParse(await res.json().catch(() => null));
  const count =
    req.input.kind === "text"
      ? req.input.texts.length
      : req.input.kind === "tokens"
        ? req.input.tokens.length
        : req.input.items.length;
  if (!parsed.success || parsed.data.data.length !== count) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent an embeddings answer the gateway cannot read`,
    });
  }
  const vectors = new Array<number[]>(count);
  parsed.data.data.forEach((d, i) => {
    vectors[d.index ?? i] = typeof d.embedding === "string" ? decodeBase64Floats(d.embedding) : d.embedding;
  });
  if (vectors.some((v) => v == null)) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} skipped an input`,
    });
  }
  const usage = parsed.data.usage;
  return { vectors, promptTokens: usage?.prompt_tokens ?? usage?.total_tokens ?? 0 };
}
