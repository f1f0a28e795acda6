// Sandbox embeddings: stable, offline vectors from the input (hashed word features), any requested size.
import { fnv1a } from "../../lib/hash";
import { UpstreamError } from "../errors";
import type { CallContext, EmbeddingsContentPart, EmbeddingsRequest, EmbeddingsResult } from "../types";
import { sandboxFailureMode } from "./failures";

/** mulberry32: deterministic pseudo-random numbers in [0, 1) from a 32-bit seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FEATURES_PER_WORD = 8;

/**
 * Feature hashing: every word adds pseudo-random weights at a few positions chosen by its hash, so the
 * same text always gives the same vector and texts sharing words point in similar directions. The
 * result has unit length.
 */
export function sandboxVector(words: string[], dimensions: number, salt: string): number[] {
  const v = new Array<number>(dimensions).fill(0);
  const features = words.length > 0 ? words : [""];
  for (const word of features) {
    const next = random(fnv1a(word, fnv1a(salt)));
    for (let k = 0; k < FEATURES_PER_WORD; k++) {
      const at = Math.floor(next() * dimensions);
      v[at]! += next() * 2 - 1;
    }
  }
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}

const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** The sandbox's token count: about four characters per token, at least one per input. */
export const sandboxTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function partFeatures(part: EmbeddingsContentPart): { words: string[]; tokens: number } {
  switch (part.type) {
    case "text":
      return { words: wordsOf(part.text), tokens: sandboxTokens(part.text) };
    case "image_url":
      return { words: [`image:${fnv1a(part.image_url.url)}`], tokens: 85 };
    case "input_audio":
      return { words: [`audio:${fnv1a(part.input_audio.data)}`], tokens: 100 };
    case "input_video":
      return { words: [`video:${fnv1a(part.video_url.url)}`], tokens: 250 };
    default:
      return { words: [`file:${fnv1a(part.file.file_data ?? part.file.filename ?? "")}`], tokens: 100 };
  }
}

export async function sandboxEmbeddings(
  req: EmbeddingsRequest,
  call: CallContext,
): Promise<EmbeddingsResult> {
  await sandboxFailureMode(call);
  const dims = req.dimensions ?? call.endpoint.capabilities.dimensions;
  if (!dims) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: "Sandbox endpoint has no dimensions configured",
    });
  }
  // The input type changes the vector a little, as real providers' query/document embeddings do.
  const salt = `${call.endpoint.upstreamModel}|${req.inputType ?? ""}`;
  let items: Array<{ words: string[]; tokens: number }>;
  if (req.input.kind === "text")
    items = req.input.texts.map((t) => ({ words: wordsOf(t), tokens: sandboxTokens(t) }));
  else if (req.input.kind === "tokens")
    items = req.input.tokens.map((t) => ({ words: t.map(String), tokens: t.length }));
  else {
    items = req.input.items.map((parts) => {
      const f = parts.map(partFeatures);
      return { words: f.flatMap((x) => x.words), tokens: f.reduce((n, x) => n + x.tokens, 0) };
    });
  }
  return {
    vectors: items.map((item) => sandboxVector(item.words, dims, salt)),
    promptTokens: items.reduce((n, item) => n + item.tokens, 0),
  };
}
