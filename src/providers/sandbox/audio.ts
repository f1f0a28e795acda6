// Playable sandbox audio, generated as a stream: MPEG-1 Layer III frames or 16-bit little-endian PCM.

/** Sample rate of the PCM stream (the MP3 stream is 32 kHz). */
export const SANDBOX_SAMPLE_RATE = 24_000;
/** About how long speech lasts per input character (a brisk 15 characters per second). */
export const MS_PER_CHAR = 66;

/**
 * MPEG-1 Layer III header for 32 kbit/s, 32 kHz, mono, no CRC, no padding: FF FB 18 C0. Each frame is
 * 144 * 32000 / 32000 = 144 bytes and holds 1152 samples (36 ms). The 17-byte side information is all
 * zero (no Huffman data, zero global gain), which every decoder plays as silence: a valid, seekable
 * stream whose duration tracks the input.
 */
const MP3_HEADER = [0xff, 0xfb, 0x18, 0xc0];
export const MP3_FRAME_BYTES = 144;
const MP3_FRAME_MS = 36;

function mp3Frame(): Uint8Array {
  const frame = new Uint8Array(MP3_FRAME_BYTES);
  frame.set(MP3_HEADER, 0);
  return frame;
}

/** `count` frames as one chunk. */
function mp3Chunk(count: number): Uint8Array {
  const out = new Uint8Array(count * MP3_FRAME_BYTES);
  const frame = mp3Frame();
  for (let i = 0; i < count; i++) out.set(frame, i * MP3_FRAME_BYTES);
  return out;
}

/** A 440 Hz tone at a quarter of full scale, sample `index` onwards, `count` samples, 16-bit LE. */
function pcmChunk(index: number, count: number): Uint8Array {
  const out = new Uint8Array(count * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < count; i++) {
    const t = (index + i) / SANDBOX_SAMPLE_RATE;
    view.setInt16(i * 2, Math.round(Math.sin(2 * Math.PI * 440 * t) * 8191), true);
  }
  return out;
}

export function speechDurationMs(chars: number, speed = 1): number {
  return Math.max(MP3_FRAME_MS, Math.round((chars * MS_PER_CHAR) / speed));
}

/** Total bytes the sandbox sends for `durationMs` of audio in `format`. */
export function sandboxAudioBytes(format: "mp3" | "pcm", durationMs: number): number {
  if (format === "mp3") return Math.ceil(durationMs / MP3_FRAME_MS) * MP3_FRAME_BYTES;
  return Math.round((durationMs * SANDBOX_SAMPLE_RATE) / 1000) * 2;
}

/**
 * A pull-based stream: each chunk is made only when the consumer asks for it, so nothing is held
 * beyond one chunk and a cancelled consumer stops generation.
 */
export function sandboxAudioStream(format: "mp3" | "pcm", durationMs: number): ReadableStream<Uint8Array> {
  const total = sandboxAudioBytes(format, durationMs);
  let sent = 0;
  // About 0.5 s of audio per chunk, like a real TTS upstream flushing as it synthesises.
  const framesPerChunk = 14;
  const samplesPerChunk = SANDBOX_SAMPLE_RATE / 2;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) {
        controller.close();
        return;
      }
      let chunk: Uint8Array;
      if (format === "mp3") {
        const frames = Math.min(framesPerChunk, (total - sent) / MP3_FRAME_BYTES);
        chunk = mp3Chunk(frames);
      } else {
        const samples = Math.min(samplesPerChunk, (total - sent) / 2);
        chunk = pcmChunk(sent / 2, samples);
      }
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}
