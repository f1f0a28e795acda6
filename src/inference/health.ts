// Endpoint health as this isolate has seen it. An endpoint whose attempts failed as an outage does
// (5xx, 529, no answer in time, unreachable) OUTAGE_FAILURES times within OUTAGE_WINDOW_MS, with no
// success since, is "down" for COOLDOWN_MS: default routing tries it after its model's other endpoints
// (as OpenRouter's default routing avoids providers with an outage in the last 30 seconds), so one
// provider's outage stops costing every request a failed attempt (or a whole first-byte deadline).
// After the cooldown the next request tries it first again, and its first failure marks it down anew.
// Isolate memory, never the truth: each isolate learns on its own, and nothing is refused for it.

/** What an attempt said, as the attempt log records it (attempts.ts). */
export interface AttemptNews {
  endpoint_id: string;
  /** "ok", or the failure's kind (http, timeout, connection, credential, invalid_response). */
  outcome: string;
  status?: number;
}

export const OUTAGE_WINDOW_MS = 30_000;
export const OUTAGE_FAILURES = 3;
export const COOLDOWN_MS = 30_000;
/** Endpoints tracked at most; past it the oldest news is dropped (a catalog has far fewer). */
const MAX_TRACKED = 2_000;

interface Health {
  /** Times of the outage failures since the last success, oldest first, within the window. */
  failures: number[];
  downUntil: number;
}

const health = new Map<string, Health>();

/** Whether an attempt's failure says the endpoint is out (not the caller's request or its key). */
export function isOutage(entry: Pick<AttemptNews, "outcome" | "status">): boolean {
  if (entry.outcome === "timeout" || entry.outcome === "connection") return true;
  return entry.outcome === "http" && entry.status !== undefined && entry.status >= 500;
}

/** Notes what one attempt said about its endpoint. */
export function noteAttempt(entry: AttemptNews, now = Date.now()): void {
  const id = entry.endpoint_id;
  if (entry.outcome === "ok") {
    health.delete(id);
    return;
  }
  if (!isOutage(entry)) return;
  let h = health.get(id);
  if (!h) {
    if (health.size >= MAX_TRACKED) health.delete(health.keys().next().value!);
    h = { failures: [], downUntil: 0 };
    health.set(id, h);
  }
  h.failures = h.failures.filter((t) => now - t < OUTAGE_WINDOW_MS);
  h.failures.push(now);
  // Enough failures in the window, or a failure right after a cooldown (the endpoint is still out).
  if (h.failures.length >= OUTAGE_FAILURES || h.downUntil > 0) h.downUntil = now + COOLDOWN_MS;
}

/** Whether default routing should try this endpoint after the others of its model. */
export function isDown(endpointId: string, now = Date.now()): boolean {
  const h = health.get(endpointId);
  return h !== undefined && h.downUntil > now;
}

/** Forgets everything seen (tests). */
export function forgetHealth(): void {
  health.clear();
}
