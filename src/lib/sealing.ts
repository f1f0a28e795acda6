// AES-256-GCM under the versioned master keys (BYOK_MASTER_KEYS): the one sealing code behind BYOK
// credentials and webhook signing secrets. Each caller binds its ciphertexts to their owner through the AAD.
import { fromBase64, toBase64 } from "./base64";

export interface Sealed {
  /** base64 ciphertext with the GCM tag appended. */
  ciphertext: string;
  /** base64 96-bit IV, fresh for every encryption. */
  iv: string;
  /** Version id of the master key that sealed it (a key of BYOK_MASTER_KEYS). */
  keyVersion: string;
}

export interface MasterKeyEnv {
  BYOK_MASTER_KEYS?: string;
}

/** BYOK_MASTER_KEYS is missing or malformed: nothing can be sealed or opened. */
export class MasterKeyError extends Error {
  override name = "MasterKeyError";
}

interface MasterKeys {
  newest: string;
  keys: Map<string, CryptoKey>;
}

const encoder = new TextEncoder();
let cached: { source: string; keys: Promise<MasterKeys> } | null = null;

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
    throw new MasterKeyError("BYOK_MASTER_KEYS is not valid JSON");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new MasterKeyError('BYOK_MASTER_KEYS must be an object {"<version>": "<base64 key>"}');
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
      throw new MasterKeyError(`BYOK_MASTER_KEYS version '${version}' is not a base64 32-byte key`);
    }
    keys.set(version, await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]));
    newest = newest == null ? version : newerVersion(newest, version);
  }
  if (newest == null) throw new MasterKeyError("BYOK_MASTER_KEYS holds no key");
  return { newest, keys };
}

/** The imported master keys, cached per secret value (a rotated secret is re-imported). */
function masterKeys(env: MasterKeyEnv): Promise<MasterKeys> {
  const source = env.BYOK_MASTER_KEYS;
  if (!source) return Promise.reject(new MasterKeyError("BYOK_MASTER_KEYS is not configured"));
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

/** Seals `plaintext` under the newest master key; throws MasterKeyError when no usable key is configured. */
export async function seal(env: MasterKeyEnv, aad: Uint8Array, plaintext: string): Promise<Sealed> {
  const { newest, keys } = await masterKeys(env);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: aad },
    keys.get(newest)!,
    encoder.encode(plaintext),
  );
  return { ciphertext: toBase64(new Uint8Array(sealed)), iv: toBase64(iv), keyVersion: newest };
}

/**
 * Opens a sealed value under the master key version it names, or null: wrong AAD (moved to another
 * owner), tampered, or a key version no longer configured.
 */
export async function open(env: MasterKeyEnv, sealed: Sealed, aad: Uint8Array): Promise<string | null> {
  const { keys } = await masterKeys(env);
  const key = keys.get(sealed.keyVersion);
  if (!key) return null;
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(sealed.iv), additionalData: aad },
      key,
      fromBase64(sealed.ciphertext),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}

/** The version new values are sealed under. */
export async function newestVersion(env: MasterKeyEnv): Promise<string> {
  return (await masterKeys(env)).newest;
}
