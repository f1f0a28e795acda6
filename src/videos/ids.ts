// Identifiers of video jobs and their generations: `gen-vid-<unix seconds>-<20 alphanumerics>` as the SDK documents.

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function alphanumerics(n: number): string {
  // 62 does not divide 256: rejection sampling keeps every character equally likely.
  let out = "";
  while (out.length < n) {
    for (const b of crypto.getRandomValues(new Uint8Array(n * 2))) {
      if (b < 248 && out.length < n) out += ALPHABET[b % 62];
    }
  }
  return out;
}

const seconds = () => Math.floor(Date.now() / 1000);

export const newVideoJobId = () => `gen-vid-${seconds()}-${alphanumerics(20)}`;
export const newGenerationId = () => `gen-${seconds()}-${alphanumerics(20)}`;
export const pollingUrl = (jobId: string) => `/api/v1/videos/${jobId}`;
