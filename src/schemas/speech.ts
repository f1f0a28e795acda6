// POST /audio/speech: the request body (field names as @openrouter/sdk and the openai client send them).
import { z } from "@hono/zod-openapi";
import { characterCount } from "../lib/text";
import {
  audioData,
  EndUserSchema,
  ProviderPassthroughSchema,
  SessionIdSchema,
  TraceSchema,
} from "./media-common";

export const SPEECH_FORMATS = ["mp3", "pcm"] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export const SPEECH_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: "audio/mpeg",
  pcm: "audio/pcm",
};

/** Longest input accepted; also bounds the worst-case cost reserved before the upstream call. */
export const MAX_SPEECH_INPUT_CHARS = 100_000;

const ReferenceAudioSchema = z.object({
  type: z.literal("input_audio"),
  input_audio: z.object({
    data: audioData({ chars: 20 * 1024 * 1024, message: "reference audio is at most 20 MiB of base64" }),
    format: z.string().max(16).optional(),
  }),
});

const ReferenceTextSchema = z.object({
  type: z.literal("text"),
  text: z.string().min(1).max(10_000),
});

/** Exactly one audio part, optionally followed by one transcript part. */
export const SpeechReferencesSchema = z
  .array(z.discriminatedUnion("type", [ReferenceAudioSchema, ReferenceTextSchema]))
  .min(1)
  .max(2)
  .superRefine((parts, ctx) => {
    if (parts[0]?.type !== "input_audio") {
      ctx.addIssue({
        code: "custom",
        path: [0],
        message: "the first part must be the input_audio voice sample",
      });
    }
    if (parts.filter((p) => p.type === "input_audio").length !== 1) {
      ctx.addIssue({ code: "custom", message: "exactly one input_audio part is required" });
    }
  });

export const SpeechRequestSchema = z
  .object({
    input: z
      .string()
      .min(1, "input must not be empty")
      .refine(
        (s) => s.length <= MAX_SPEECH_INPUT_CHARS || characterCount(s) <= MAX_SPEECH_INPUT_CHARS,
        `input is at most ${MAX_SPEECH_INPUT_CHARS} characters`,
      )
      // JSON Schema's maxLength counts code points, as the check above does.
      .openapi({ maxLength: MAX_SPEECH_INPUT_CHARS }),
    model: z.string().min(1),
    voice: z.string().min(1, "voice must be at least 1 character").max(256),
    response_format: z.enum(SPEECH_FORMATS).default("mp3"),
    speed: z.number().min(0.25).max(4).optional(),
    // The openai SDK's stream_format: the audio is always streamed as raw bytes, so asking for SSE
    // events is refused rather than answered in another shape than the client parses.
    stream_format: z
      .enum(["audio"], {
        error: "stream_format must be 'audio': speech is streamed as raw audio bytes, not SSE",
      })
      .optional(),
    input_references: SpeechReferencesSchema.optional(),
    provider: ProviderPassthroughSchema.optional(),
    trace: TraceSchema.optional(),
    session_id: SessionIdSchema.optional(),
    user: EndUserSchema.optional(),
  })
  .openapi("SpeechRequest");

export type SpeechRequest = z.infer<typeof SpeechRequestSchema>;
