// POST /audio/speech: route, reserve, fail over before the first byte, then stream the upstream body through.
import { createRoute, z } from "@hono/zod-openapi";
import type { DataRegion } from "../../regions";
import { admit } from "../billing/admission";
import { getCatalog } from "../catalog/cache";
import type { CatalogEndpointEntry } from "../catalog/types";
import { type GenerationRecord, recordThenSettle } from "../generations/record";
import { createRouter, errorResponses, jsonBody } from "../lib/openapi";
import { getAdapter, supports } from "../providers/registry";
import type { SpeechRequest as AdapterSpeechRequest } from "../providers/types";
import { runAttempts } from "../routing/attempts";
import { filterTexts } from "../routing/content-filters";
import { credentialResolver, routeContextFor } from "../routing/context";
import { admissionFor } from "../routing/execute";
import type { Requirement } from "../routing/filters";
import { assertRoutable, planRoute } from "../routing/plan";
import { applyModelPreset } from "../routing/preset";
import { SPEECH_CONTENT_TYPES, type SpeechRequest, SpeechRequestSchema } from "../schemas/speech";
import { newGenerationId } from "../videos/ids";

const binary = (type: string) => ({ [type]: { schema: z.string().openapi({ format: "binary" }) } });

const createSpeech = createRoute({
  method: "post",
  path: "/audio/speech",
  tags: ["Text-to-speech"],
  security: [{ bearer: [] }],
  summary: "Synthesize speech (streamed)",
  request: { body: jsonBody(SpeechRequestSchema) },
  responses: {
    200: {
      description: "Raw audio as the provider produces it: MP3, or 16-bit little-endian PCM",
      content: { ...binary("audio/mpeg"), ...binary("audio/pcm") },
    },
    ...errorResponses(400, 401, 402, 403, 404, 413, 429, 500, 502, 503, 524, 529),
  },
});

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

function adapterRequest(
  body: SpeechRequest,
  input: string,
  endpoint: CatalogEndpointEntry,
): AdapterSpeechRequest {
  const audio = body.input_references?.find((p) => p.type === "input_audio");
  const text = body.input_references?.find((p) => p.type === "text");
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
          transcript: text?.text,
        }
      : undefined,
    passthrough: body.provider?.options?.[endpoint.provider],
  };
}

export const speechRoutes = createRouter().openapi(createSpeech, async (c) => {
  const body = c.req.valid("json");
  const auth = c.get("auth");
  const { env } = c;
  const filtered = filterTexts(auth.policy, [body.input]);
  const input = filtered.texts[0]!;

  const [catalog, context, route] = await Promise.all([
    getCatalog(env.DB),
    routeContextFor(env, auth),
    applyModelPreset(env, auth, { modality: "speech" as const, model: body.model }),
  ]);
  const plan = planRoute(
    { ...route, requirements: speechRequirements(body) },
    { ...context, catalog, region: env.REGION as DataRegion },
  );
  assertRoutable(plan);

  const generationId = newGenerationId();
  const reservation = await admit(
    env,
    auth,
    admissionFor(plan, generationId, (a) => speechCostMicros(a.endpoint, input.length)),
    c.executionCtx,
  );

  const record: Omit<GenerationRecord, "status" | "model" | "usage"> = {
    id: generationId,
    accountId: auth.account.id,
    workspaceId: auth.key.workspaceId,
    keyHash: auth.key.hash,
    modality: "speech",
    region: env.REGION,
    metadata: body.trace ?? null,
    user: body.user ?? null,
    flags: filtered.flags.length ? filtered.flags : null,
  };

  const outcome = await runAttempts(plan, {
    modality: "speech",
    resolveCredential: credentialResolver(env, context.byok),
    // A client that leaves while we wait for the first byte aborts the upstream call too.
    signal: c.req.raw.signal,
    call: (attempt, ctx) =>
      getAdapter(attempt.endpoint.adapter)!.speech!(adapterRequest(body, input, attempt.endpoint), ctx),
  });
  if (!outcome.ok) {
    recordThenSettle(c.executionCtx, env, reservation, {
      ...record,
      model: plan.model,
      status: "failed",
      usage: {},
      attempts: outcome.log as unknown as Array<Record<string, unknown>>,
      error: `${outcome.error.status}: ${outcome.error.message}`,
    });
    throw outcome.error;
  }

  const { value: upstream, attempt, credential } = outcome;
  const isByok = credential.source === "byok";
  const cost = speechCostMicros(attempt.endpoint, input.length);
  // Native pipe: the bytes never pass through JavaScript, and the promise tells us when the stream ended.
  // A client that disconnects cancels `readable`, which errors the pipe and cancels the upstream body.
  const { readable, writable } = new IdentityTransformStream();
  const finished = upstream.body!.pipeTo(writable).then(
    () => null,
    (err: unknown) =>
      c.req.raw.signal.aborted ? "client disconnected" : `stream interrupted: ${String(err)}`,
  );
  c.executionCtx.waitUntil(
    finished.then((interrupted) => {
      // The provider bills the whole input once it started speaking, so the charge does not depend on how
      // much audio reached the client; an interruption is recorded on the generation.
      recordThenSettle(c.executionCtx, env, reservation, {
        ...record,
        model: attempt.model.slug,
        provider: attempt.endpoint.provider,
        endpointId: attempt.endpoint.id,
        isByok,
        status: interrupted ? "failed" : "completed",
        usage: { characters: input.length },
        costMicros: cost,
        attempts: outcome.log as unknown as Array<Record<string, unknown>>,
        error: interrupted,
      });
    }),
  );
  return new Response(readable, {
    status: 200,
    headers: { "Content-Type": SPEECH_CONTENT_TYPES[body.response_format], "X-Generation-Id": generationId },
  });
});
