// The one inference pipeline every inference route runs through: plan -> admit (at most one ledger round
// trip) -> attempts with failover before the first byte -> respond -> record + settle off the response
// path. A route supplies its routing request, its adapter call, its pricing and how it answers; a
// streamed answer is settled when its stream ends, errors or the client leaves, and commits before its
// first byte when that is slow to come (early-stream.ts).

import type { Context } from "hono";
import { type AdmissionRequest, admit, type Reservation, settleInBackground } from "../billing/admission";
import { getCatalog } from "../catalog/cache";
import type { Modality } from "../catalog/types";
import type { AuthContext } from "../db/auth-records";
import type { AppEnv, Bindings } from "../env";
import { finishGeneration, type GenerationRecord, type WaitUntil } from "../generations/record";
import { ApiError, badRequest, clientClosed, INFERENCE_ONLY_MESSAGE } from "../lib/errors";
import { chargedMicros } from "../lib/money";
import type { RequestTrace } from "../lib/request-log";
import { getAdapter, supports } from "../providers/registry";
import type { CallContext, Capability, ProviderAdapter, UpstreamCredential } from "../providers/types";
import {
  assertRoutable,
  type PlannedAttempt,
  planRoute,
  type RoutePlan,
  type RouteRequest,
} from "../routing/plan";
import { SESSION_ID_MAX_LENGTH } from "../schemas/media-common";
import { type AttemptLog, type RunOutcome, runAttempts } from "./attempts";
import { credentialResolver, invalidateByokCache, type RouteContext, routeContextFor } from "./context";
import { type CommittedStream, earlyStream, FIRST_BYTE_GRACE_MS } from "./early-stream";
import { newGenerationId } from "./ids";
import { applyModelPreset } from "./preset";

export { newGenerationId } from "./ids";

export interface InferenceIo {
  env: Bindings;
  auth: AuthContext;
  executionCtx: WaitUntil;
  /** The client's request signal: a client that leaves while we wait for the upstream aborts it. */
  signal?: AbortSignal;
  /** Echoed as X-Request-Id on the answer (streamed ones included). */
  requestId?: string;
  /** The request's trace: model, provider, upstream time and cost go into its log line and Server-Timing. */
  trace?: RequestTrace;
  /** The request's headers: its attribution (see `attributionOf`) goes on the generation record. */
  headers?: Headers;
}

/** The io of an inference route's own request: its env, key, execution context, signal, trace and headers. */
export function requestIo(c: Context<AppEnv>): InferenceIo {
  return {
    env: c.env,
    auth: c.get("auth"),
    executionCtx: c.executionCtx,
    signal: c.req.raw.signal,
    trace: c.get("trace"),
    headers: c.req.raw.headers,
    requestId: c.get("requestId"),
  };
}

/** What a route tells the pipeline about its request, before any attempt. */
export interface InferencePlanSpec {
  capability: Capability;
  route: Omit<RouteRequest, "modality"> & { modality: Modality };
  /** Highest cost (micro-dollars) this request can reach on an attempt of the plan, before it is made. */
  worstCaseMicros(attempt: PlannedAttempt, plan: RoutePlan): number;
  /** Reservation lease for long-running work (video jobs). */
  leaseMs?: number;
}

export interface InferenceSpec<T, R extends Response = Response> extends InferencePlanSpec {
  /** The adapter call; resolve only once the upstream committed (its first byte), else throw UpstreamError. */
  call(adapter: ProviderAdapter, attempt: PlannedAttempt, ctx: CallContext): Promise<T>;
  /** See RunOptions.complete: the rest of an answer that is sent only once whole. */
  complete?(value: T): Promise<T>;
  /** The answer to the client, and what the call finally cost once its body is done. */
  respond(value: T, served: Served): Answer<R> | Promise<Answer<R>>;
  /** Stored on the generation record. */
  record: {
    metadata?: Record<string, unknown> | null;
    user?: string | null;
    flags?: string[];
    /** The client API when the modality does not say it (`responses`, `messages` on chat). */
    apiType?: string;
    /** Whether the client asked for a streamed answer. */
    streamed: boolean;
    /** The caller's session (see `sessionIdOf`). */
    sessionId?: string | null;
    /** The preset the route applied to the request itself (chat's); a model preset is found here. */
    presetId?: string | null;
  };
  /** 408 for embeddings (the spec lists it) and chat formats (OpenRouter's), 524 otherwise. */
  timeoutStatus?: 408 | 524;
  /**
   * A streamed answer: with no first byte within FIRST_BYTE_GRACE_MS it commits (200, keep-alives) while
   * the attempts run on, and a failure after that is written in the stream: `failed` gives the format's
   * frames for the error the HTTP answer would have carried.
   */
  streamed?: { failed(error: ApiError, generationId: string, model: string): string };
}

/** The attempt that served the request. */
export interface Served {
  attempt: PlannedAttempt;
  credential: UpstreamCredential;
  generationId: string;
  isByok: boolean;
  log: AttemptLog[];
  /** A streamed answer committed before this attempt's first byte: the answer goes on in its pipe. */
  committed?: CommittedStream;
}

export interface Answer<R extends Response = Response> {
  response: R;
  /** Resolves when the answer is complete (at once for JSON; at the end of a stream). Must not reject. */
  done: Promise<Final>;
}

/** What is recorded and settled for a served request. */
export interface Final {
  costMicros: number;
  usage: Record<string, number>;
  status?: "completed" | "failed" | "cancelled";
  error?: string | null;
  /**
   * How the answer ended (chat: stop, length, tool_calls, content_filter) and the provider's own word; a
   * failed record reads as "error" whatever it says (db/generations.ts).
   */
  finishReason?: string | null;
  nativeFinishReason?: string | null;
  /** The provider's id for its answer, when it gave one (GET /generation's `upstream_id`). */
  upstreamId?: string | null;
}

/** Longest attribution header values kept; longer ones are cut, never refused (browsers and SDKs set them). */
const REFERER_MAX_LENGTH = 512;
const USER_AGENT_MAX_LENGTH = 256;

/**
 * Who sent the request, for the generation record: the app's `HTTP-Referer` (OpenRouter's attribution
 * header; a browser's `Referer` otherwise) and the client's `User-Agent`, each cut to its bound.
 */
export function attributionOf(headers: Headers | undefined): {
  httpReferer: string | null;
  userAgent: string | null;
} {
  const referer = headers?.get("http-referer") ?? headers?.get("referer");
  const agent = headers?.get("user-agent");
  return {
    httpReferer: referer ? referer.slice(0, REFERER_MAX_LENGTH) : null,
    userAgent: agent ? agent.slice(0, USER_AGENT_MAX_LENGTH) : null,
  };
}

/**
 * The caller's session id: the body's `session_id`, else the `x-session-id` header (the body wins). A
 * header longer than the body's field may be is refused (400), before anything is admitted.
 */
export function sessionIdOf(header: string | undefined, body: string | undefined): string | null {
  if (body != null) return body;
  if (!header) return null;
  if (header.length > SESSION_ID_MAX_LENGTH) {
    throw badRequest(`x-session-id is at most ${SESSION_ID_MAX_LENGTH} characters`);
  }
  return header;
}

/** A request planned and admitted: what the attempts (now or in a video job) run under. */
export interface Admitted {
  /** The auth record admission judged (re-read when the ledger said the cached one was stale). */
  auth: AuthContext;
  plan: RoutePlan;
  context: RouteContext;
  generationId: string;
  reservation: Reservation;
  /** The preset a `model: "@preset/<slug>"` named, if any. */
  presetId: string | null;
}

/**
 * The route plan of a request under an auth record: its model preset applied, the key's policy, this
 * deployment's data region, BYOK and the endpoints whose adapter has the capability. Throws the
 * refusal (403 guardrail or region, 404 unknown model...) when no endpoint is left.
 */
export async function planFor(
  env: Bindings,
  auth: AuthContext,
  spec: Pick<InferencePlanSpec, "capability" | "route">,
  background?: WaitUntil,
): Promise<{ context: RouteContext; plan: RoutePlan; presetId: string | null }> {
  const adapterFits = {
    param: spec.capability,
    hard: true,
    fits: (e: { adapter: string }) => supports(e.adapter, spec.capability),
  };
  const [catalog, context, route] = await Promise.all([
    getCatalog(env.DB, background),
    routeContextFor(env, auth, background),
    applyModelPreset(env, auth, spec.route),
  ]);
  const plan = planRoute(
    { ...route, requirements: [adapterFits, ...(route.requirements ?? [])] },
    { catalog, region: env.REGION, ...context },
  );
  assertRoutable(plan);
  return { context, plan, presetId: route.presetId ?? null };
}

/**
 * Admission re-read the key (billing/authority.ts) and its content filters are not the ones the request
 * was filtered under: the route runs again under the new record (`underCurrentPolicy`). Nothing was
 * reserved, and no text reaches a provider past a filter added meanwhile.
 */
export class PolicyChanged extends Error {
  constructor(readonly auth: AuthContext) {
    super("The key's content filters changed while the request was admitted");
  }
}

/** Runs an inference route's work, again under the re-read key record when its filters changed. */
export async function underCurrentPolicy<T>(c: Context<AppEnv>, run: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await run();
    } catch (err) {
      if (!(err instanceof PolicyChanged)) throw err;
      if (tries >= 2) {
        throw new ApiError(
          503,
          "This API key's settings are being changed; retry shortly",
          {},
          { "Retry-After": "1" },
        );
      }
      c.set("auth", err.auth);
    }
  }
}

const filtersOf = (auth: AuthContext) => JSON.stringify(auth.policy.filters);

/** Plan, then admit; under a re-read auth record the plan is made again (see billing/authority.ts). */
export async function planAndAdmit(
  io: Omit<InferenceIo, "executionCtx"> & { executionCtx?: WaitUntil },
  spec: InferencePlanSpec,
): Promise<Admitted> {
  const { env, executionCtx } = io;
  let auth = io.auth;
  // As on OpenRouter: a management key (uncapped, and the one the console holds) runs no models.
  if (auth.key.isManagement) throw new ApiError(403, INFERENCE_ONLY_MESSAGE);
  const generationId = newGenerationId();
  // Once the free-model limits refused the request, the plan keeps only its paid attempts.
  let paidOnly = false;
  let ownKeysOnly = false;
  const planUnder = async (a: AuthContext) => {
    const planned = await planFor(env, a, spec, executionCtx);
    // An account exempt from the free-model limits has nothing to keep them from: its plan stays whole.
    let plan = a.account.exemptFreeLimits ? planned.plan : freeBehindPaidDropped(freeOnOwnKeys(planned.plan));
    if (paidOnly) plan = withoutFreeModels(plan);
    if (ownKeysOnly) plan = withOwnKeysOnly(plan);
    return { ...planned, plan };
  };
  let { context, plan, presetId } = await planUnder(auth);
  const admitPlan = () =>
    admit(
      env,
      auth,
      admissionFor(plan, generationId, spec.worstCaseMicros, spec.leaseMs),
      executionCtx,
      async (fresh) => {
        if (filtersOf(fresh) !== filtersOf(io.auth)) throw new PolicyChanged(fresh);
        // The change may have been to the workspace's BYOK credentials: the plan reads them again too.
        invalidateByokCache(fresh.key.workspaceId);
        auth = fresh;
        ({ context, plan, presetId } = await planUnder(fresh));
        return admissionFor(plan, generationId, spec.worstCaseMicros, spec.leaseMs);
      },
    );
  let reservation: Reservation;
  try {
    reservation = await admitPlan();
  } catch (err) {
    if (isFreeLimitRefusal(err) && plan.attempts.some((a) => !a.model.isFree)) {
      // A free model over its limits falls back to the paid models the request also names (`models`),
      // as a provider's 429 would.
      paidOnly = true;
      plan = withoutFreeModels(plan);
    } else if (isSpendRefusal(err) && plan.attempts.some(onOwnKey) && !plan.attempts.every(onOwnKey)) {
      // Credits, the key's cap or a budget cannot cover the platform key's fallback: the caller's own
      // keys still serve, without it (a BYOK-only plan is admitted as BYOK, where those limits may not
      // apply). `ownKeysOnly` holds for any plan made again under a re-read authority too.
      ownKeysOnly = true;
      plan = withOwnKeysOnly(plan);
    } else throw err;
    reservation = await admitPlan();
  }
  return { auth, plan, context, generationId, reservation, presetId };
}

export async function runInference<T, R extends Response = Response>(
  io: InferenceIo,
  spec: InferenceSpec<T, R>,
): Promise<R> {
  const { env, executionCtx } = io;
  // The record's creation time is the request's, not the moment the queue's consumer writes it (a
  // second or more later; across midnight, another day of analytics).
  const createdAt = new Date().toISOString();
  const { auth, plan, context, generationId, reservation, presetId } = await planAndAdmit(io, spec);
  const base: Omit<GenerationRecord, "model" | "status" | "usage"> = {
    id: generationId,
    createdAt,
    accountId: auth.account.id,
    workspaceId: auth.key.workspaceId,
    keyHash: auth.key.hash,
    modality: spec.route.modality,
    apiType: spec.record.apiType ?? null,
    region: env.REGION,
    metadata: spec.record.metadata ?? null,
    user: spec.record.user ?? null,
    flags: spec.record.flags?.length ? spec.record.flags : null,
    sessionId: spec.record.sessionId ?? null,
    presetId: spec.record.presetId ?? presetId,
    streamed: spec.record.streamed,
    ...attributionOf(io.headers),
    requestId: io.requestId ?? null,
  };

  // A streamed answer may commit before its first token (see early-stream.ts): a client that leaves
  // after that may be told by the stream alone (wrangler dev sees only a write fail).
  const leaving = spec.streamed ? new AbortController() : null;
  const signal = leaving
    ? io.signal
      ? AbortSignal.any([io.signal, leaving.signal])
      : leaving.signal
    : io.signal;
  const trace = io.trace;
  const attemptsAt = Date.now();
  const running = runAttempts(plan, {
    modality: spec.route.modality,
    timeoutStatus: spec.timeoutStatus,
    signal,
    resolveCredential: credentialResolver(env, context.byok),
    call: (attempt, ctx) => spec.call(getAdapter(attempt.endpoint.adapter)!, attempt, ctx),
    ...(spec.complete ? { complete: spec.complete } : {}),
  }).catch((err: unknown) => {
    // Never strand a reservation, even on a bug.
    executionCtx.waitUntil(settleInBackground(env, reservation, { actualMicros: 0, isByok: false }));
    throw err;
  });

  /** Records a request no attempt served, and the error its answer carries. */
  const unserved = (outcome: Extract<RunOutcome<T>, { ok: false }>): ApiError => {
    if (trace) traceAttempts(trace, plan.model, outcome.log);
    // A client that left before any provider answered cut the attempts short: cancelled, not failed
    // (nothing was produced, so nothing is charged either way).
    const left = signal?.aborted === true;
    executionCtx.waitUntil(
      finishGeneration(env, reservation, {
        ...base,
        model: plan.model,
        status: left ? "cancelled" : "failed",
        usage: {},
        costMicros: 0,
        attempts: logOf(outcome.log),
        // The provider whose failure the answer reports (the last one tried), as its error names it.
        provider: outcome.log.at(-1)?.provider ?? null,
        error: left ? "client disconnected" : describe(outcome.error),
      }),
    );
    if (trace && left) trace.errorType = "cancelled";
    return withGenerationId(left ? clientClosed() : outcome.error, generationId);
  };

  /** The served answer, recorded and settled when it ends; throws when it failed before any byte. */
  const serve = async (
    outcome: Extract<RunOutcome<T>, { ok: true }>,
    committed?: CommittedStream,
  ): Promise<R> => {
    if (trace) traceAttempts(trace, plan.model, outcome.log);
    const { value, attempt, credential, log } = outcome;
    const isByok = credential.source === "byok";
    // Generation time: the served attempt until its first byte, then until the answer's end.
    const servedAt = Date.now();
    const generationMs = () => (log.at(-1)?.duration_ms ?? 0) + (Date.now() - servedAt);
    const served = {
      ...base,
      model: attempt.model.slug,
      provider: attempt.endpoint.provider,
      endpointId: attempt.endpoint.id,
      isByok,
      attempts: logOf(log),
    };
    let answer: Answer<R>;
    try {
      answer = await spec.respond(value, {
        attempt,
        credential,
        generationId,
        isByok,
        log,
        ...(committed ? { committed } : {}),
      });
    } catch (err) {
      // The upstream answered but the answer failed before any byte reached the client: nothing is charged.
      const error = err instanceof ApiError ? describe(err) : "the answer could not be built";
      executionCtx.waitUntil(
        finishGeneration(env, reservation, {
          ...served,
          status: "failed",
          usage: {},
          costMicros: 0,
          error,
          generationMs: generationMs(),
        }),
      );
      throw err instanceof ApiError ? withGenerationId(err, generationId) : err;
    }
    let done = answer.done;
    if (trace) {
      done = done.then((final) => traceFinal(trace, final));
      trace.ends = done;
    }
    executionCtx.waitUntil(
      done.then((final) =>
        finishGeneration(env, reservation, {
          ...served,
          status: final.status ?? "completed",
          usage: final.usage,
          costMicros: chargedMicros(final.costMicros),
          error: final.error ?? null,
          finishReason: final.finishReason ?? null,
          nativeFinishReason: final.nativeFinishReason ?? null,
          upstreamId: final.upstreamId ?? null,
          generationMs: generationMs(),
        }),
      ),
    );
    // A committed answer's headers are gone already (with these ids on them).
    if (!committed) {
      answer.response.headers.set("X-Generation-Id", generationId);
      if (io.requestId) answer.response.headers.set("X-Request-Id", io.requestId);
    }
    return answer.response;
  };

  // One timer, and only for a streamed answer: an attempt that commits within the grace answers as
  // any other, and so does a quick failure (its real status).
  let outcome: RunOutcome<T> | null;
  if (spec.streamed) {
    let grace: ReturnType<typeof setTimeout> | null = null;
    outcome = await Promise.race([
      running,
      new Promise<null>((resolve) => {
        grace = setTimeout(() => resolve(null), FIRST_BYTE_GRACE_MS);
      }),
    ]);
    clearTimeout(grace);
  } else outcome = await running;
  if (outcome) {
    if (outcome.ok) return serve(outcome);
    throw unserved(outcome);
  }

  // No first token yet: the answer commits now and the attempts run on behind keep-alives.
  const early = earlyStream();
  early.left.addEventListener("abort", () => leaving!.abort(early.left.reason), { once: true });
  early.response.headers.set("X-Generation-Id", generationId);
  if (io.requestId) early.response.headers.set("X-Request-Id", io.requestId);
  // Server-Timing says what was known when the headers left: the wait on providers so far.
  if (trace) trace.upstreamMs = Date.now() - attemptsAt;
  const streamed = spec.streamed!;
  const fail = (error: ApiError) => {
    if (trace && !trace.errorType) trace.errorType = "stream_failed";
    early.end(streamed.failed(error, generationId, plan.model));
  };
  const ended = running.then(
    async (late): Promise<unknown> => {
      if (!late.ok) return fail(unserved(late));
      try {
        await serve(late, await early.handOver());
        return trace?.ends;
      } catch (err) {
        fail(err instanceof ApiError ? err : new ApiError(500, "Internal server error"));
      }
    },
    () => fail(new ApiError(500, "Internal server error")),
  );
  executionCtx.waitUntil(ended);
  if (trace) trace.ends = ended;
  return early.response as R;
}

const describe = (e: ApiError) => `${e.status}: ${e.message}`;

/** The error answer of a request that made a generation record names it: GET /generation shows its attempts. */
const withGenerationId = (e: ApiError, generationId: string) =>
  new ApiError(e.status, e.message, e.metadata, { ...e.headers, "X-Generation-Id": generationId });

/** Model, provider and upstream time of the attempts made (the last one is the one that served or failed last). */
function traceAttempts(trace: RequestTrace, model: string, log: AttemptLog[]) {
  let upstreamMs = 0;
  for (const a of log) upstreamMs += a.duration_ms;
  const last = log.at(-1);
  trace.model = last?.model ?? model;
  trace.provider = last?.provider;
  trace.byok = last?.byok;
  trace.upstreamMs = upstreamMs;
}

function traceFinal(trace: RequestTrace, final: Final): Final {
  trace.costMicros = chargedMicros(final.costMicros);
  if (final.status === "cancelled") trace.errorType = "cancelled";
  else if (final.status === "failed") trace.errorType = "stream_failed";
  return final;
}
const logOf = (log: AttemptLog[]) => log as unknown as Array<Record<string, unknown>>;

const FREE_LIMIT_REASONS = new Set(["free_per_minute", "free_per_day"]);
const isFreeLimitRefusal = (err: unknown) =>
  err instanceof ApiError && err.status === 429 && FREE_LIMIT_REASONS.has(String(err.metadata?.reason));
/**
 * Requests on the caller's own provider key are not held to the free-model limits. So a free model the
 * plan reaches on a BYOK credential is not also tried on the platform key, where it would be a free
 * request on the platform that no limit counted (a failing own key would otherwise open it to anyone).
 */
export function freeOnOwnKeys(plan: RoutePlan): RoutePlan {
  const onOwnKeys = new Set(
    plan.attempts.filter((a) => a.model.isFree && a.credential.source === "byok").map((a) => a.model.slug),
  );
  // Per model: another free model of the plan keeps its platform attempts (and counts if it is first).
  const dropped = (a: PlannedAttempt) => limited(a) && onOwnKeys.has(a.model.slug);
  if (!plan.attempts.some(dropped)) return plan;
  return { ...plan, attempts: plan.attempts.filter((a) => !dropped(a)) };
}
/** A free-model attempt the free-model limits hold (not on the caller's own key, not on an exempt endpoint). */
const limited = (a: PlannedAttempt) =>
  a.model.isFree && a.credential.source !== "byok" && !a.endpoint.exemptFreeLimits;

/**
 * A request whose first attempt is paid is a paid request (admissionFor): it does not use up the free-model
 * limits, so it does not fall back to a free model they hold either (that answer would be a free request no
 * limit counted: a paid model made to fail, by a broken own key say, would open the free models to anyone).
 */
function freeBehindPaidDropped(plan: RoutePlan): RoutePlan {
  const first = plan.attempts[0];
  if (!first || first.model.isFree || !plan.attempts.some(limited)) return plan;
  return { ...plan, attempts: plan.attempts.filter((a) => !limited(a)) };
}

const SPEND_REASONS = new Set(["balance", "key_cap", "budget"]);
const isSpendRefusal = (err: unknown) =>
  err instanceof ApiError && SPEND_REASONS.has(String(err.metadata?.reason));
const onOwnKey = (a: PlannedAttempt) => a.credential.source === "byok";
const withOwnKeysOnly = (plan: RoutePlan): RoutePlan => ({
  ...plan,
  attempts: plan.attempts.filter(onOwnKey),
});
const withoutFreeModels = (plan: RoutePlan): RoutePlan => ({
  ...plan,
  attempts: plan.attempts.filter((a) => !a.model.isFree),
});

/**
 * What admission needs from a route plan: the worst case over every attempt it may make, BYOK only
 * when no attempt uses platform credits, free-model limits when its first attempt is a `:free` model
 * (unless every free attempt is on an exempt endpoint or the caller's own key).
 */
export function admissionFor(
  plan: RoutePlan,
  generationId: string,
  worstCaseMicros: (attempt: PlannedAttempt, plan: RoutePlan) => number,
  leaseMs?: number,
): AdmissionRequest {
  const free = plan.attempts.filter((a) => a.model.isFree);
  return {
    generationId,
    model: plan.model,
    // By its first attempt: a paid-first plan has no limited free attempt left (freeBehindPaidDropped).
    isFreeModel: plan.attempts[0]?.model.isFree === true,
    worstCaseMicros: Math.max(0, ...plan.attempts.map((a) => worstCaseMicros(a, plan))),
    byok: plan.attempts.every((a) => a.credential.source === "byok"),
    exemptFromFreeLimits:
      free.length > 0 && free.every((a) => a.endpoint.exemptFreeLimits || a.credential.source === "byok"),
    leaseMs,
  };
}
