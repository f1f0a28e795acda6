// The ElevenLabs-style adapter: speech only.
import type { ProviderAdapter } from "../types";
import { elevenlabsSpeech } from "./speech";

export const elevenlabsAdapter: ProviderAdapter = {
  name: "elevenlabs",
  requiresApiKey: true,
  speech: elevenlabsSpeech,
};
