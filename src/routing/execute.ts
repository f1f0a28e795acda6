// One inference call end to end: plan, admit (one ledger round trip), attempts with failover, then settle
// and write the generation record off the response path. Every inference route (embeddings, speech, video
// submit) runs through here; the route supplies the adapter call and the pricing of its modality.
import { type AdmissionRequest, admit, settleInBackground } from "../billing/admission";
import { getCatalog } from "../catalog/cache";
import type { Modality } from "../catalog/types";
import type { Bindings } from "../env";
import { recordThenSettle, type WaitUntil } from "../generations/record";
import type { ApiError } from "../lib/errors";
import type { AuthContext } from "../middleware/auth";
import { getAdapter, supports } from "../providers/registry";
import type { CallContext, Capability, ProviderAdapter, UpstreamCredential } from "../providers/types";
import { type AttemptLog, runAttempts } from "./attempts";
import { credentialResolver, routeContextFor } from "./context";
import { assertRoutable, type PlannedAttempt, planRoute, type RoutePlan, type RouteRequest } from "./plan";
import { applyModelPreset } from "./preset";

export interface InferenceIo {
  env: Bindings;
  auth: AuthContext;
  executionCtx: WaitUntil;
}

export interface InferenceSpec<T> {
  capability: Capability;
  route: Omit<RouteRequest, "modality"> & { modality: Modality };
  /** Highest cost (micro-dollars) this request can reach on an attempt, before it is made. */
  worstCaseMicros(attempt: PlannedAttempt): number;
  /** The adapter call; resolve only on upstream success (throw UpstreamError otherwise). */
  call(adapter: ProviderAdapter, attempt: PlannedAttempt, ctx: CallContext): Promise<T>;
  /** The real cost and usage once an attempt succeeded. */
  actualMicros(value: T, attempt: PlannedAttempt): number;
  usage(value: T): Record<string, number>;
  /** Stored on the generation record. */
  record: { metadata?: Record<string, unknown> | null; user?: string | null; flags?: string[] };
  /** 408 for embeddings (the spec lists it), 524 otherwise. */
  timeoutStatus?: 408 | 524;
  /** Reservation lease for long-running work (video jobs). */
  leaseMs?: number;
}

export interface InferenceResult<T> {
  value: T;
  attempt: PlannedAttempt;
  credential: UpstreamCredential;
  generationId: string;
  costMicros: number;
  isByok: boolean;
  log: AttemptLog[];
}

export const newGenerationId = () => `gen-${crypto.randomUUID()}`;

export async function executeInference<T>(
  io: InferenceIo,
  spec: InferenceSpec<T>,
): Promise<InferenceResult<T>> {
  const { env, executionCtx } = io;
  let auth = io.auth;
  const generationId = newGenerationId();
  const adapterFits = {
    param: spec.capability,
    hard: true,
    fits: (e: { adapter: string }) => supports(e.adapter, spec.capability),
  };
  /** The plan under one auth record's policy (again under a re-read one, see admit's replan). */
  const planUnder = async (a: AuthContext) => {
    const [catalog, context, route] = await Promise.all([
      getCatalog(env.DB),
      routeContextFor(env, a),
      applyModelPreset(env, a, spec.route),
    ]);
    const plan = planRoute(
      { ...route, requirements: [adapterFits, ...(route.requirements ?? [])] },
      { catalog, region: env.REGION, ...context },
    );
    assertRoutable(plan);
    return { context, plan };
  };
  let { context, plan } = await planUnder(auth);

  const reservation = await admit(
    env,
    auth,
    admissionFor(plan, generationId, spec.worstCaseMicros, spec.leaseMs),
    executionCtx,
    async (fresh) => {
      auth = fresh;
      ({ context, plan } = await planUnder(fresh));
      return admissionFor(plan, generationId, spec.worstCaseMicros, spec.leaseMs);
    },
  );

  const base = {
    id: generationId,
    accountId: auth.account.id,
    workspaceId: auth.key.workspaceId,
    keyHash: auth.key.hash,
    modality: spec.route.modality,
    region: env.REGION,
    metadata: spec.record.metadata ?? null,
    user: spec.record.user ?? null,
    flags: spec.record.flags?.length ? spec.record.flags : null,
  };

  let outcome: Awaited<ReturnType<typeof runAttempts<T>>>;
  try {
    outcome = await runAttempts(plan, {
      modality: spec.route.modality,
      timeoutStatus: spec.timeoutStatus,
      resolveCredential: credentialResolver(env, context.byok),
      call: (attempt, ctx) => spec.call(getAdapter(attempt.endpoint.adapter)!, attempt, ctx),
    });
  } catch (err) {
    // Never strand a reservation, even on a bug.
    executionCtx.waitUntil(settleInBackground(env, reservation, { actualMicros: 0, isByok: false }));
    throw err;
  }

  if (!outcome.ok) {
    // The record, then the settlement: see recordThenSettle.
    recordThenSettle(executionCtx, env, reservation, {
      ...base,
      model: plan.model,
      status: "failed",
      usage: {},
      costMicros: 0,
      attempts: outcome.log as unknown as Array<Record<string, unknown>>,
      error: describe(outcome.error),
    });
    throw outcome.error;
  }

  const { value, attempt, credential } = outcome;
  const isByok = credential.source === "byok";
  const costMicros = Math.max(0, Math.ceil(spec.actualMicros(value, attempt) - 1e-9));
  recordThenSettle(executionCtx, env, reservation, {
    ...base,
    model: attempt.model.slug,
    provider: attempt.endpoint.provider,
    endpointId: attempt.endpoint.id,
    isByok,
    status: "completed",
    usage: spec.usage(value),
    costMicros,
    attempts: outcome.log as unknown as Array<Record<string, unknown>>,
  });
  return { value, attempt, credential, generationId, costMicros, isByok, log: outcome.log };
}

const describe = (e: ApiError) => `${e.status}: ${e.message}`;

/**
 * What admission needs from a route plan: the worst case over every attempt it may make, BYOK only
 * when no attempt uses platform credits, free-model limits when any attempt is a `:free` model
 * (unless every such endpoint is exempt).
 */
export function admissionFor(
  plan: RoutePlan,
  generationId: string,
  worstCaseMicros: (attempt: PlannedAttempt) => number,
  leaseMs?: number,
): AdmissionRequest {
  const free = plan.attempts.filter((a) => a.model.isFree);
  return {
    generationId,
    model: plan.model,
    isFreeModel: free.length > 0,
    worstCaseMicros: Math.max(0, ...plan.attempts.map(worstCaseMicros)),
    byok: plan.attempts.every((a) => a.credential.source === "byok"),
    exemptFromFreeLimits: free.length > 0 && free.every((a) => a.endpoint.exemptFreeLimits),
    leaseMs,
  };
}
