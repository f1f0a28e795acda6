// SHA-256 hashing and constant-time comparison for secrets we only keep as hashes.

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

/** Compares two strings in time independent of where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const ab = encoder.encode(a);
  const bb = encoder.encode(b);
  if (ab.byteLength !== bb.byteLength) {
    // Compare against itself so the time spent does not reveal the length mismatch early.
    crypto.subtle.timingSafeEqual(ab, ab);
    return false;
  }
  return crypto.subtle.timingSafeEqual(ab, bb);
}

export function randomHex(bytes: number): string {
  return hexOf(crypto.getRandomValues(new Uint8Array(bytes)));
}
