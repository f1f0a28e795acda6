import { describe, expect, it } from "vitest";
import { randomHex, sha256Hex } from "../src/lib/hash";

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
});
