// The catalog's models in the shapes the model listings answer (GET /models, /models/user,
// /embeddings/models, /videos/models, a model's endpoints), as @openrouter/sdk parses them.
import type { z } from "@hono/zod-openapi";
import { type CatalogEndpointEntry, type CatalogModelEntry, OUTPUT_MODALITY } from "../catalog/types";
import type { ModelSchema, VideoModelSchema } from "../schemas/models";

/** Micro-dollars per unit as USD per unit, without float noise (0.02 -> "0.00000002"). */
export function usdString(micros: number): string {
  const fixed = (micros / 1e6).toFixed(14).replace(/0+$/, "").replace(/\.$/, "");
  return fixed === "" ? "0" : fixed;
}

const union = <T>(
  eps: CatalogEndpointEntry[],
  pick: (e: CatalogEndpointEntry) => T[] | undefined,
): T[] | null => {
  const all = eps.flatMap((e) => pick(e) ?? []);
  return all.length ? [...new Set(all)] : null;
};

const PARAMETERS: Record<Exclude<CatalogModelEntry["modality"], "video">, string[]> = {
  embeddings: ["dimensions", "encoding_format", "input_type"],
  speech: ["voice", "response_format", "speed"],
  chat: ["max_tokens", "temperature", "top_p", "stop", "seed"],
};

/** Model families by slug (OpenRouter's `architecture.tokenizer`), first match wins. */
const TOKENIZERS: Array<[RegExp, string]> = [
  [/^openai\//, "GPT"],
  [/^anthropic\//, "Claude"],
  [/^google\/gemma/, "Gemma"],
  [/^google\//, "Gemini"],
  [/^x-ai\//, "Grok"],
  [/^deepseek\//, "DeepSeek"],
  [/^mistralai\//, "Mistral"],
  [/^meta-llama\/llama-4/, "Llama4"],
  [/^meta-llama\/llama-3/, "Llama3"],
  [/^qwen\/qwen3/, "Qwen3"],
  [/^qwen\//, "Qwen"],
  [/^cohere\//, "Cohere"],
];

const tokenizerOf = (slug: string) => TOKENIZERS.find(([pattern]) => pattern.test(slug))?.[1] ?? "Other";

export function architectureOf(m: CatalogModelEntry): z.infer<typeof ModelSchema>["architecture"] {
  const output = OUTPUT_MODALITY[m.modality];
  if (m.modality !== "chat") {
    return {
      modality: `${m.inputModalities.join("+")}->${output}`,
      input_modalities: m.inputModalities,
      output_modalities: [output],
    };
  }
  // OpenRouter's modality string names text and images only; audio, video and files show in input_modalities.
  return {
    modality: m.inputModalities.includes("image") ? "text+image->text" : "text->text",
    input_modalities: m.inputModalities,
    output_modalities: [output],
    tokenizer: tokenizerOf(m.slug),
  };
}

/**
 * USD-per-unit strings of the first endpoint (the default route). Chat lists per-token prices as OpenRouter
 * does; embeddings price the input token and speech the character. Undefined keys drop out of the JSON.
 */
export function pricingOf(
  m: CatalogModelEntry,
  first: CatalogEndpointEntry,
): z.infer<typeof ModelSchema>["pricing"] {
  const p = first.pricing;
  const chat = m.modality === "chat";
  const usd = (micros: number | undefined) => (chat && micros !== undefined ? usdString(micros) : undefined);
  return {
    prompt: usdString(p.input_token ?? p.character ?? 0),
    completion: chat ? usdString(p.output_token ?? 0) : "0",
    input_cache_read: usd(p.cache_read_token),
    input_cache_write: usd(p.cache_write_token),
    request: p.request ? usdString(p.request) : undefined,
  };
}

function identityOf(m: CatalogModelEntry) {
  return {
    id: m.slug,
    canonical_slug: m.canonicalSlug,
    name: m.name,
    created: m.created,
    description: m.description,
  };
}

/**
 * A video model's parameters as its endpoints' capabilities say (a list per model, as for chat, would
 * have every video model take a seed, and an upscaler aspect ratios it has none of).
 */
function videoParameters(endpoints: CatalogEndpointEntry[]): string[] {
  const any = (has: (c: CatalogEndpointEntry["capabilities"]) => unknown) =>
    endpoints.some((e) => {
      const v = has(e.capabilities);
      return Array.isArray(v) ? v.length > 0 : v === true;
    });
  const listed: Array<[string, (c: CatalogEndpointEntry["capabilities"]) => unknown]> = [
    ["aspect_ratio", (c) => c.aspect_ratios],
    ["resolution", (c) => c.resolutions],
    ["duration", (c) => c.durations],
    ["seed", (c) => c.seed],
    ["generate_audio", (c) => c.audio_generation],
    ["frame_images", (c) => c.frame_images],
    ["input_references", (c) => c.references],
    ["creativity", (c) => c.upscale],
    ["upscale_factor", (c) => c.upscale],
  ];
  return listed.filter(([, has]) => any(has)).map(([name]) => name);
}

/** The parameters any endpoint of the model lists, else the modality's defaults (video: its capabilities). */
export const supportedParametersOf = (m: CatalogModelEntry): string[] =>
  union(m.endpoints, (e) => e.capabilities.parameters) ??
  (m.modality === "video" ? videoParameters(m.endpoints) : PARAMETERS[m.modality]);

/** The parameters one endpoint takes, as a model's endpoint listing shows them. */
export const endpointParametersOf = (m: CatalogModelEntry, e: CatalogEndpointEntry): string[] =>
  e.capabilities.parameters ?? (m.modality === "video" ? videoParameters([e]) : PARAMETERS[m.modality]);

export function toModel(m: CatalogModelEntry): z.infer<typeof ModelSchema> {
  const first = m.endpoints[0]!;
  return {
    ...identityOf(m),
    context_length: m.contextLength,
    architecture: architectureOf(m),
    pricing: pricingOf(m, first),
    top_provider: {
      context_length: m.contextLength,
      max_completion_tokens: first.capabilities.max_output_tokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: supportedParametersOf(m),
    default_parameters: null,
    supported_voices: m.modality === "speech" ? union(m.endpoints, (e) => e.capabilities.voices) : null,
    links: { details: `/api/v1/models/${m.slug}/endpoints` },
  };
}

export function toVideoModel(m: CatalogModelEntry): z.infer<typeof VideoModelSchema> {
  const seconds = m.endpoints[0]!.pricing.video_second;
  return {
    ...identityOf(m),
    allowed_passthrough_parameters: [],
    creativity: null,
    generate_audio: m.endpoints.some((e) => e.capabilities.audio_generation === true),
    seed: m.endpoints.some((e) => e.capabilities.seed === true),
    pricing_skus: seconds
      ? Object.fromEntries(
          Object.entries(seconds).map(([res, micros]) => [`per_second_${res}`, usdString(micros)]),
        )
      : null,
    supported_aspect_ratios: union(m.endpoints, (e) => e.capabilities.aspect_ratios),
    supported_durations: union(m.endpoints, (e) => e.capabilities.durations),
    supported_frame_images: union(m.endpoints, (e) => e.capabilities.frame_images),
    supported_resolutions: union(m.endpoints, (e) => e.capabilities.resolutions),
    supported_sizes: null,
    // As POST /videos takes it: above 0, at most 16 (no least value to state).
    upscale_factor: m.endpoints.some((e) => e.capabilities.upscale === true) ? { min: null, max: 16 } : null,
  };
}

export const modelsListBody = (models: CatalogModelEntry[]) => ({
  data: models.map(toModel),
  links: { next: null },
  total_count: models.length,
});
