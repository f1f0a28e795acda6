// A small, valid, playable MP4 (H.264 Baseline, uncompressed I_PCM macroblocks) for the sandbox video provider.

const WIDTH = 32;
const HEIGHT = 32;
export const SANDBOX_FPS = 4;
const TIMESCALE = 1000;

/** MSB-first bit writer for H.264 RBSPs, with Exp-Golomb codes. */
class Bits {
  private readonly bytes: number[] = [];
  private cur = 0;
  private n = 0;

  u(bits: number, value: number): this {
    for (let i = bits - 1; i >= 0; i--) {
      this.cur = (this.cur << 1) | ((value >>> i) & 1);
      if (++this.n === 8) this.flush();
    }
    return this;
  }

  ue(value: number): this {
    const v = value + 1;
    const len = 32 - Math.clz32(v);
    return this.u(len - 1, 0).u(len, v);
  }

  se(value: number): this {
    return this.ue(value <= 0 ? -2 * value : 2 * value - 1);
  }

  aligned(): boolean {
    return this.n === 0;
  }

  alignZero(): this {
    while (this.n !== 0) this.u(1, 0);
    return this;
  }

  byte(value: number): this {
    return this.u(8, value);
  }

  /** rbsp_trailing_bits: a stop bit, then zeros to the byte boundary. */
  trailing(): Uint8Array {
    this.u(1, 1).alignZero();
    return Uint8Array.from(this.bytes);
  }

  private flush() {
    this.bytes.push(this.cur & 0xff);
    this.cur = 0;
    this.n = 0;
  }
}

/** A NAL unit: header byte, then the RBSP with emulation-prevention bytes inserted. */
function nal(header: number, rbsp: Uint8Array): Uint8Array {
  const out: number[] = [header];
  let zeros = 0;
  for (const b of rbsp) {
    if (zeros >= 2 && b <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Uint8Array.from(out);
}

function sps(): Uint8Array {
  const b = new Bits()
    .byte(66) // profile_idc: Baseline
    .byte(0xc0) // constraint_set0 and constraint_set1
    .byte(10) // level 1.0
    .ue(0) // seq_parameter_set_id
    .ue(0) // log2_max_frame_num_minus4
    .ue(2) // pic_order_cnt_type 2: output order is decode order
    .ue(0) // max_num_ref_frames: every frame is an IDR
    .u(1, 0) // gaps_in_frame_num_value_allowed_flag
    .ue(WIDTH / 16 - 1)
    .ue(HEIGHT / 16 - 1)
    .u(1, 1) // frame_mbs_only_flag
    .u(1, 1) // direct_8x8_inference_flag
    .u(1, 0) // frame_cropping_flag
    .u(1, 0); // vui_parameters_present_flag
  return nal(0x67, b.trailing());
}

function pps(): Uint8Array {
  const b = new Bits()
    .ue(0) // pic_parameter_set_id
    .ue(0) // seq_parameter_set_id
    .u(1, 0) // entropy_coding_mode_flag: CAVLC
    .u(1, 0) // bottom_field_pic_order_in_frame_present_flag
    .ue(0) // num_slice_groups_minus1
    .ue(0)
    .ue(0) // num_ref_idx_l0/l1_default_active_minus1
    .u(1, 0) // weighted_pred_flag
    .u(2, 0) // weighted_bipred_idc
    .se(0)
    .se(0)
    .se(0) // pic_init_qp, pic_init_qs, chroma_qp_index_offset
    .u(1, 0) // deblocking_filter_control_present_flag
    .u(1, 0) // constrained_intra_pred_flag
    .u(1, 0); // redundant_pic_cnt_present_flag
  return nal(0x68, b.trailing());
}

/** One IDR frame of I_PCM macroblocks: a colour that drifts with `frame`, brighter towards the bottom. */
function idrSlice(frame: number): Uint8Array {
  const b = new Bits()
    .ue(0) // first_mb_in_slice
    .ue(7) // slice_type: I (all slices)
    .ue(0) // pic_parameter_set_id
    .u(4, 0) // frame_num
    .ue(frame % 2) // idr_pic_id differs between consecutive IDRs
    .u(1, 0) // no_output_of_prior_pics_flag
    .u(1, 0) // long_term_reference_flag
    .se(0); // slice_qp_delta
  const mbs = (WIDTH / 16) * (HEIGHT / 16);
  const cb = 16 + ((frame * 9) % 219);
  const cr = 235 - ((frame * 5) % 219);
  for (let mb = 0; mb < mbs; mb++) {
    b.ue(25); // mb_type I_PCM
    b.alignZero();
    const row = Math.floor(mb / (WIDTH / 16));
    for (let i = 0; i < 256; i++) b.byte(Math.min(235, 40 + row * 80 + Math.floor(i / 16) * 4));
    for (let i = 0; i < 64; i++) b.byte(cb);
    for (let i = 0; i < 64; i++) b.byte(cr);
  }
  return nal(0x65, b.trailing());
}

function u32(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}
const u16 = (n: number) => [(n >>> 8) & 0xff, n & 0xff];
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

function box(type: string, ...parts: Array<number[] | Uint8Array>): Uint8Array {
  const size = 8 + parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  out.set([...u32(size), ...ascii(type)], 0);
  let off = 8;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
const full = (type: string, version: number, flags: number, ...parts: Array<number[] | Uint8Array>) =>
  box(type, [version, (flags >>> 16) & 0xff, (flags >>> 8) & 0xff, flags & 0xff], ...parts);

const MATRIX = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].flatMap(u32);

function moov(
  sampleSizes: number[],
  durationMs: number,
  mdatDataOffset: number,
  sp: Uint8Array,
  pp: Uint8Array,
) {
  const delta = TIMESCALE / SANDBOX_FPS;
  const avcC = box("avcC", [1, 66, 0xc0, 10, 0xff, 0xe1, ...u16(sp.length)], sp, [1, ...u16(pp.length)], pp);
  const avc1 = box(
    "avc1",
    [0, 0, 0, 0, 0, 0, ...u16(1)], // reserved, data_reference_index
    new Array(16).fill(0),
    [...u16(WIDTH), ...u16(HEIGHT), ...u32(0x00480000), ...u32(0x00480000), ...u32(0), ...u16(1)],
    new Array(32).fill(0), // compressorname
    [...u16(0x18), 0xff, 0xff],
    avcC,
  );
  const stbl = box(
    "stbl",
    full("stsd", 0, 0, u32(1), avc1),
    full("stts", 0, 0, u32(1), u32(sampleSizes.length), u32(delta)),
    full("stsc", 0, 0, u32(1), u32(1), u32(sampleSizes.length), u32(1)),
    full("stsz", 0, 0, u32(0), u32(sampleSizes.length), sampleSizes.flatMap(u32)),
    full("stco", 0, 0, u32(1), u32(mdatDataOffset)),
  );
  const minf = box(
    "minf",
    full("vmhd", 0, 1, new Array(8).fill(0)),
    box("dinf", full("dref", 0, 0, u32(1), full("url ", 0, 1))),
    stbl,
  );
  const mdia = box(
    "mdia",
    full("mdhd", 0, 0, u32(0), u32(0), u32(TIMESCALE), u32(durationMs), [0x55, 0xc4, 0, 0]),
    full("hdlr", 0, 0, u32(0), ascii("vide"), new Array(12).fill(0), ascii("VideoHandler\0")),
    minf,
  );
  const tkhd = full(
    "tkhd",
    0,
    3,
    u32(0),
    u32(0),
    u32(1),
    u32(0),
    u32(durationMs),
    new Array(8).fill(0),
    [...u16(0), ...u16(0), ...u16(0), ...u16(0)],
    MATRIX,
    u32(WIDTH << 16),
    u32(HEIGHT << 16),
  );
  const mvhd = full(
    "mvhd",
    0,
    0,
    u32(0),
    u32(0),
    u32(TIMESCALE),
    u32(durationMs),
    u32(0x00010000),
    [...u16(0x0100), 0, 0],
    new Array(8).fill(0),
    MATRIX,
    new Array(24).fill(0),
    u32(2),
  );
  return box("moov", mvhd, box("trak", tkhd, mdia));
}

/** An MP4 of `seconds` seconds (faststart: moov before mdat), a few kilobytes per second. */
export function sandboxMp4(seconds: number): Uint8Array {
  const frames = Math.max(1, Math.round(seconds * SANDBOX_FPS));
  const sp = sps();
  const pp = pps();
  const samples = Array.from({ length: frames }, (_, i) => {
    const slice = idrSlice(i);
    const s = new Uint8Array(4 + slice.length);
    s.set(u32(slice.length), 0);
    s.set(slice, 4);
    return s;
  });
  const sizes = samples.map((s) => s.length);
  const durationMs = (frames * TIMESCALE) / SANDBOX_FPS;
  const ftyp = box("ftyp", ascii("isom"), u32(0x200), ascii("isomiso2avc1mp41"));
  const probe = moov(sizes, durationMs, 0, sp, pp);
  const movie = moov(sizes, durationMs, ftyp.length + probe.length + 8, sp, pp);
  const mdat = box("mdat", ...samples);
  const out = new Uint8Array(ftyp.length + movie.length + mdat.length);
  out.set(ftyp, 0);
  out.set(movie, ftyp.length);
  out.set(mdat, ftyp.length + movie.length);
  return out;
}
