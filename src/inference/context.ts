// What a route plan needs from the request's world: guardrails one by one, BYOK records (isolate cache),
// platform keys, and the credential resolver that decrypts BYOK keys only when an attempt is made.
import { eq } from "drizzle-orm";
import type { AuthContext } from "../db/auth-records";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { effectivePolicy, type GuardrailRow } from "../guardrails/policy";
import { ByokConfigError, decryptByokKey } from "../lib/byok-crypto";
import { log } from "../lib/log";
import { type Background, RefreshAhead } from "../lib/refresh-ahead";
import { getAdapter } from "../providers/registry";
import type { UpstreamCredential } from "../providers/types";
import type { ByokRecord } from "../routing/byok";
import type { GuardrailScope } from "../routing/filters";
import type { PlannedAttempt } from "../routing/plan";
import { isDown } from "./health";

/** Each guardrail on its own, so a refusal names the one that refused. */
export function guardrailScopes(rows: GuardrailRow[]): GuardrailScope[] {
  return rows.map((g) => ({ id: g.id, name: g.name, policy: effectivePolicy([g]) }));
}

/** BYOK records of a workspace stay in the isolate this long; BYOK mutations call invalidateByokCache(). */
export const BYOK_CACHE_TTL_MS = 30_000;
/** A request that finds a workspace's copy with less than this left reads it again in its background. */
export const BYOK_REFRESH_AHEAD_MS = 10_000;
const byokCache = new Map<string, { rows: ByokRecord[]; expires: number }>();
const MAX_WORKSPACES = 5_000;
const refresh = new RefreshAhead<string>(BYOK_REFRESH_AHEAD_MS, "BYOK records");

export function invalidateByokCache(workspaceId?: string): void {
  if (workspaceId) byokCache.delete(workspaceId);
  else byokCache.clear();
  refresh.invalidate();
}

export async function workspaceByok(
  d1: D1Database,
  workspaceId: string,
  background?: Background,
): Promise<ByokRecord[]> {
  const now = Date.now();
  const hit = byokCache.get(workspaceId);
  if (hit && hit.expires > now) {
    refresh.check(workspaceId, hit.expires, now, background, (current) => readByok(d1, workspaceId, current));
    return hit.rows;
  }
  return readByok(d1, workspaceId, refresh.guard());
}

/**
 * The workspace's credentials as they are now in D1, not from the cache: for a video job's submission,
 * which may run a while after the request (a credential disabled meanwhile is not used).
 */
export const currentWorkspaceByok = (d1: D1Database, workspaceId: string) =>
  readByok(d1, workspaceId, () => false);

async function readByok(d1: D1Database, workspaceId: string, current: () => boolean): Promise<ByokRecord[]> {
  const rows = await getDb(d1)
    .select()
    .from(tables.byokCredentials)
    .where(eq(tables.byokCredentials.workspaceId, workspaceId));
  if (!current()) return rows;
  if (byokCache.size >= MAX_WORKSPACES) byokCache.clear();
  byokCache.set(workspaceId, { rows, expires: Date.now() + BYOK_CACHE_TTL_MS });
  return rows;
}

let parsedKeys: { source: string | undefined; keys: Record<string, string> } | null = null;

/** PROVIDER_KEYS parsed once per isolate; a malformed secret means no platform keys (logged, not thrown). */
export function platformKeys(env: Pick<Bindings, "PROVIDER_KEYS">): Record<string, string> {
  if (parsedKeys && parsedKeys.source === env.PROVIDER_KEYS) return parsedKeys.keys;
  let keys: Record<string, string> = {};
  try {
    const value = env.PROVIDER_KEYS ? (JSON.parse(env.PROVIDER_KEYS) as unknown) : {};
    if (value && typeof value === "object" && !Array.isArray(value)) {
      keys = Object.fromEntries(
        Object.entries(value).filter(
          (e): e is [string, string] => typeof e[1] === "string" && e[1].length > 0,
        ),
      );
    }
  } catch {
    log("error", { message: "PROVIDER_KEYS is not valid JSON; no platform keys" });
  }
  parsedKeys = { source: env.PROVIDER_KEYS, keys };
  return keys;
}

/** Keyless adapters (the sandbox) are always available; others need the provider's platform key. */
export function platformAvailability(env: Pick<Bindings, "PROVIDER_KEYS">) {
  const keys = platformKeys(env);
  return (endpoint: { provider: string; adapter: string }) => {
    const adapter = getAdapter(endpoint.adapter);
    if (!adapter) return false;
    return !adapter.requiresApiKey || keys[endpoint.provider] != null;
  };
}

/**
 * The secret for one planned attempt. BYOK keys are decrypted here, at attempt time, never earlier;
 * a ciphertext that does not open gives null, so the attempt is refused with no upstream call.
 */
export function credentialResolver(env: Bindings, byok: ByokRecord[]) {
  const keys = platformKeys(env);
  return async (attempt: PlannedAttempt): Promise<UpstreamCredential | null> => {
    const credential = attempt.credential;
    if (credential.source === "platform") {
      const adapter = getAdapter(attempt.endpoint.adapter);
      if (adapter && !adapter.requiresApiKey) return { source: "platform", apiKey: "" };
      const key = keys[attempt.endpoint.provider];
      return key ? { source: "platform", apiKey: key } : null;
    }
    const row = byok.find((r) => r.id === credential.credentialId);
    if (!row) return null;
    const apiKey = await openedKey(env, row);
    return apiKey ? { source: "byok", apiKey, credentialId: row.id } : null;
  };
}

/**
 * A BYOK key opened, or null. A misconfigured BYOK_MASTER_KEYS (not JSON, a version that is not a 32-byte
 * key) opens nothing: the attempt is refused as for a key that does not open, and the next credential
 * (the platform key, unless the credential is BYOK-only) is tried; the cause goes to the log.
 */
async function openedKey(env: Bindings, row: ByokRecord): Promise<string | null> {
  try {
    return await decryptByokKey(env, row);
  } catch (err) {
    if (!(err instanceof ByokConfigError)) throw err;
    log("error", {
      message: "BYOK credential not opened: BYOK_MASTER_KEYS is misconfigured",
      error: err.message,
    });
    return null;
  }
}

export type RouteContext = Awaited<ReturnType<typeof routeContextFor>>;

/** The inputs of planRoute that come from the authenticated request. */
export async function routeContextFor(env: Bindings, auth: AuthContext, background?: Background) {
  const byok = await workspaceByok(env.DB, auth.key.workspaceId, background);
  return {
    byok,
    guardrails: guardrailScopes(auth.guardrails),
    caller: { keyHash: auth.key.hash, userId: auth.key.creatorUserId },
    platformAvailable: platformAvailability(env),
    isDown,
  };
}
