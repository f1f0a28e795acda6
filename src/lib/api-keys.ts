// API key format: a recognisable prefix (so leaked keys can be spotted by scanners) plus 256 random bits.
import { randomHex, sha256Hex } from "./hash";

export const API_KEY_PREFIX = "sk-gw-v1-";

/** `sk-gw-v1-3f2...9ab`: enough to recognise a key, far too little to use it. */
export function maskApiKey(key: string): string {
  const secret = key.slice(API_KEY_PREFIX.length);
  return `${API_KEY_PREFIX}${secret.slice(0, 3)}...${secret.slice(-3)}`;
}

export async function newApiKey(): Promise<{ key: string; hash: string; label: string }> {
  const key = `${API_KEY_PREFIX}${randomHex(32)}`;
  return { key, hash: await sha256Hex(key), label: maskApiKey(key) };
}
