// The providers the catalog routes to, as GET /providers and the endpoint listings name them.
import type { LoadedCatalog } from "./types";

/** Display names (OpenRouter's `provider_name` spelling) of the catalog's provider slugs. */
const DISPLAY_NAMES: Record<string, string> = {
  anthropic: "Anthropic",
  cerebras: "Cerebras",
  cohere: "Cohere",
  deepinfra: "DeepInfra",
  deepseek: "DeepSeek",
  elevenlabs: "ElevenLabs",
  fireworks: "Fireworks",
  "google-ai-studio": "Google AI Studio",
  "google-vertex": "Google",
  groq: "Groq",
  mistral: "Mistral",
  openai: "OpenAI",
  together: "Together",
  xai: "xAI",
};

const SLUG_OF_NAME = new Map(Object.entries(DISPLAY_NAMES).map(([slug, name]) => [name.toLowerCase(), slug]));

/**
 * The provider slug a caller means, given a slug or a display name in any case (`Sandbox`, `SANDBOX`,
 * `Google AI Studio`, `google-ai-studio`): what the endpoint listings show is what callers type.
 */
export function providerSlugOf(name: string): string {
  const lower = name.trim().toLowerCase();
  return SLUG_OF_NAME.get(lower) ?? lower.replace(/\s+/g, "-");
}

/** A slug the table does not know reads as its words capitalised: `sandbox-backup` -> `Sandbox Backup`. */
export function providerDisplayName(slug: string): string {
  return (
    DISPLAY_NAMES[slug] ??
    slug
      .split("-")
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join(" ")
  );
}

export interface CatalogProvider {
  slug: string;
  name: string;
}

/** Every provider some catalog endpoint names, by slug. */
export function catalogProviders(catalog: LoadedCatalog): CatalogProvider[] {
  const slugs = new Set(catalog.models.flatMap((m) => m.endpoints.map((e) => e.provider)));
  return [...slugs].sort().map((slug) => ({ slug, name: providerDisplayName(slug) }));
}
