// The Cohere-style adapter: a non-OpenAI embeddings wire format (POST /v2/embed with input types).
import type { ProviderAdapter } from "../types";
import { cohereEmbeddings } from "./embeddings";

export const cohereAdapter: ProviderAdapter = {
  name: "cohere",
  requiresApiKey: true,
  embeddings: cohereEmbeddings,
};
