// ElevenLabs-style text-to-speech: voice in the path, `xi-api-key` auth, output format as a query parameter.

import { upstreamErrorFromResponse } from "../errors";
import { optionsOf } from "../options";
import type { CallContext, SpeechRequest, SpeechResult } from "../types";

/** The gateway's two formats in ElevenLabs' vocabulary; PCM is 24 kHz 16-bit little-endian like OpenAI's. */
const OUTPUT_FORMAT = { mp3: "mp3_44100_128", pcm: "pcm_24000" } as const;

/**
 * POST {base}/v1/text-to-speech/{voice_id}/stream. Speed goes in `voice_settings` when the endpoint
 * supports it; passthrough options are merged into the body (e.g. `voice_settings.stability`).
 */
export async function elevenlabsSpeech(request: SpeechRequest, call: CallContext): Promise<SpeechResult> {
  const passthrough = optionsOf(request.passthrough);
  const settings = {
    ...(typeof passthrough.voice_settings === "object"
      ? (passthrough.voice_settings as Record<string, unknown>)
      : {}),
    ...(request.speed !== undefined ? { speed: request.speed } : {}),
  };
  const body = {
    ...passthrough,
    text: request.input,
    model_id: call.endpoint.upstreamModel,
    ...(Object.keys(settings).length ? { voice_settings: settings } : {}),
  };
  const url = `${call.endpoint.baseUrl}/v1/text-to-speech/${encodeURIComponent(request.voice)}/stream?output_format=${OUTPUT_FORMAT[request.format]}`;
  const res = await call.fetch(url, {
    method: "POST",
    headers: { "xi-api-key": call.credential.apiKey, "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok || !res.body) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  return res;
}
