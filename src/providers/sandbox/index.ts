// The offline sandbox provider: deterministic answers with no network, used by `npm start` and tests.
import type { ProviderAdapter } from "../types";
import { sandboxChat, sandboxCountTokens } from "./chat";
import { sandboxEmbeddings } from "./embeddings";
import { sandboxSpeech } from "./speech";
import { sandboxVideos } from "./video";

export const sandboxAdapter: ProviderAdapter = {
  name: "sandbox",
  requiresApiKey: false,
  embeddings: sandboxEmbeddings,
  speech: sandboxSpeech,
  videos: sandboxVideos,
  chat: sandboxChat,
  countTokens: sandboxCountTokens,
};
