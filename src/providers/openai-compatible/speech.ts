// OpenAI-compatible text-to-speech (POST /audio/speech): the upstream audio body is returned untouched.

import { upstreamErrorFromResponse } from "../errors";
import { optionsOf } from "../options";
import type { CallContext, SpeechRequest, SpeechResult } from "../types";
import type { OpenAiCompatibleOptions } from "./options";

/**
 * Sends the OpenAI wire body. `speed` arrives only when the endpoint supports it; a cloning reference
 * goes out as OpenRouter-style `input_references` (OpenAI-compatible hosts that clone accept it);
 * passthrough options add provider-only fields (e.g. `instructions`) under the gateway's own (../options.ts).
 */
export async function openAiSpeech(
  options: OpenAiCompatibleOptions,
  request: SpeechRequest,
  call: CallContext,
): Promise<SpeechResult> {
  const body: Record<string, unknown> = {
    ...optionsOf(request.passthrough),
    model: call.endpoint.upstreamModel,
    input: request.input,
    voice: request.voice,
    response_format: request.format,
  };
  if (request.speed !== undefined) body.speed = request.speed;
  if (request.reference) {
    body.input_references = [
      { type: "input_audio", input_audio: { data: request.reference.audioDataUrl } },
      ...(request.reference.transcript ? [{ type: "text", text: request.reference.transcript }] : []),
    ];
  }
  const res = await call.fetch(`${call.endpoint.baseUrl}/audio/speech`, {
    method: "POST",
    headers: {
      ...options.authHeaders(call.credential.apiKey),
      "Content-Type": "application/json",
      Accept: request.format === "mp3" ? "audio/mpeg" : "audio/pcm",
    },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok || !res.body) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  return res;
}
