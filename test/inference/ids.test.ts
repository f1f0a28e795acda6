// Generation ids: the documented format, drawn from a pool of random bytes that is refilled as it runs out.
import { describe, expect, it } from "vitest";
import { alphanumerics, newGenerationId } from "../../src/inference/ids";

describe("generation ids", () => {
  it("are gen-<unix seconds>-<20 alphanumerics>, all different across refills of the random pool", () => {
    const ids = Array.from({ length: 2_000 }, () => newGenerationId());
    const now = Math.floor(Date.now() / 1000);
    for (const id of ids) {
      const m = /^gen-(\d+)-([A-Za-z0-9]{20})$/.exec(id);
      expect(m, id).not.toBeNull();
      expect(Math.abs(Number(m![1]) - now)).toBeLessThanOrEqual(1);
    }
    // 2,000 ids take ~40,000 bytes: the 4 KB pool was refilled about ten times.
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("use every character of the alphabet about equally often", () => {
    const counts = new Map<string, number>();
    for (const c of alphanumerics(62_000)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // 1,000 expected per character; a biased modulo (256 % 62) would give the first 8 about 1,250.
    for (const n of counts.values()) expect(n).toBeGreaterThan(850);
    for (const n of counts.values()) expect(n).toBeLessThan(1_150);
  });
});
