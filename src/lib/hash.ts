// SHA-256 hashing and constant-time comparison for secrets we only keep as hashes; FNV-1a where a small
// stable hash of plain text is enough (never for secrets).

const encoder = new TextEncoder();

/** "00".."ff", so hex needs one lookup per byte (every request hashes its key). */
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

function hexOf(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += HEX[b];
  return out;
}

export async function sha256Hex(input: string): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(input))));
}

/**
 * Compares two strings in time independent of where they differ (and, for strings of one length, of
 * their content): every code unit is compared, in JavaScript, with no encoding or runtime call (every
 * request compares its key's hash).
 */
export function timingSafeEqual(a: string, b: string): boolean {
  // A length mismatch still walks `a`, so the time says nothing about where the strings differ.
  const other = a.length === b.length ? b : a;
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ other.charCodeAt(i);
  return diff === 0;
}

export function randomHex(bytes: number): string {
  return hexOf(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** FNV-1a: a small, stable 32-bit hash (ids, the sandbox's features; not for secrets). */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
