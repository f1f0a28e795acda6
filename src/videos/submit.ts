// POST /videos: idempotency, then plan and admission on the inference pipeline, the D1 row and the job's Durable Object.
import { type Reservation, settle } from "../billing/admission";
import { getCatalog } from "../catalog/cache";
import { findModel } from "../catalog/types";
import type { AuthContext } from "../db/auth-records";
import type { Bindings } from "../env";
import type { WaitUntil } from "../generations/record";
import { filterTexts } from "../guardrails/apply-filters";
import { attributionOf, planAndAdmit } from "../inference/pipeline";
import { applyModelPreset, presetProviderOptions } from "../inference/preset";
import { ApiError, conflict } from "../lib/errors";
import { sha256Hex } from "../lib/hash";
import { errorText, log } from "../lib/log";
import type { VideoSubmitRequest } from "../providers/types";
import type { PlannedAttempt, RoutePlan } from "../routing/plan";
import { pricedResolution, type VideoJobWire, type VideoRequest } from "../schemas/videos";
import { newVideoJobId } from "./ids";
import { billedSeconds, checkVideoModelRules, videoRequirements } from "./requirements";
import { JOB_TTL_MS, type VideoJobState, videoCostMicros } from "./state";
import {
  findByIdempotencyKey,
  IDEMPOTENCY_WINDOW_MS,
  insertJob,
  jobToWire,
  releaseIdempotencyKey,
  syncJob,
  type VideoJobRow,
} from "./store";

/** Stable JSON: keys sorted at every level, so the same body always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export const requestHash = (body: VideoRequest) => sha256Hex(canonical(body));

function replay(existing: VideoJobRow, hash: string): VideoJobWire {
  if (existing.requestHash !== hash) {
    throw conflict("This Idempotency-Key was already used with a different request body");
  }
  return jobToWire(existing);
}

/** The previous job for this key within the window, or undefined (an older one frees the key). */
async function previousJob(
  env: Bindings,
  keyHash: string,
  idempotencyKey: string,
): Promise<VideoJobRow | undefined> {
  const existing = await findByIdempotencyKey(env.DB, keyHash, idempotencyKey);
  if (!existing) return undefined;
  if (Date.now() - Date.parse(existing.createdAt) < IDEMPOTENCY_WINDOW_MS) return existing;
  await releaseIdempotencyKey(env.DB, existing.id);
  return undefined;
}

/**
 * Base64 media a video request may carry inline, all its frame images and references together: the
 * job's state, request included, is one Durable Object value, which storage refuses above 2 MB (an 8 MB
 * data URL was a 500). Larger media go by URL.
 */
const VIDEO_INLINE_MEDIA_MAX = 1_500_000;

function checkInlineMedia(request: VideoSubmitRequest): void {
  const urls = [...(request.frameImages ?? []), ...(request.references ?? [])].map((m) => m.url);
  const inline = urls.filter((u) => /^data:/i.test(u)).reduce((n, u) => n + u.length, 0);
  if (inline > VIDEO_INLINE_MEDIA_MAX) {
    throw new ApiError(
      413,
      `Inline (data:) media in a video request are at most ${VIDEO_INLINE_MEDIA_MAX.toLocaleString("en-US")} characters together (this one ${inline.toLocaleString("en-US")}): pass larger images by URL`,
    );
  }
}

function adapterRequest(body: VideoRequest): VideoSubmitRequest {
  return {
    prompt: body.prompt,
    aspectRatio: body.aspect_ratio,
    resolution: body.resolution,
    size: body.size,
    durationSeconds: body.duration,
    frameImages: body.frame_images?.map((f) => ({ frameType: f.frame_type, url: f.image_url.url })),
    references: body.input_references?.map((r) =>
      r.type === "image_url"
        ? { type: "image" as const, url: r.image_url.url }
        : r.type === "audio_url"
          ? { type: "audio" as const, url: r.audio_url.url }
          : { type: "video" as const, url: r.video_url.url },
    ),
    generateAudio: body.generate_audio,
    seed: body.seed,
  };
}

/**
 * What the request's headers add to the job's generation record: the `x-session-id` session (the
 * body's `session_id` wins) and the attribution headers. They are not part of the request an
 * Idempotency-Key names, so a retry that sends other headers still replays the first job.
 */
export interface SubmitHeaders extends ReturnType<typeof attributionOf> {
  sessionId: string | null;
  /** The submitting request's X-Request-Id (a replay keeps the first job's). */
  requestId: string | null;
}

export async function submitVideo(
  env: Bindings,
  auth: AuthContext,
  body: VideoRequest,
  idempotencyKey: string | undefined,
  executionCtx?: WaitUntil,
  headers: SubmitHeaders = { sessionId: null, requestId: null, ...attributionOf(undefined) },
): Promise<VideoJobWire> {
  checkInlineMedia(adapterRequest(body));
  const hash = await requestHash(body);
  let flags: string[] = [];
  if (body.prompt) {
    const filtered = filterTexts(auth.policy, [body.prompt]);
    body = { ...body, prompt: filtered.texts[0] };
    flags = filtered.flags;
  }
  if (idempotencyKey) {
    const existing = await previousJob(env, auth.key.hash, idempotencyKey);
    if (existing) return replay(existing, hash);
  }

  const [catalog, route, presetOptions] = await Promise.all([
    getCatalog(env.DB),
    applyModelPreset(env, auth, { modality: "video" as const, model: body.model }),
    // A preset named as the model brings its provider options when the request sends none.
    body.provider?.options ? undefined : presetProviderOptions(env, auth, body.model),
  ]);
  if (presetOptions) body = { ...body, provider: { options: presetOptions } };
  const model = findModel(catalog, route.model);
  if (model?.modality === "video") checkVideoModelRules(model, body);
  // Billed seconds depend on every endpoint the plan may try (the longest default duration).
  const secondsOf = (plan: RoutePlan) =>
    billedSeconds(
      body,
      plan.attempts.map((a) => a.endpoint),
    );
  const admitted = await planAndAdmit(
    { env, auth, executionCtx },
    {
      capability: "videos",
      route: { modality: "video", model: body.model, requirements: videoRequirements(body) },
      worstCaseMicros: (a, plan) =>
        videoCostMicros(a.endpoint.pricing, pricedResolution(body), secondsOf(plan)),
      leaseMs: JOB_TTL_MS + 60 * 60 * 1000,
    },
  );
  auth = admitted.auth;
  const { plan, generationId, reservation, presetId } = admitted;
  const job = {
    id: newVideoJobId(),
    generationId,
    hash,
    idempotencyKey,
    attempts: plan.attempts,
    seconds: secondsOf(plan),
    reservation,
    headers,
    presetId,
    flags,
  };
  try {
    return await startJob(env, auth, body, job);
  } catch (err) {
    // Whatever failed after admission, the money must not stay held until the lease (hours for video).
    await release(env, reservation);
    throw err;
  }
}

/** Settles the reservation at 0; a failure is logged and the lease reclaims it, so the first error stands. */
async function release(env: Bindings, reservation: Reservation): Promise<void> {
  try {
    await settle(env, reservation, { actualMicros: 0, isByok: reservation.byok });
  } catch (err) {
    log("error", {
      message: "video reservation release failed; its lease reclaims it",
      generation_id: reservation.generationId,
      error: errorText(err),
    });
  }
}

interface AdmittedJob {
  id: string;
  generationId: string;
  hash: string;
  idempotencyKey: string | undefined;
  attempts: PlannedAttempt[];
  seconds: number;
  reservation: Reservation;
  headers: SubmitHeaders;
  presetId: string | null;
  /** What flag and redact filters noted on the prompt. */
  flags: string[];
}

/**
 * Writes the row and starts the job's Durable Object, which then owns the reservation. Throws on any
 * failure before that, and the caller releases the reservation (settling twice is harmless).
 */
async function startJob(
  env: Bindings,
  auth: AuthContext,
  body: VideoRequest,
  job: AdmittedJob,
): Promise<VideoJobWire> {
  const {
    id: jobId,
    generationId,
    hash,
    idempotencyKey,
    attempts,
    seconds,
    reservation,
    headers,
    presetId,
    flags,
  } = job;
  const chosenModel = attempts[0]!.model;
  const row = {
    id: jobId,
    accountId: auth.account.id,
    workspaceId: auth.key.workspaceId,
    keyHash: auth.key.hash,
    model: chosenModel.slug,
    status: "pending" as const,
    callbackUrl: body.callback_url ?? null,
    idempotencyKey: idempotencyKey ?? null,
    requestHash: hash,
    generationId: null,
    region: env.REGION,
  };
  if (!(await insertJob(env.DB, row))) {
    // A concurrent retry with the same key got there first: answer with its job, bill once.
    await settle(env, reservation, { actualMicros: 0, isByok: reservation.byok });
    const winner = await findByIdempotencyKey(env.DB, auth.key.hash, idempotencyKey!);
    if (!winner) throw new ApiError(409, "A request with this Idempotency-Key is in progress; retry shortly");
    return replay(winner, hash);
  }

  const now = Date.now();
  const state: VideoJobState = {
    id: jobId,
    accountId: auth.account.id,
    workspaceId: auth.key.workspaceId,
    keyHash: auth.key.hash,
    userId: auth.key.creatorUserId,
    region: env.REGION,
    model: chosenModel.slug,
    status: "pending",
    createdAt: now,
    deadlineAt: now + JOB_TTL_MS,
    request: adapterRequest(body),
    providerOptions: body.provider?.options ?? {},
    plan: attempts.map((a) => ({
      modelSlug: a.model.slug,
      endpointId: a.endpoint.id,
      credential: a.credential,
      pricing: a.endpoint.pricing,
    })),
    billedDurationSeconds: seconds,
    resolution: pricedResolution(body),
    current: null,
    polls: 0,
    pollErrors: 0,
    nextPollAt: null,
    reservation,
    generationId,
    costMicros: null,
    isByok: false,
    error: null,
    callbackUrl: body.callback_url ?? null,
    user: body.user ?? null,
    sessionId: body.session_id ?? headers.sessionId,
    httpReferer: headers.httpReferer,
    userAgent: headers.userAgent,
    requestId: headers.requestId,
    presetId,
    flags: flags.length ? flags : null,
    trace: body.trace ?? null,
    webhook: null,
    synced: true,
    finalized: false,
  };
  try {
    await env.VIDEO_JOBS.get(env.VIDEO_JOBS.idFromName(jobId)).start(state);
  } catch (err) {
    // The row says so if D1 lets it; either way the start's error is the one that answers.
    await syncJob(env.DB, {
      ...state,
      status: "failed",
      costMicros: 0,
      error: "The job could not be started",
    }).catch((syncErr: unknown) =>
      log("error", {
        message: "video job row could not be marked failed",
        job_id: jobId,
        error: errorText(syncErr),
      }),
    );
    // A retry with the same Idempotency-Key (an SDK retries a 5xx) starts again, not replays the failure.
    if (idempotencyKey) await releaseIdempotencyKey(env.DB, jobId).catch(() => {});
    throw err;
  }
  return jobToWire({ ...row, costMicros: null, isByok: false, error: null });
}
