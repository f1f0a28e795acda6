// POST /audio/speech on the inference pipeline: fail over before the first byte, then pipe the upstream audio through.
import { z } from "@hono/zod-openapi";
import type { CatalogEndpointEntry } from "../catalog/types";
import { filterTexts } from "../guardrails/apply-filters";
import { SPEECH_STREAM_MS } from "../inference/deadlines";
import { requestIo, runInference, sessionIdOf, underCurrentPolicy } from "../inference/pipeline";
import { presetProviderOptions } from "../inference/preset";
import { apiRoute, createRouter, jsonBody } from "../lib/openapi";
import { characterCount } from "../lib/text";
import { supports } from "../providers/registry";
import type { SpeechRequest as AdapterSpeechRequest } from "../providers/types";
import type { Requirement } from "../routing/filters";
import { SPEECH_CONTENT_TYPES, type SpeechRequest, SpeechRequestSchema } from "../schemas/speech";

const binary = (type: string) => ({ [type]: { schema: z.string().openapi({ format: "binary" }) } });

const createSpeech = apiRoute(
  {
    method: "post",
    path: "/audio/speech",
    operationId: "createAudioSpeech",
    tags: ["Text-to-speech"],
    security: [{ bearer: [] }],
    summary: "Synthesize speech (streamed)",
    request: { body: jsonBody(SpeechRequestSchema) },
    responses: {
      200: {
        description: "Raw audio as the provider produces it: MP3, or 16-bit little-endian PCM",
        content: { ...binary("audio/mpeg"), ...binary("audio/pcm") },
      },
    },
  },
  { inference: true },
);

const hard = (param: string, fits: (e: CatalogEndpointEntry) => boolean): Requirement => ({
  param,
  hard: true,
  fits,
});

/** What the body asks of an endpoint; speed is not one of them (it is dropped where unsupported). */
export function speechRequirements(body: SpeechRequest): Requirement[] {
  const out = [
    hard("speech", (e) => supports(e.adapter, "speech")),
    hard(
      `response_format ${body.response_format}`,
      (e) => e.capabilities.formats?.includes(body.response_format) ?? true,
    ),
  ];
  if (body.input_references) {
    out.push(hard("input_references (voice cloning)", (e) => e.capabilities.voice_cloning === true));
  } else {
    // A cloned voice needs no catalog voice; otherwise a listed set of voices must contain it.
    out.push(hard(`voice '${body.voice}'`, (e) => e.capabilities.voices?.includes(body.voice) ?? true));
  }
  return out;
}

/** Speech is billed per input character (plus any flat per-request price). */
export function speechCostMicros(endpoint: CatalogEndpointEntry, chars: number): number {
  return Math.ceil((endpoint.pricing.character ?? 0) * chars + (endpoint.pricing.request ?? 0));
}

/** The voice reference's transcript (its text part), which the provider reads as the input's. */
const transcriptOf = (body: SpeechRequest) => body.input_references?.find((p) => p.type === "text")?.text;

function adapterRequest(
  body: SpeechRequest,
  input: string,
  transcript: string | undefined,
  endpoint: CatalogEndpointEntry,
): AdapterSpeechRequest {
  const audio = body.input_references?.find((p) => p.type === "input_audio");
  return {
    input,
    voice: body.voice,
    format: body.response_format,
    speed: endpoint.capabilities.speed ? body.speed : undefined,
    reference: audio
      ? {
          audioDataUrl: audio.input_audio.data.startsWith("data:")
            ? audio.input_audio.data
            : `data:audio/${audio.input_audio.format ?? "wav"};base64,${audio.input_audio.data}`,
          transcript,
        }
      : undefined,
    passthrough: body.provider?.options?.[endpoint.provider],
  };
}

export const speechRoutes = createRouter().openapi(createSpeech, (c) =>
  underCurrentPolicy(c, async () => {
    const body = c.req.valid("json");
    const auth = c.get("auth");
    // The content filters read every text the provider gets: the input and a voice reference's transcript.
    const transcript = transcriptOf(body);
    const filtered = filterTexts(
      auth.policy,
      transcript === undefined ? [body.input] : [body.input, transcript],
    );
    const [input, filteredTranscript] = filtered.texts as [string, string | undefined];
    const signal = c.req.raw.signal;
    const sessionId = sessionIdOf(c.req.header("x-session-id"), body.session_id);
    // Priced per character as the input's limit counts them: code points (an emoji is one).
    const characters = characterCount(input);
    // A preset named as the model brings its provider options when the request sends none.
    const options = body.provider?.options ?? (await presetProviderOptions(c.env, auth, body.model));
    const sent = options === body.provider?.options ? body : { ...body, provider: { options } };

    return runInference(requestIo(c), {
      capability: "speech",
      route: { modality: "speech", model: body.model, requirements: speechRequirements(body) },
      worstCaseMicros: (a) => speechCostMicros(a.endpoint, characters),
      call: (adapter, attempt, ctx) =>
        adapter.speech!(adapterRequest(sent, input, filteredTranscript, attempt.endpoint), ctx),
      respond: (upstream, served) => {
        const costMicros = speechCostMicros(served.attempt.endpoint, characters);
        // Native pipe: the bytes never pass through JavaScript, and the promise tells when the stream
        // ended. A client that disconnects cancels `readable`, which errors `writable`, and the pipe
        // cancels the upstream body. With preventAbort an upstream failure leaves `writable` alone, so
        // which side ended the pipe is known: an errored `writable` is the client leaving (recorded
        // cancelled, as chat records it), otherwise the upstream failed and the client's stream is
        // errored here. The provider bills the whole input once it started speaking, so the charge
        // does not depend on how much audio reached the client.
        const { readable, writable } = new IdentityTransformStream();
        const usage = { characters };
        // An upstream that trickles audio forever is cut at SPEECH_STREAM_MS (failed, as any cut).
        const cut = AbortSignal.timeout(SPEECH_STREAM_MS);
        const done = upstream.body!.pipeTo(writable, { preventAbort: true, signal: cut }).then(
          () => ({ costMicros, usage }),
          (err: unknown) => {
            const writer = writable.getWriter();
            if (signal.aborted || writer.desiredSize === null) {
              return { costMicros, usage, status: "cancelled" as const, error: "client disconnected" };
            }
            writer.abort(err).catch(() => {});
            return {
              costMicros,
              usage,
              status: "failed" as const,
              error: `stream interrupted: ${String(err)}`,
            };
          },
        );
        const response = new Response(readable, {
          status: 200,
          headers: { "Content-Type": SPEECH_CONTENT_TYPES[body.response_format] },
        });
        return { response, done };
      },
      record: {
        metadata: body.trace ?? null,
        user: body.user ?? null,
        flags: filtered.flags,
        streamed: true,
        sessionId,
      },
    });
  }),
);
