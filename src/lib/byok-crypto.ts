// BYOK upstream keys at rest: sealed by lib/sealing.ts (AES-256-GCM, versioned master key), bound to workspace, provider and row.
import { type MasterKeyEnv, MasterKeyError, newestVersion, open, type Sealed, seal } from "./sealing";

/** Where a ciphertext belongs; it decrypts only under exactly this binding. */
export interface ByokBinding {
  workspaceId: string;
  provider: string;
  credentialId: string;
}

export type SealedKey = Sealed;

/** The stored row fields decryption needs. */
export interface SealedRow {
  id: string;
  workspaceId: string;
  provider: string;
  ciphertext: string;
  iv: string;
  keyVersion: string;
}

export type { MasterKeyEnv };
/** The name BYOK code has always used for a missing or malformed BYOK_MASTER_KEYS. */
export { MasterKeyError as ByokConfigError };

const encoder = new TextEncoder();

function additionalData(b: ByokBinding): Uint8Array {
  return encoder.encode(JSON.stringify(["byok-v1", b.workspaceId, b.provider, b.credentialId]));
}

/** Seals `plaintext` under the newest master key; throws ByokConfigError when no usable key is configured. */
export function encryptByokKey(
  env: MasterKeyEnv,
  binding: ByokBinding,
  plaintext: string,
): Promise<SealedKey> {
  return seal(env, additionalData(binding), plaintext);
}

/**
 * Opens a stored key under the master key version it names. Returns null when it cannot be opened:
 * the ciphertext was moved to another row (workspace, provider or id differ), was tampered with, or
 * its key version is no longer configured. Callers must then refuse without any upstream call.
 */
export function decryptByokKey(env: MasterKeyEnv, row: SealedRow): Promise<string | null> {
  return open(
    env,
    row,
    additionalData({ workspaceId: row.workspaceId, provider: row.provider, credentialId: row.id }),
  );
}

/** True when the row was sealed under an older master key and should be re-encrypted. */
export async function needsReseal(env: MasterKeyEnv, row: Pick<SealedRow, "keyVersion">): Promise<boolean> {
  return (await newestVersion(env)) !== row.keyVersion;
}

/**
 * The sealed columns to write when a row is updated: a replacement key is sealed (with its new label);
 * otherwise a row sealed under an older master key is re-sealed under the newest one (opportunistic
 * rotation), and nothing changes when it is current or can no longer be opened.
 */
export async function resealedColumns(
  env: MasterKeyEnv,
  row: SealedRow,
  replacement?: string,
): Promise<Partial<SealedKey & { label: string }>> {
  const binding = { workspaceId: row.workspaceId, provider: row.provider, credentialId: row.id };
  if (replacement !== undefined) {
    return { ...(await encryptByokKey(env, binding, replacement)), label: maskKey(replacement) };
  }
  if (!(await needsReseal(env, row))) return {};
  const plain = await decryptByokKey(env, row);
  return plain === null ? {} : encryptByokKey(env, binding, plain);
}

/**
 * `sk-...AbCd`: the key's vendor prefix (letters up to a dash within the first five characters) and its last four
 * characters. Short keys show only their last two, so a label never reveals a usable share.
 */
export function maskKey(key: string): string {
  const trimmed = key.trim();
  const dash = trimmed.indexOf("-");
  // Only a short alphabetic vendor prefix (sk-, gsk-, xai-, pplx-) is shown, never secret material.
  const prefix =
    dash > 0 && dash <= 4 && /^[A-Za-z]+$/.test(trimmed.slice(0, dash)) ? trimmed.slice(0, dash + 1) : "";
  if (trimmed.length < 16) return `${prefix}...${trimmed.slice(-2)}`;
  return `${prefix}...${trimmed.slice(-4)}`;
}
