// The offline sandbox provider: deterministic answers with no network, used by `npm start` and tests.
// Speech and video parts (issue 5) plug in here as `speech` and `videos`.
import type { ProviderAdapter } from "../types";
import { sandboxEmbeddings } from "./embeddings";
import { sandboxSpeech } from "./speech";
import { sandboxVideos } from "./video";

export const sandboxAdapter: ProviderAdapter = {
  name: "sandbox",
  requiresApiKey: false,
  embeddings: sandboxEmbeddings,
  speech: sandboxSpeech,
  videos: sandboxVideos,
};
