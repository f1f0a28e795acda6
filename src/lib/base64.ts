// Bytes to and from standard base64, for any size: `btoa`/`atob` work on binary strings, and building one
// by spreading a large array into `String.fromCharCode` overflows the stack, so it is built in slices.

const SLICE = 0x8000;

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += SLICE) {
    binary += String.fromCharCode(...bytes.subarray(i, i + SLICE));
  }
  return btoa(binary);
}

/** Throws (a DOMException) on text that is not base64. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
