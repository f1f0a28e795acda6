// The one generation id format of every inference route: `gen-<unix seconds>-<20 alphanumerics>`.

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Random bytes drawn a few thousand at a time: one runtime call serves about a hundred ids. */
const pool = new Uint8Array(4096);
let used = pool.length;

function randomByte(): number {
  if (used === pool.length) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  return pool[used++]!;
}

export function alphanumerics(n: number): string {
  // 62 does not divide 256: rejection sampling keeps every character equally likely.
  let out = "";
  while (out.length < n) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

export const unixSeconds = () => Math.floor(Date.now() / 1000);

export const newGenerationId = () => `gen-${unixSeconds()}-${alphanumerics(20)}`;
