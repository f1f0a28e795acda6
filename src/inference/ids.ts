// The one generation id format of every inference route: `gen-<unix seconds>-<20 alphanumerics>`.

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export function alphanumerics(n: number): string {
  // 62 does not divide 256: rejection sampling keeps every character equally likely.
  let out = "";
  while (out.length < n) {
    for (const b of crypto.getRandomValues(new Uint8Array(n * 2))) {
      if (b < 248 && out.length < n) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export const unixSeconds = () => Math.floor(Date.now() / 1000);

export const newGenerationId = () => `gen-${unixSeconds()}-${alphanumerics(20)}`;
