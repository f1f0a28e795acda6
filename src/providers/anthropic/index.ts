import { chatStream, midStreamFailure, postForStream, rawChunks } from "../sse";
import type { CallContext, ChatRequest, ChatStream, ProviderAdapter } from "../types";
import { anthropicCountTokens } from "./count-tokens";
import { anthropicBody } from "./request";
import { AnthropicStreamReader } from "./stream";

/** The API version every request names; the event shapes read in stream.ts are this version's. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** The key and API version; a Messages client's own version and beta flags go on as it sent them (betas unlock request fields). */
function headersOf(request: ChatRequest, call: CallContext): Record<string, string> {
  const headers: Record<string, string> = {
    "x-api-key": call.credential.apiKey,
    "anthropic-version": request.anthropic?.version ?? ANTHROPIC_VERSION,
  };
  if (request.anthropic?.beta) headers["anthropic-beta"] = request.anthropic.beta;
  return headers;
}

export async function anthropicChat(request: ChatRequest, call: CallContext): Promise<ChatStream> {
  const body = anthropicBody(request, call.endpoint.upstreamModel);
  const res = await postForStream(
    call,
    `${call.endpoint.baseUrl}/v1/messages`,
    headersOf(request, call),
    body,
  );
  // Each chunk keeps the events it was read from: a Messages client is sent those as they came.
  const reader = new AnthropicStreamReader(call.endpoint.provider);
  const chunks = rawChunks(
    res.body,
    (event) => reader.read(event),
    (err) => midStreamFailure(err, call),
  );
  return chatStream(chunks, "anthropic-messages");
}

export const anthropicAdapter: ProviderAdapter = {
  name: "anthropic",
  requiresApiKey: true,
  chat: anthropicChat,
  countTokens: (request, call) => anthropicCountTokens(request, call, headersOf(request, call)),
};
