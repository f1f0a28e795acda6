import { describe, expect, it } from "vitest";
import { fromBase64, toBase64 } from "../src/lib/base64";

describe("base64", () => {
  it("round-trips every byte value", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const text = toBase64(bytes);
    expect(text.startsWith("AAECAwQF")).toBe(true);
    expect(fromBase64(text)).toEqual(bytes);
  });

  it("encodes inputs far larger than the call stack allows to spread (2 MiB)", () => {
    const bytes = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
    const text = toBase64(bytes);
    expect(text.length).toBe(Math.ceil(bytes.length / 3) * 4);
    expect(fromBase64(text)).toEqual(bytes);
  });

  it("refuses text that is not base64", () => {
    expect(() => fromBase64("not base64!")).toThrow();
  });
});
