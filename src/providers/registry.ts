// The adapter registry: catalog endpoints name an adapter; the router looks it up here and never names a provider.
import { anthropicAdapter } from "./anthropic";
import { cohereAdapter } from "./cohere";
import { elevenlabsAdapter } from "./elevenlabs";
import { googleGeminiAdapter } from "./google";
import { lroVideoAdapter } from "./lro-video";
import { openAiAdapter, openAiCompatibleAdapter } from "./openai-compatible";
import { sandboxAdapter } from "./sandbox";
import type { Capability, ProviderAdapter } from "./types";

const ADAPTERS: ProviderAdapter[] = [
  sandboxAdapter,
  openAiCompatibleAdapter,
  openAiAdapter,
  cohereAdapter,
  elevenlabsAdapter,
  lroVideoAdapter,
  googleGeminiAdapter,
  anthropicAdapter,
];

const byName = new Map(ADAPTERS.map((a) => [a.name, a]));

export function getAdapter(name: string): ProviderAdapter | undefined {
  return byName.get(name);
}

export function supports(name: string, capability: Capability): boolean {
  const adapter = byName.get(name);
  return adapter != null && adapter[capability] != null;
}
