// Per-workspace webhook signing secrets: sealed by lib/sealing.ts (AES-256-GCM), rotated with a grace period for the old one.
import { and, eq, isNull } from "drizzle-orm";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { ApiError } from "../lib/errors";
import { open, seal } from "../lib/sealing";
import { newWebhookSecret } from "./signing";

const { workspaces } = tables;

/** After a rotation, deliveries are signed with both secrets for this long so receivers can switch over. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

const encoder = new TextEncoder();
const aad = (workspaceId: string) => encoder.encode(`webhook-secret:${workspaceId}`);

function configured(env: Bindings): Bindings {
  if (!env.BYOK_MASTER_KEYS) throw new ApiError(500, "Webhook signing is not configured");
  return env;
}

/** `<key version>:<iv>:<ciphertext>` (lib/sealing.ts), the AAD binding it to its workspace. */
export async function sealSecret(env: Bindings, workspaceId: string, secret: string): Promise<string> {
  const { keyVersion, iv, ciphertext } = await seal(configured(env), aad(workspaceId), secret);
  return `${keyVersion}:${iv}:${ciphertext}`;
}

export async function openSecret(env: Bindings, workspaceId: string, sealed: string): Promise<string> {
  const [keyVersion, iv, ciphertext] = sealed.split(":");
  if (!keyVersion || !iv || !ciphertext) throw new Error("webhook secret is not in the sealed format");
  const secret = await open(configured(env), { keyVersion, iv, ciphertext }, aad(workspaceId));
  if (secret === null)
    throw new Error("webhook secret cannot be opened (unknown key version, or not this workspace's)");
  return secret;
}

/** Creates the first secret or replaces the current one; the old one keeps signing for the grace period. */
export async function rotateWorkspaceSecret(env: Bindings, workspaceId: string): Promise<string> {
  const db = getDb(env.DB);
  const row = await db
    .select({ current: workspaces.webhookSecretCiphertext })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  if (!row) throw new ApiError(404, "Workspace not found");
  const secret = newWebhookSecret();
  await db
    .update(workspaces)
    .set({
      webhookSecretCiphertext: await sealSecret(env, workspaceId, secret),
      webhookSecretPreviousCiphertext: row.current,
      webhookSecretRotatedAt: row.current ? new Date().toISOString() : null,
    })
    .where(eq(workspaces.id, workspaceId));
  return secret;
}

/** Creates the workspace's first secret; when a concurrent delivery created one first, that one wins. */
async function firstSecret(env: Bindings, workspaceId: string): Promise<string> {
  const db = getDb(env.DB);
  const candidate = newWebhookSecret();
  await db
    .update(workspaces)
    .set({ webhookSecretCiphertext: await sealSecret(env, workspaceId, candidate) })
    .where(and(eq(workspaces.id, workspaceId), isNull(workspaces.webhookSecretCiphertext)));
  const row = await db
    .select({ current: workspaces.webhookSecretCiphertext })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  return openSecret(env, workspaceId, row!.current!);
}

/**
 * The secrets a delivery is signed with: the current one, plus the previous one during the grace
 * period after a rotation. A workspace that never created one gets one now (it learns it by rotating).
 */
export async function signingSecrets(
  env: Bindings,
  workspaceId: string,
  now = Date.now(),
): Promise<string[]> {
  const db = getDb(env.DB);
  const row = await db
    .select({
      current: workspaces.webhookSecretCiphertext,
      previous: workspaces.webhookSecretPreviousCiphertext,
      rotatedAt: workspaces.webhookSecretRotatedAt,
    })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  if (!row) return [];
  if (!row.current) return [await firstSecret(env, workspaceId)];
  const out = [await openSecret(env, workspaceId, row.current)];
  if (row.previous && row.rotatedAt && now - Date.parse(row.rotatedAt) < ROTATION_GRACE_MS) {
    out.push(await openSecret(env, workspaceId, row.previous));
  }
  return out;
}
