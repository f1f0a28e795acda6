import { describe, expect, it } from "vitest";
import { randomHex, sha256Hex, timingSafeEqual } from "../src/lib/hash";

describe("hashing helpers", () => {
  it("sha256Hex matches the standard test vectors", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(await sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  it("randomHex gives two lowercase hex digits per byte, different each call", () => {
    const a = randomHex(16);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(randomHex(16)).not.toBe(a);
  });

  it("timingSafeEqual is true only for the same string, wherever another differs and whatever its length", () => {
    const h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    expect(timingSafeEqual(h, `${h}`)).toBe(true);
    expect(timingSafeEqual("", "")).toBe(true);
    expect(timingSafeEqual(h, `c${h.slice(1)}`)).toBe(false);
    expect(timingSafeEqual(h, `${h.slice(0, -1)}e`)).toBe(false);
    expect(timingSafeEqual(h, h.slice(0, -1))).toBe(false);
    expect(timingSafeEqual(h.slice(0, -1), h)).toBe(false);
    expect(timingSafeEqual(h, "")).toBe(false);
    // Same length, different characters beyond ASCII.
    expect(timingSafeEqual("é", "e")).toBe(false);
  });
});
