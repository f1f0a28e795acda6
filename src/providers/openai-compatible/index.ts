// The OpenAI-compatible adapter factory: most providers are one configuration of it.
// Speech (/audio/speech), video (/videos) and chat (/chat/completions, or /responses) parts sit beside embeddings.ts.
import type { ProviderAdapter } from "../types";
import { type OpenAiChatOptions, openAiChat } from "./chat";
import { openAiEmbeddings } from "./embeddings";
import { bearer, type OpenAiCompatibleOptions } from "./options";
import { openAiResponses, wantsResponsesApi } from "./responses";
import { openAiSpeech } from "./speech";
import { openAiVideos } from "./video";

export function createOpenAiCompatible(
  options: OpenAiCompatibleOptions,
  chatOptions: OpenAiChatOptions = {},
): ProviderAdapter {
  return {
    name: options.name,
    requiresApiKey: true,
    embeddings: (req, call) => openAiEmbeddings(options, req, call),
    speech: (req, call) => openAiSpeech(options, req, call),
    videos: openAiVideos(options),
    chat: (req, call) =>
      options.responsesApi && wantsResponsesApi(req)
        ? openAiResponses(options, req, call)
        : openAiChat(options, chatOptions, req, call),
  };
}

/** Plain OpenAI wire format with a bearer key: OpenAI itself and the many hosts that copy it. */
export const openAiCompatibleAdapter = createOpenAiCompatible({
  name: "openai-compatible",
  authHeaders: bearer,
  sendsInputType: true,
});

/**
 * OpenAI itself: the same wire format, but its reasoning models (gpt-5, o-series) refuse `max_tokens`
 * and take `max_completion_tokens`, which every current OpenAI chat model accepts. It takes
 * `prompt_cache_key`, the `developer` role and an assistant turn's `refusal` too. Every OpenAI chat model
 * serves the Responses API: responses clients are answered from there.
 */
export const openAiAdapter = createOpenAiCompatible(
  { name: "openai", authHeaders: bearer, sendsInputType: true, responsesApi: true },
  { maxTokensField: "max_completion_tokens", promptCacheKey: true, developerRole: true, refusalField: true },
);
