// The sandbox's text-to-speech: playable audio whose length follows the input, streamed chunk by chunk.
import type { CallContext, SpeechRequest, SpeechResult } from "../types";
import { sandboxAudioStream, speechDurationMs } from "./audio";
import { sandboxFailureMode } from "./failures";

const CONTENT_TYPES = { mp3: "audio/mpeg", pcm: "audio/pcm" } as const;

/**
 * Answers like a streaming TTS upstream: headers at once, then audio made as the consumer reads.
 * `passthrough.duration_ms` overrides the length (handy for rehearsing very long streams).
 */
export async function sandboxSpeech(request: SpeechRequest, call: CallContext): Promise<SpeechResult> {
  await sandboxFailureMode(call);
  const override = request.passthrough?.duration_ms;
  const durationMs =
    typeof override === "number" && override > 0
      ? Math.min(override, 6 * 60 * 60 * 1000)
      : speechDurationMs(request.input.length, request.speed);
  return new Response(sandboxAudioStream(request.format, durationMs), {
    headers: { "Content-Type": CONTENT_TYPES[request.format] },
  });
}
