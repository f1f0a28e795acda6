// The Gemini API adapter (Google AI Studio, `generateContent` wire format): chat only.
import type { ProviderAdapter } from "../types";
import { geminiChat } from "./chat";
import { geminiUnboundedMedia } from "./request";

export const googleGeminiAdapter: ProviderAdapter = {
  name: "google-gemini",
  requiresApiKey: true,
  chat: geminiChat,
  unboundedMedia: geminiUnboundedMedia,
};
