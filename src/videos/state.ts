// The video job's durable record inside its Durable Object, and the pure rules that move it along.
import type { Reservation } from "../billing/admission";
import type { Pricing } from "../catalog/schema";
import type { VideoSubmitRequest } from "../providers/types";
import type { PlannedCredential } from "../routing/byok";
import type { VideoStatus } from "../schemas/videos";

/** A job that has not finished by then is `expired` (and its reservation released). */
export const JOB_TTL_MS = 2 * 60 * 60 * 1000;
/** Consecutive failed polls (network, 5xx) tolerated before the job is failed. */
export const MAX_POLL_ERRORS = 8;
const FIRST_POLL_MS = 2_000;
const MAX_POLL_MS = 30_000;

/** One candidate endpoint of the job's route plan, re-resolved from the catalog when used. */
export interface PlannedTarget {
  modelSlug: string;
  endpointId: string;
  credential: PlannedCredential;
  /** The endpoint's price when the job was submitted: what was quoted and reserved is what is charged. */
  pricing?: Pricing;
}

export interface WebhookState {
  webhookId: string;
  url: string;
  body: string;
  /** Attempts made so far. */
  attempts: number;
  firstAt: number;
  nextAt: number;
  done: boolean;
}

export interface VideoJobState {
  id: string;
  accountId: string;
  workspaceId: string;
  keyHash: string;
  userId: string | null;
  region: string;
  model: string;
  status: VideoStatus;
  createdAt: number;
  deadlineAt: number;
  request: VideoSubmitRequest;
  /** provider.options from the body, keyed by provider slug; only the chosen provider's entry is sent. */
  providerOptions: Record<string, Record<string, unknown>>;
  plan: PlannedTarget[];
  /** Seconds billed when the provider does not report the length it made. */
  billedDurationSeconds: number;
  resolution: string | null;
  /** The endpoint that accepted the job, once submitted. */
  current: (PlannedTarget & { provider: string; upstreamJobId: string }) | null;
  polls: number;
  pollErrors: number;
  nextPollAt: number | null;
  reservation: Reservation | null;
  generationId: string;
  costMicros: number | null;
  /** The submission's attempt log (providers tried, in order), for the generation record. */
  attempts?: Array<Record<string, unknown>>;
  isByok: boolean;
  error: string | null;
  callbackUrl: string | null;
  user: string | null;
  /** The caller's session (absent in jobs started before it was kept). */
  sessionId?: string | null;
  /** The caller's attribution headers (see attributionOf; absent in jobs started before they were kept). */
  httpReferer?: string | null;
  userAgent?: string | null;
  /** The submitting request's X-Request-Id (absent in jobs started before it was kept). */
  requestId?: string | null;
  /** The preset the request named (absent in jobs started before it was kept). */
  presetId?: string | null;
  /** What flag and redact filters noted on the prompt (absent in jobs started before it was kept). */
  flags?: string[] | null;
  trace: Record<string, unknown> | null;
  webhook: WebhookState | null;
  /** False until the D1 row reflects the latest transition. */
  synced: boolean;
  /** For a finished job: whether settle, the generation record and the webhook set-up are done. */
  finalized: boolean;
}

/** Exponential polling from 2 s, capped at 30 s, with ±20 % jitter so jobs submitted together spread out. */
export function pollDelayMs(polls: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_POLL_MS, FIRST_POLL_MS * 2 ** polls);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * Micro-dollars per second at a resolution: its own price, else `default`, else the dearest listed (never
 * under-reserve); "dearest" (a pixel size that is no named resolution) is the dearest listed.
 */
export function secondPrice(pricing: Pricing, resolution: string | null): number {
  const table = pricing.video_second ?? {};
  const prices = Object.values(table);
  const dearest = prices.length ? Math.max(...prices) : 0;
  if (resolution === "dearest") return dearest;
  const own = resolution ? table[resolution] : undefined;
  return own ?? table.default ?? dearest;
}

export function videoCostMicros(pricing: Pricing, resolution: string | null, seconds: number): number {
  return Math.ceil(secondPrice(pricing, resolution) * seconds + (pricing.request ?? 0));
}
