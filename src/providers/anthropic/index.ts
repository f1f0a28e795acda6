// The Anthropic Messages adapter: chat over POST /v1/messages, always streamed, translated to and from OpenAI shapes.
import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import { chatStream, midStreamFailure, readSse } from "../sse";
import type { CallContext, ChatChunk, ChatRequest, ChatStream, ProviderAdapter } from "../types";
import { anthropicBody } from "./request";
import { anthropicChunks } from "./stream";

/** The API version every request names; the event shapes read in stream.ts are this version's. */
export const ANTHROPIC_VERSION = "2023-06-01";

async function* chunks(res: Response, call: CallContext): AsyncGenerator<ChatChunk, void, undefined> {
  try {
    yield* anthropicChunks(readSse(res.body!), call.endpoint.provider);
  } catch (err) {
    throw midStreamFailure(err, call);
  }
}

export async function anthropicChat(request: ChatRequest, call: CallContext): Promise<ChatStream> {
  const body = anthropicBody(request, call.endpoint.upstreamModel);
  const res = await call.fetch(`${call.endpoint.baseUrl}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": call.credential.apiKey,
      "anthropic-version": ANTHROPIC_VERSION,
      "Content-Type": "application/json",
      Accept: "text/event-stream",
    },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  if (!res.body) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} answered without a body`,
    });
  }
  return chatStream(body, chunks(res, call));
}

export const anthropicAdapter: ProviderAdapter = {
  name: "anthropic",
  requiresApiKey: true,
  chat: anthropicChat,
};
