// One webhook delivery attempt (re-checked, signed, never redirected, recorded) and the retry schedule.
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { signingSecrets } from "./secrets";
import { webhookHeaders } from "./signing";
import { checkWebhookUrl } from "./ssrf";

/** Attempts per event, the first included; retries stop earlier once RETRY_WINDOW_MS has passed. */
export const WEBHOOK_MAX_ATTEMPTS = 8;
/** Retries stop once this long has passed since the first attempt. */
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
const BASE_DELAY_MS = 30_000;
const MAX_DELAY_MS = 60 * 60 * 1000;
/** A receiver gets this long to answer before the attempt counts as failed. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** The event as first produced: the same id and body go out on every retry. */
export interface WebhookEvent {
  jobId: string;
  workspaceId: string;
  webhookId: string;
  url: string;
  body: string;
}

export type AttemptOutcome =
  | { ok: true; statusCode: number }
  /** `retry` is false when trying again cannot help (the URL is no longer allowed, or the receiver said 410). */
  | { ok: false; statusCode: number | null; error: string; retry: boolean };

/**
 * Delay before attempt `attempt + 1` after `attempt` failed: exponential from 30 s, capped at one
 * hour, with "equal jitter" (half fixed, half random) so receivers recovering from an outage are not
 * hit by every sender at the same instant.
 */
export function retryDelayMs(attempt: number, random: () => number = Math.random): number {
  const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + (exp / 2) * random());
}

/** Whether another attempt may follow attempt number `attempt` of an event first tried at `firstAt`. */
export function mayRetry(attempt: number, firstAt: number, now: number): boolean {
  return attempt < WEBHOOK_MAX_ATTEMPTS && now - firstAt < RETRY_WINDOW_MS;
}

async function record(env: Bindings, event: WebhookEvent, attempt: number, outcome: AttemptOutcome) {
  await getDb(env.DB)
    .insert(tables.webhookDeliveries)
    .values({
      id: crypto.randomUUID(),
      jobId: event.jobId,
      webhookId: event.webhookId,
      attempt,
      statusCode: outcome.statusCode,
      error: outcome.ok ? null : outcome.error,
    });
}

async function send(env: Bindings, event: WebhookEvent): Promise<AttemptOutcome> {
  // Checked again here: the URL was accepted earlier, but rules and workspace defaults can change.
  const verdict = checkWebhookUrl(event.url);
  if (!verdict.ok)
    return { ok: false, statusCode: null, error: `URL refused: ${verdict.reason}`, retry: false };
  const secrets = await signingSecrets(env, event.workspaceId);
  if (secrets.length === 0)
    return { ok: false, statusCode: null, error: "workspace no longer exists", retry: false };
  const timestamp = Math.floor(Date.now() / 1000);
  let res: Response;
  try {
    res = await fetch(verdict.url.href, {
      method: "POST",
      redirect: "manual",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "edge-model-gateway-webhooks/1",
        ...webhookHeaders(secrets, event.webhookId, timestamp, event.body),
      },
      body: event.body,
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
  } catch (err) {
    const timedOut = err instanceof Error && err.name === "TimeoutError";
    return { ok: false, statusCode: null, error: timedOut ? "timed out" : "connection failed", retry: true };
  }
  // The body is not needed; cancel it so the connection is released.
  await res.body?.cancel();
  if (res.status >= 200 && res.status < 300) return { ok: true, statusCode: res.status };
  if (res.status >= 300 && res.status < 400) {
    return { ok: false, statusCode: res.status, error: "redirect not followed", retry: true };
  }
  return {
    ok: false,
    statusCode: res.status,
    error: `receiver answered ${res.status}`,
    retry: res.status !== 410,
  };
}

/** Makes attempt number `attempt` (1-based) and records it in webhook_deliveries. */
export async function attemptDelivery(
  env: Bindings,
  event: WebhookEvent,
  attempt: number,
): Promise<AttemptOutcome> {
  const outcome = await send(env, event);
  await record(env, event, attempt, outcome);
  return outcome;
}
