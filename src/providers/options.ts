// What `provider.options.<slug>` may add to an upstream body: fields of that provider the gateway does not
// set and does not bill by. The request schemas refuse the rest (400), and every adapter merges the options
// under its own fields, so the body sent upstream is the one that was filtered, reserved and priced.

/**
 * Fields no provider option may set, in any adapter. Each either carries what the gateway measured and
 * filtered (the prompt, the tools), bounds or multiplies what it reserved (output limits, sample counts,
 * a video's length or size), or picks a price the catalog does not list (a service tier, the model).
 */
export const GATEWAY_OWNED_OPTIONS: ReadonlySet<string> = new Set([
  // The model and the wire mode.
  "model",
  "stream",
  "stream_options",
  "store",
  "background",
  // The prompt: filtered by guardrails and measured for the reservation.
  "messages",
  "input",
  "instructions",
  "system",
  "prompt",
  "contents",
  "systemInstruction",
  "system_instruction",
  "cachedContent",
  "cached_content",
  "previous_response_id",
  "conversation",
  // Tools, some billed per call by the provider (web search, code execution, MCP).
  "tools",
  "functions",
  "mcp_servers",
  "container",
  "web_search_options",
  // Output limits and counts: the reservation is made for one answer of at most the request's limit.
  "max_tokens",
  "max_completion_tokens",
  "max_output_tokens",
  "maxOutputTokens",
  "n",
  "best_of",
  "candidateCount",
  "candidate_count",
  "sampleCount",
  "sample_count",
  "numberOfVideos",
  "number_of_videos",
  "num_outputs",
  // What a video or a voice is priced by.
  "duration",
  "durationSeconds",
  "duration_seconds",
  "seconds",
  "resolution",
  "size",
  "generateAudio",
  "generate_audio",
  "text",
  // Prompts the content filters would not read, and dearer modes (Anthropic's fast mode and regional
  // inference are priced above the catalog's price).
  "negativePrompt",
  "negative_prompt",
  "speed",
  "inference_geo",
]);

/**
 * Fields of a nested object that are owned the same way (Gemini's output limit and candidate count). A
 * Map: caller keys such as `constructor` must not find Object.prototype's members.
 */
const OWNED_NESTED: ReadonlyMap<string, readonly string[]> = new Map([
  ["generationConfig", ["maxOutputTokens", "candidateCount"]],
  ["generation_config", ["max_output_tokens", "candidate_count"]],
]);

/**
 * Service tiers no dearer than the catalog's price (OpenAI's "default" and "flex", Anthropic's
 * "standard_only"): anything else ("priority", or "auto" that may pick it) would be served at a price
 * the reservation and the bill do not know.
 */
const CHEAP_SERVICE_TIERS: ReadonlySet<unknown> = new Set(["default", "flex", "standard_only"]);

/**
 * The paths, under one provider's options, of fields it may not set (empty when there are none).
 * `text` is owned except as the Responses API's `text` object (output format and verbosity).
 */
export function ownedOptionPaths(options: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(options)) {
    if (key === "text" && typeof value === "object" && value !== null && !Array.isArray(value)) continue;
    if (GATEWAY_OWNED_OPTIONS.has(key)) out.push(key);
    else if (key === "service_tier" && !CHEAP_SERVICE_TIERS.has(value)) out.push(key);
    else {
      const nested = OWNED_NESTED.get(key);
      if (nested && typeof value === "object" && value !== null) {
        for (const inner of nested) if (Object.hasOwn(value, inner)) out.push(`${key}.${inner}`);
      }
    }
  }
  return out;
}

/**
 * One provider's options without the fields it may not set, for an adapter to merge under its own
 * fields (`{ ...optionsOf(p), ...body }`). The request schemas already refused such fields; this keeps
 * options stored before that rule (a preset, a video job) from reaching the upstream either.
 */
export function optionsOf(passthrough: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!passthrough) return {};
  const owned = ownedOptionPaths(passthrough);
  if (owned.length === 0) return passthrough;
  const out: Record<string, unknown> = { ...passthrough };
  for (const path of owned) {
    const [key, inner] = path.split(".") as [string, string | undefined];
    if (inner === undefined) delete out[key];
    else {
      const nested = { ...(out[key] as Record<string, unknown>) };
      delete nested[inner];
      out[key] = nested;
    }
  }
  return out;
}
