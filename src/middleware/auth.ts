// Bearer-key authentication: hash the key, find its record (isolate cache, then D1), check it is usable.
import { createMiddleware } from "hono/factory";
import { type AuthContext, loadAuthRecords } from "../db/auth-records";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { effectivePolicy } from "../guardrails/policy";
import { ApiError, MANAGEMENT_ONLY_MESSAGE, unauthorized } from "../lib/errors";
import { sha256Hex, timingSafeEqual } from "../lib/hash";
import { LruCache } from "../lib/lru";
import { type Background, RefreshAhead } from "../lib/refresh-ahead";
import { API_PREFIX } from "../routes/meta";

/**
 * Key records live in the isolate for at most this long, so a revoked, disabled or re-scoped key
 * stops working everywhere within it. Mutations made through this isolate clear it at once.
 */
export const AUTH_CACHE_TTL_MS = 30_000;
/** Unknown keys are remembered briefly so a flood of bad keys does not become a flood of D1 reads. */
const NEGATIVE_TTL_MS = 10_000;
/** Past this, the least recently used record goes, so a flood of bad keys cannot push out the keys in use. */
export const AUTH_CACHE_MAX_ENTRIES = 10_000;

/**
 * A record with less than this left is read again in the background by the request that finds it,
 * which goes on with the cached copy: a key in steady use never waits on D1, and no copy older than
 * AUTH_CACHE_TTL_MS is ever used.
 */
export const AUTH_REFRESH_AHEAD_MS = 10_000;

/**
 * Requests the ledger admits may use a copy up to AUTH_CACHE_TTL_MS old: the ledger refuses an admission
 * made on a record older than the account's last revocation or lowered limit (billing/authority.ts).
 * Every other route (reads, token counting) takes a copy at most this old, so a key revoked, disabled
 * or re-scoped on another ingress stops there within a second too.
 */
export const UNADMITTED_MAX_AGE_MS = 1_000;

/** The routes whose requests go through ledger admission (POST only). */
const ADMITTED_PATHS = new Set(
  ["/chat/completions", "/responses", "/messages", "/embeddings", "/audio/speech", "/videos"].map(
    (path) => `${API_PREFIX}${path}`,
  ),
);

const maxAgeFor = (method: string, path: string) =>
  method === "POST" && ADMITTED_PATHS.has(path) ? AUTH_CACHE_TTL_MS : UNADMITTED_MAX_AGE_MS;

const cache = new LruCache<string, { value: AuthContext | null; expires: number; loaded: number }>(
  AUTH_CACHE_MAX_ENTRIES,
);
const refresh = new RefreshAhead<string>(AUTH_REFRESH_AHEAD_MS, "key record");

/** Empties the cache; a read that started before does not put its (older) answer back. */
export function invalidateAuthCache(): void {
  cache.clear();
  refresh.invalidate();
}

const TOKEN_PATTERN = /^[A-Za-z0-9._~+/=-]{16,256}$/;

/** Keys being read from D1 by a request of this isolate, with when that read started. */
const loading = new Map<string, number>();
/** A request waits at most this long for another's read of the same key before reading it itself. */
const MAX_LOAD_WAIT_MS = 2_000;

/**
 * The key's records: from the cache, else from D1. A burst on a key not cached yet makes one D1
 * read, not one per request: the others wait for its answer in the cache, each with its own timers
 * (workerd forbids awaiting another request's promise). A copy near its end is read again in
 * `background` (AUTH_REFRESH_AHEAD_MS); a key's copy older than `maxAgeMs` is read again now (unknown
 * keys keep theirs, so a flood of bad keys stays out of D1). `fresh` always reads D1.
 */
async function resolve(
  db: D1Database,
  hash: string,
  fresh = false,
  background?: Background,
  maxAgeMs = AUTH_CACHE_TTL_MS,
): Promise<AuthContext | null> {
  if (!fresh) {
    const hit = cache.get(hash);
    const now = Date.now();
    if (hit && hit.expires > now && (!hit.value || now - hit.loaded <= maxAgeMs)) {
      // Unknown keys are not read again ahead: their copy just ends.
      if (hit.value) refresh.check(hash, hit.expires, now, background, (current) => load(db, hash, current));
      return hit.value;
    }
    const since = loading.get(hash);
    if (since !== undefined) {
      for (let poll = 1; Date.now() - since < MAX_LOAD_WAIT_MS && loading.get(hash) === since; ) {
        await new Promise((r) => setTimeout(r, poll));
        poll = Math.min(poll * 2, 16);
        const got = cache.get(hash);
        if (got && got.expires > Date.now() && got.loaded >= since) return got.value;
      }
    }
  }
  return load(db, hash, refresh.guard());
}

/** Reads the key's records from D1 into the cache (unless the cache was cleared meanwhile: `current`). */
async function load(db: D1Database, hash: string, current: () => boolean): Promise<AuthContext | null> {
  const started = Date.now();
  loading.set(hash, started);
  try {
    const records = await loadAuthRecords(getDb(db), hash);
    const value = records && { ...records, policy: effectivePolicy(records.guardrails) };
    const now = Date.now();
    if (current()) {
      cache.set(hash, { value, expires: now + (value ? AUTH_CACHE_TTL_MS : NEGATIVE_TTL_MS), loaded: now });
    }
    return value;
  } finally {
    if (loading.get(hash) === started) loading.delete(hash);
  }
}

/**
 * The API key of a request: `Authorization: Bearer <key>`, or, when that header is absent, `x-api-key`
 * (what Anthropic clients such as Claude Code send with an API key rather than an auth token).
 */
function tokenOf(authorization: string | undefined, xApiKey: () => string | undefined): string {
  if (authorization) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!match || !TOKEN_PATTERN.test(match[1]!)) {
      throw unauthorized("Malformed Authorization header; expected 'Bearer <API key>'");
    }
    return match[1]!;
  }
  const apiKey = xApiKey()?.trim();
  if (apiKey !== undefined) {
    if (!TOKEN_PATTERN.test(apiKey)) throw unauthorized("Malformed x-api-key header");
    return apiKey;
  }
  throw unauthorized("Missing Authorization header; send 'Authorization: Bearer <API key>'");
}

export const requireAuth = createMiddleware<AppEnv>(async (c, next) => {
  // x-api-key is read only without an Authorization header (each header read is a runtime call).
  const token = tokenOf(c.req.header("Authorization"), () => c.req.header("x-api-key"));
  const hash = await sha256Hex(token);
  // The context is looked up only when a read ahead starts (Hono throws for a request without one).
  const background = { waitUntil: (work: Promise<unknown>) => c.executionCtx.waitUntil(work) };
  const maxAge = maxAgeFor(c.req.method, c.req.path);
  c.set("auth", usable(await resolve(c.env.DB, hash, false, background, maxAge), hash));
  await next();
});

/** The record, if it is the key's and the key may be used now; else the 401 saying why. */
function usable(auth: AuthContext | null, hash: string): AuthContext {
  if (!auth || !timingSafeEqual(auth.key.hash, hash)) throw unauthorized("Invalid API key");
  if (auth.key.disabled) throw unauthorized("This API key is disabled");
  if (auth.key.expiresAt && Date.parse(auth.key.expiresAt) <= Date.now()) {
    throw unauthorized("This API key has expired");
  }
  return auth;
}

/**
 * Reads the key's records from D1 now, replacing the cached copy, and checks the key is still usable
 * (the ledger said the cached copy predates a change: see billing/authority.ts).
 */
export async function refreshAuth(db: D1Database, hash: string): Promise<AuthContext> {
  cache.delete(hash);
  return usable(await resolve(db, hash, true), hash);
}

/**
 * Management routes change what other requests may do, so they act on the key as D1 has it now,
 * never on a cached copy (a revoked management key stops at once; these routes read D1 anyway).
 */
export const requireManagementKey = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.get("auth").key.isManagement) throw new ApiError(403, MANAGEMENT_ONLY_MESSAGE);
  const fresh = await refreshAuth(c.env.DB, c.get("auth").key.hash);
  if (!fresh.key.isManagement) throw new ApiError(403, MANAGEMENT_ONLY_MESSAGE);
  c.set("auth", fresh);
  await next();
});
