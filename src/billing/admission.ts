// Admission and settlement: the two ledger calls every inference route makes around its upstream call.

import type { AuthContext } from "../db/auth-records";
import type { Bindings } from "../env";
import type { AdmitCommand, Rejection, SettleResult } from "../ledger/types";
import { ApiError } from "../lib/errors";
import { refreshAuth } from "../middleware/auth";
import { assertRegionAllowed } from "../middleware/region";
import { admitThrough, answerEnded, type Background, ledgerFor, settleSoon } from "./ledger-client";
import { worded } from "./refusals";

export interface AdmissionRequest {
  /** Unique per request; settle is idempotent on it. */
  generationId: string;
  /** Model slug as requested (used in messages only). */
  model: string;
  /** A `:free` variant: gated by the per-minute and per-day free-model limits. */
  isFreeModel: boolean;
  /** Highest cost the request can incur, in micro-dollars; reserved until settle. 0 for free models. */
  worstCaseMicros: number;
  /**
   * True only when every endpoint the request may use is BYOK: then nothing is reserved against the
   * balance, the key cap only if include_byok_in_limit, budgets only if include_byok_in_budgets.
   */
  byok: boolean;
  /** The chosen endpoint is exempt from free-model limits (the account's own exemption is added here). */
  exemptFromFreeLimits: boolean;
  /** How long the reservation may stay open before the alarm reclaims it (default LEASE_MS; video jobs pass more). */
  leaseMs?: number;
}

/** The handle settle() needs; plain data, safe to keep in a video job record. */
export interface Reservation {
  accountId: string;
  generationId: string;
  keyHash: string;
  reservedMicros: number;
  byok: boolean;
  /** The isolate block it was admitted against, if any (kept on its generation record). */
  blockId?: string;
}

export interface Settlement {
  /** The real cost, in micro-dollars (0 when the request failed before any billable work). */
  actualMicros: number;
  /** Whether the endpoint that served it used the caller's own credential. */
  isByok: boolean;
}

/**
 * ONE Durable Object round trip before the upstream call: checks, in this order, the balance
 * (balance <= 0 -> 402 for every non-BYOK request, free models included; too little for the worst
 * case -> 402), the key cap (-> 402 naming its reset), every guardrail budget in auth.policy.budgets
 * (-> 403 naming the guardrail) and the free-model limits (-> 429 with X-RateLimit-Limit,
 * X-RateLimit-Remaining, X-RateLimit-Reset in Unix epoch milliseconds, and Retry-After in seconds),
 * then reserves worst-case cost against all of them atomically. A rejected request changes nothing.
 * The account's settlements waiting in this isolate ride on the same call. With `background` (the
 * request's ExecutionContext) the isolate may get a block, against which its next requests are
 * admitted and settled with no call at all (see blocks.ts); without it, every admission is a call.
 * An auth record older than the account's last revocation or lowered limit is re-read first (see
 * authority.ts), with `replan` rebuilding the request under it.
 * Throws ApiError on rejection; returns the reservation to pass to settle().
 */
export async function admit(
  env: Bindings,
  auth: AuthContext,
  req: AdmissionRequest,
  background?: Background,
  replan?: Replan,
): Promise<Reservation> {
  let current = auth;
  let request = req;
  for (let tries = 0; ; tries++) {
    const outcome = await admitThrough(env, current.account.id, commandOf(current, request), background);
    if (outcome.ok) {
      return {
        accountId: current.account.id,
        generationId: request.generationId,
        keyHash: current.key.hash,
        reservedMicros: outcome.reservedMicros,
        byok: request.byok,
        ...(outcome.blockId ? { blockId: outcome.blockId } : {}),
      };
    }
    if (outcome.rejection.reason !== "stale_authority")
      throw rejectionError(outcome.rejection, request.model);
    if (tries >= MAX_STALE_RETRIES) {
      throw new ApiError(
        503,
        "This API key's settings are being changed; retry shortly",
        {},
        { "Retry-After": "1" },
      );
    }
    // The key, a guardrail or an assignment changed since this isolate read them: read them again and
    // judge the request as the middleware would (401 for a revoked key, 403 for a region), then admit
    // it under the new limits.
    current = await refreshAuth(env.DB, current.key.hash);
    assertRegionAllowed(current, env.REGION);
    if (replan) request = await replan(current);
  }
}

/**
 * Rebuilds the admission request under a re-read auth record (its policy may route differently);
 * the route keeps the new record for the rest of the request.
 */
export type Replan = (fresh: AuthContext) => Promise<AdmissionRequest>;

/** A change racing the re-reads this many times in a row answers 503 instead of looping. */
const MAX_STALE_RETRIES = 2;

function commandOf(auth: AuthContext, req: AdmissionRequest): AdmitCommand {
  const { key, account, policy } = auth;
  return {
    generationId: req.generationId,
    keyHash: key.hash,
    cap:
      key.limitMicros == null
        ? null
        : { limitMicros: key.limitMicros, reset: key.limitReset, includeByok: key.includeByokInLimit },
    budgets: policy.budgets.map((b) => ({
      id: b.guardrailId,
      name: b.name,
      limitMicros: b.limitMicros,
      reset: b.resetInterval,
      includeByok: b.includeByok,
    })),
    worstCaseMicros: Math.max(0, Math.ceil(req.worstCaseMicros)),
    byok: req.byok,
    freeModel: req.isFreeModel && !req.byok && !req.exemptFromFreeLimits && !account.exemptFreeLimits,
    leaseMs: req.leaseMs,
    authority: account.authorityVersion,
  };
}

/**
 * Charges the actual cost and releases the rest of the reservation. Idempotent by generation id:
 * a second call changes nothing. Run it in ctx.waitUntil on every exit path (success, provider
 * error, client disconnect, timeout, stream cut). A settle that arrives after the alarm reclaimed
 * the reservation still charges the actual cost.
 */
export async function settle(
  env: Bindings,
  reservation: Reservation,
  settlement: Settlement,
): Promise<SettleResult> {
  return ledgerFor(env, reservation.accountId).settle({
    generationId: reservation.generationId,
    actualMicros: Math.max(0, Math.ceil(settlement.actualMicros)),
    byok: settlement.isByok,
  });
}

/**
 * settle() for paths that run after the response (waitUntil); never throws. The settlement waits in
 * this isolate for up to SETTLE_COALESCE_MS (see settleSoon): the account's next ledger call from this isolate
 * (an admission, GET /key, or another request's settlement) carries it, so under load a request
 * costs about one ledger call instead of two. If none did, it sends the waiting ones itself. Nothing
 * awaits another request's I/O. A failed call is logged and the reservation's lease reclaims it (see
 * LEASE_MS), so nothing stays reserved.
 */
export async function settleInBackground(
  env: Bindings,
  reservation: Reservation,
  settlement: Settlement,
): Promise<void> {
  answerEnded(env, reservation.accountId, reservation.generationId);
  await settleSoon(env, reservation.accountId, {
    generationId: reservation.generationId,
    actualMicros: Math.max(0, Math.ceil(settlement.actualMicros)),
    byok: settlement.isByok,
  });
}

/** The ledger answers a reason and figures; the caller gets them worded, with the 429 headers. */
function rejectionError(r: Rejection, model: string): ApiError {
  const w = worded(r);
  return new ApiError(w.status, w.message, { ...w.metadata, model }, w.headers);
}
