// BYOK upstream keys at rest: AES-256-GCM under a versioned master key, bound to workspace, provider and row.

/** Where a ciphertext belongs; it decrypts only under exactly this binding. */
export interface ByokBinding {
  workspaceId: string;
  provider: string;
  credentialId: string;
}

export interface SealedKey {
  /** base64 ciphertext with the GCM tag appended. */
  ciphertext: string;
  /** base64 96-bit IV, fresh for every encryption. */
  iv: string;
  /** Version id of the master key that sealed it (a key of BYOK_MASTER_KEYS). */
  keyVersion: string;
}

/** The stored row fields decryption needs. */
export interface SealedRow {
  id: string;
  workspaceId: string;
  provider: string;
  ciphertext: string;
  iv: string;
  keyVersion: string;
}

export interface MasterKeyEnv {
  BYOK_MASTER_KEYS?: string;
}

export class ByokConfigError extends Error {
  override name = "ByokConfigError";
}

interface MasterKeys {
  newest: string;
  keys: Map<string, CryptoKey>;
}

const encoder = new TextEncoder();
let cached: { source: string; keys: Promise<MasterKeys> } | null = null;

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** Numeric versions compare as numbers ("10" after "9"), others as strings. */
function newerVersion(a: string, b: string): string {
  const [na, nb] = [Number(a), Number(b)];
  if (Number.isFinite(na) && Number.isFinite(nb)) return na >= nb ? a : b;
  return a >= b ? a : b;
}

async function importMasterKeys(source: string): Promise<MasterKeys> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(source);
  } catch {
    throw new ByokConfigError("BYOK_MASTER_KEYS is not valid JSON");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ByokConfigError('BYOK_MASTER_KEYS must be an object {"<version>": "<base64 key>"}');
  }
  const keys = new Map<string, CryptoKey>();
  let newest: string | null = null;
  for (const [version, value] of Object.entries(parsed)) {
    let raw: Uint8Array | null = null;
    try {
      raw = typeof value === "string" ? fromBase64(value) : null;
    } catch {
      // not base64: reported below
    }
    if (raw?.byteLength !== 32) {
      throw new ByokConfigError(`BYOK_MASTER_KEYS version '${version}' is not a base64 32-byte key`);
    }
    keys.set(version, await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]));
    newest = newest == null ? version : newerVersion(newest, version);
  }
  if (newest == null) throw new ByokConfigError("BYOK_MASTER_KEYS holds no key");
  return { newest, keys };
}

function masterKeys(env: MasterKeyEnv): Promise<MasterKeys> {
  const source = env.BYOK_MASTER_KEYS;
  if (!source) return Promise.reject(new ByokConfigError("BYOK_MASTER_KEYS is not configured"));
  if (cached?.source !== source) {
    const keys = importMasterKeys(source);
    cached = { source, keys };
    // A bad secret must not stay cached as a rejected promise once it is fixed.
    keys.catch(() => {
      if (cached?.source === source) cached = null;
    });
  }
  return cached.keys;
}

function additionalData(b: ByokBinding): Uint8Array {
  return encoder.encode(JSON.stringify(["byok-v1", b.workspaceId, b.provider, b.credentialId]));
}

/** Seals `plaintext` under the newest master key; throws ByokConfigError when no usable key is configured. */
export async function encryptByokKey(
  env: MasterKeyEnv,
  binding: ByokBinding,
  plaintext: string,
): Promise<SealedKey> {
  const { newest, keys } = await masterKeys(env);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: additionalData(binding) },
    keys.get(newest)!,
    encoder.encode(plaintext),
  );
  return { ciphertext: toBase64(new Uint8Array(sealed)), iv: toBase64(iv), keyVersion: newest };
}

/**
 * Opens a stored key under the master key version it names. Returns null when it cannot be opened:
 * the ciphertext was moved to another row (workspace, provider or id differ), was tampered with, or
 * its key version is no longer configured. Callers must then refuse without any upstream call.
 */
export async function decryptByokKey(env: MasterKeyEnv, row: SealedRow): Promise<string | null> {
  const { keys } = await masterKeys(env);
  const key = keys.get(row.keyVersion);
  if (!key) return null;
  try {
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: fromBase64(row.iv),
        additionalData: additionalData({
          workspaceId: row.workspaceId,
          provider: row.provider,
          credentialId: row.id,
        }),
      },
      key,
      fromBase64(row.ciphertext),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}

/** True when the row was sealed under an older master key and should be re-encrypted. */
export async function needsReseal(env: MasterKeyEnv, row: Pick<SealedRow, "keyVersion">): Promise<boolean> {
  return (await masterKeys(env)).newest !== row.keyVersion;
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
