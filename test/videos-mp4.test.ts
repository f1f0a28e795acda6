// The sandbox MP4: a well-formed ISO BMFF file whose sample table points at real H.264 IDR slices.
import { describe, expect, it } from "vitest";
import { SANDBOX_FPS, sandboxMp4 } from "../src/providers/sandbox/mp4";

interface Box {
  type: string;
  start: number;
  size: number;
  body: Uint8Array;
}

function boxes(bytes: Uint8Array, from = 0, to = bytes.length): Box[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const out: Box[] = [];
  let at = from;
  while (at < to) {
    const size = view.getUint32(at);
    expect(size).toBeGreaterThanOrEqual(8);
    expect(at + size).toBeLessThanOrEqual(to);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    out.push({ type, start: at, size, body: bytes.subarray(at + 8, at + size) });
    at += size;
  }
  expect(at).toBe(to);
  return out;
}

const child = (parent: Box, type: string, skip = 0): Box => {
  const found = boxes(parent.body, skip).find((b) => b.type === type);
  expect(found, type).toBeDefined();
  return found!;
};
const u32 = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset).getUint32(at);

describe("sandboxMp4", () => {
  for (const seconds of [1, 4]) {
    it(`is a faststart MP4 of ${seconds} s with a consistent sample table`, () => {
      const file = sandboxMp4(seconds);
      const top = boxes(file);
      expect(top.map((b) => b.type)).toEqual(["ftyp", "moov", "mdat"]);
      const moov = top[1]!;
      const mvhd = child(moov, "mvhd");
      expect(u32(mvhd.body, 12)).toBe(1000); // timescale
      expect(u32(mvhd.body, 16)).toBe(seconds * 1000); // duration
      const trak = child(moov, "trak");
      const stbl = child(child(child(trak, "mdia"), "minf"), "stbl");
      const stsd = child(stbl, "stsd");
      const avc1 = boxes(stsd.body, 8)[0]!;
      expect(avc1.type).toBe("avc1");
      const avcC = boxes(avc1.body, 78).find((b) => b.type === "avcC")!;
      expect([...avcC.body.subarray(0, 4)]).toEqual([1, 66, 0xc0, 10]); // Baseline, level 1.0
      const stsz = child(stbl, "stsz");
      const count = u32(stsz.body, 8);
      expect(count).toBe(seconds * SANDBOX_FPS);
      const sizes = Array.from({ length: count }, (_, i) => u32(stsz.body, 12 + 4 * i));
      const stco = child(stbl, "stco");
      const offset = u32(stco.body, 8);
      const mdat = top[2]!;
      expect(offset).toBe(mdat.start + 8);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(mdat.size - 8);
      // Each sample is one length-prefixed IDR slice NAL (type 5).
      let at = offset;
      for (const size of sizes) {
        expect(u32(file, at)).toBe(size - 4);
        expect(file[at + 4]! & 0x1f).toBe(5);
        at += size;
      }
    });
  }
});
