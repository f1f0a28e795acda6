// POST /audio/speech through the openai client and @openrouter/sdk: bytes, content types, validation, billing.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { MP3_FRAME_BYTES, sandboxAudioBytes, speechDurationMs } from "../src/providers/sandbox/audio";
import { createAccount } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";
import { post, streamingFetch } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";

const openai = (apiKey: string) =>
  new OpenAI({ apiKey, baseURL: BASE, fetch: streamingFetch(), maxRetries: 0 });
const sdk = (apiKey: string) => sdkFor(apiKey, undefined, streamingFetch());

async function speak(key: string, body: Record<string, unknown>) {
  return (await post("/audio/speech", key, body)).res;
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Every MPEG frame header in the stream: sync word, MPEG-1 Layer III, 32 kbit/s, 32 kHz, mono. */
function mp3Frames(bytes: Uint8Array): number {
  let frames = 0;
  for (let i = 0; i < bytes.length; i += MP3_FRAME_BYTES) {
    expect([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]).toEqual([0xff, 0xfb, 0x18, 0xc0]);
    frames++;
  }
  return frames;
}

describe("POST /audio/speech", () => {
  it("streams MP3 frames through the openai client, audio/mpeg", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const input = "Hello from the edge gateway.";
    const res = await openai(acct.apiKey).audio.speech.create({
      model: "sandbox/tts-mini",
      voice: "alloy",
      input,
      response_format: "mp3",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBe(sandboxAudioBytes("mp3", speechDurationMs(input.length)));
    expect(mp3Frames(bytes)).toBeGreaterThan(10);
  });

  it("streams 16-bit little-endian PCM through @openrouter/sdk, audio/pcm", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const input = "A tone for every character.";
    const stream = await sdk(acct.apiKey).tts.createSpeech({
      speechRequest: { model: "sandbox/tts-mini", voice: "nova", input, responseFormat: "pcm" },
    });
    const bytes = await readAll(stream);
    expect(bytes.length).toBe(sandboxAudioBytes("pcm", speechDurationMs(input.length)));
    expect(bytes.length % 2).toBe(0);
    const samples = new DataView(bytes.buffer);
    // A 440 Hz sine at 24 kHz: sample 0 is 0, sample 14 near the peak (8191), all within range.
    expect(samples.getInt16(0, true)).toBe(0);
    expect(samples.getInt16(28, true)).toBeGreaterThan(8000);
    let peak = 0;
    for (let i = 0; i < bytes.length; i += 2) peak = Math.max(peak, Math.abs(samples.getInt16(i, true)));
    expect(peak).toBeLessThanOrEqual(8191);
  });

  // Characters are code points, for the price as for the limit: an emoji is one character.
  it.each([
    ["1000 ASCII characters", "x".repeat(1000)],
    [
      "1000 characters outside the BMP and accented",
      `${"😀".repeat(500)}${"𝐀".repeat(250)}${"é".repeat(250)}`,
    ],
  ])("charges %s x price once the stream ended, and records the generation", async (_, input) => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "sage",
      input,
      response_format: "pcm",
    });
    expect(res.status).toBe(200);
    const generationId = res.headers.get("X-Generation-Id")!;
    await res.arrayBuffer();
    await settled();
    const row = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.id, generationId))
      .get();
    expect(row).toMatchObject({
      status: "completed",
      modality: "speech",
      costMicros: 15_000,
      model: "sandbox/tts-mini",
    });
    expect(row!.usage).toEqual({ characters: 1000 });
    const credits = (await (await call("/key", { key: acct.apiKey })).json()) as { data: { usage: number } };
    expect(credits.data.usage).toBeCloseTo(0.015, 6);
  });

  it("limits the input to 100,000 characters counted as code points: 100,001 emoji are refused", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const over = await post("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "sage",
      input: "😀".repeat(100_001),
    });
    expect(over.res.status).toBe(400);
    expect((await errorOf(over.res)).message).toContain("at most 100000 characters");
  });

  it("passes speed only to models that support it and ignores it elsewhere", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const input = "Speed changes how long the audio lasts.";
    const res = await speak(acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "sage",
      input,
      response_format: "pcm",
      speed: 2,
    });
    expect((await res.arrayBuffer()).byteLength).toBe(
      sandboxAudioBytes("pcm", speechDurationMs(input.length, 2)),
    );
  });

  it("fails over to the next endpoint before the first byte", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/audio/speech", acct.apiKey, {
      model: "sandbox/tts-failover",
      voice: "alloy",
      input: "second time lucky",
      response_format: "mp3",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    expect(mp3Frames(new Uint8Array(await res.arrayBuffer()))).toBeGreaterThan(0);
    await settled();
    // The audio alone cannot tell a failover from a first-time success: the attempt log can.
    const row = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.id, res.headers.get("X-Generation-Id")!))
      .get();
    expect(row).toMatchObject({ status: "completed", endpointId: "sandbox/tts-failover@sandbox" });
    expect(row!.attempts!.map((a) => [a.endpoint_id, a.outcome])).toEqual([
      ["sandbox/tts-failover@sandbox-flaky", "http"],
      ["sandbox/tts-failover@sandbox", "ok"],
    ]);
  });

  it("maps an upstream that always fails to 503 in the envelope", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await speak(acct.apiKey, {
      model: "sandbox/tts-always-503",
      voice: "alloy",
      input: "no",
      response_format: "mp3",
    });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).metadata).toMatchObject({ provider_name: "sandbox" });
  });

  it("routes voice cloning only to endpoints that support it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const reference = [
      { type: "input_audio", input_audio: { data: "data:audio/wav;base64,UklGRiQAAABXQVZF" } },
      { type: "text", text: "This is my voice." },
    ];
    const ok = await speak(acct.apiKey, {
      model: "sandbox/tts-mini",
      voice: "my-clone",
      input: "Cloned.",
      input_references: reference,
    });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    const refused = await speak(acct.apiKey, {
      model: "openai/gpt-4o-mini-tts",
      voice: "alloy",
      input: "Cloned.",
      input_references: reference,
    });
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toMatch(/voice cloning/);
  });

  const base = { model: "sandbox/tts-mini", voice: "alloy", input: "hi" };
  const invalid: Array<[string, Record<string, unknown>]> = [
    ["missing input", { model: "sandbox/tts-mini", voice: "alloy" }],
    ["empty input", { ...base, input: "" }],
    ["missing model", { voice: "alloy", input: "hi" }],
    ["missing voice", { model: "sandbox/tts-mini", input: "hi" }],
    ["empty voice", { ...base, voice: "" }],
    ["unknown format", { ...base, response_format: "wav" }],
    ["speed too high", { ...base, speed: 5 }],
    ["speed not a number", { ...base, speed: "fast" }],
    ["user too long", { ...base, user: "u".repeat(257) }],
    [
      "two audio references",
      {
        ...base,
        input_references: [
          { type: "input_audio", input_audio: { data: "UklGRg==" } },
          { type: "input_audio", input_audio: { data: "UklGRg==" } },
        ],
      },
    ],
    ["transcript without audio", { ...base, input_references: [{ type: "text", text: "hello" }] }],
    [
      "audio not base64",
      { ...base, input_references: [{ type: "input_audio", input_audio: { data: "not base64!" } }] },
    ],
    [
      "unknown reference part",
      { ...base, input_references: [{ type: "image_url", image_url: { url: "https://x.y/z.png" } }] },
    ],
    ["trace with non-string trace_id", { ...base, trace: { trace_id: 5 } }],
    ["voice not offered by the model", { ...base, voice: "not-a-voice" }],
    // The openai SDK's SSE speech events: answered as raw audio, the client would misread them.
    ["stream_format sse", { ...base, stream_format: "sse" }],
  ];
  for (const [name, body] of invalid) {
    it(`rejects ${name} with 400`, async () => {
      const acct = await createAccount({ creditsUsd: 5 });
      const res = await speak(acct.apiKey, body);
      expect(res.status).toBe(400);
      await errorOf(res);
    });
  }

  it("answers 404 for an unknown model and 400 for a model of another modality", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const unknown = await speak(acct.apiKey, { ...base, model: "nobody/nothing" });
    expect(unknown.status).toBe(404);
    const wrong = await speak(acct.apiKey, { ...base, model: "sandbox/video-mini" });
    expect(wrong.status).toBe(400);
  });

  it("answers 402 when the account has no credits, before any audio", async () => {
    const acct = await createAccount();
    const res = await speak(acct.apiKey, base);
    expect(res.status).toBe(402);
    await errorOf(res);
  });
});
