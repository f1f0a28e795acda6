// Streamed speech against mock upstreams in the runtime: pass-through bytes, backpressure, disconnects, adapters.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import elevenlabsUnauthorized from "./fixtures/elevenlabs/error-401.json";
import openaiRateLimited from "./fixtures/openai/speech-error-429.json";
import { addByok, createAccount } from "./helpers/accounts";
import { errorOf } from "./helpers/http";
import { post } from "./helpers/media";

afterEach(() => vi.restoreAllMocks());

const CHUNK = 256 * 1024;

/** An upstream audio body made on demand, counting what the gateway pulled and whether it cancelled. */
function lazyBody(chunks: number, failAfter?: number) {
  const stats = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (failAfter !== undefined && stats.pulled === failAfter) {
          controller.error(new Error("upstream connection reset"));
          return;
        }
        if (stats.pulled === chunks) {
          controller.close();
          return;
        }
        stats.pulled++;
        controller.enqueue(new Uint8Array(CHUNK).fill(stats.pulled % 251));
      },
      cancel() {
        stats.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, stats };
}

interface Seen {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

function upstream(answer: () => Response) {
  const seen: Seen[] = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    seen.push({
      url: req.url,
      headers: Object.fromEntries(req.headers),
      body: (await req.json()) as Record<string, unknown>,
    });
    return answer();
  });
  return seen;
}

async function generation(id: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id)).get();
}

const tts = {
  model: "openai/gpt-4o-mini-tts",
  voice: "coral",
  input: "Streaming is the point.",
  response_format: "mp3",
};

describe("speech through an OpenAI-compatible upstream", () => {
  it("sends the OpenAI body with the workspace's key, never the user id, and streams the bytes back", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-openai-123");
    const { stream } = lazyBody(4);
    const seen = upstream(() => new Response(stream, { headers: { "Content-Type": "audio/mpeg" } }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, {
      ...tts,
      speed: 1.5,
      user: "end-user-42",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBe(4 * CHUNK);
    expect(bytes[0]).toBe(1);
    expect(bytes[3 * CHUNK]).toBe(4);
    await settled();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe("https://api.openai.com/v1/audio/speech");
    expect(seen[0]!.headers.authorization).toBe("Bearer sk-byok-openai-123");
    expect(seen[0]!.body).toEqual({
      model: "gpt-4o-mini-tts",
      input: tts.input,
      voice: "coral",
      response_format: "mp3",
      speed: 1.5,
    });
    const row = await generation(res.headers.get("X-Generation-Id")!);
    expect(row).toMatchObject({ status: "completed", isByok: true, user: "end-user-42", provider: "openai" });
  });

  it("passes a large body through without holding it: the upstream is read only as the client reads", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok");
    const total = 128; // 32 MiB
    const { stream, stats } = lazyBody(total);
    upstream(() => new Response(stream, { headers: { "Content-Type": "audio/mpeg" } }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, tts);
    const reader = res.body!.getReader();
    let received = (await reader.read()).value!.byteLength;
    await new Promise((r) => setTimeout(r, 50));
    // One chunk read by the client: the gateway pulled only a few ahead, not the whole body.
    expect(stats.pulled).toBeLessThanOrEqual(4);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
    }
    expect(received).toBe(total * CHUNK);
    expect(stats.pulled).toBe(total);
    await settled();
  });

  it("aborts the upstream when the client disconnects, and records the generation cancelled", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok");
    const { stream, stats } = lazyBody(1000);
    upstream(() => new Response(stream, { headers: { "Content-Type": "audio/mpeg" } }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, tts);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel("listener went away");
    await settled();
    expect(stats.cancelled).toBe(true);
    expect(stats.pulled).toBeLessThan(10);
    const row = await generation(res.headers.get("X-Generation-Id")!);
    expect(row?.status).toBe("cancelled");
    expect(row?.error).toBe("client disconnected");
  });

  it("ends the stream on an upstream failure after the first byte, without retrying", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok");
    const { stream } = lazyBody(100, 2);
    const seen = upstream(() => new Response(stream, { headers: { "Content-Type": "audio/mpeg" } }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, tts);
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    await settled();
    expect(seen).toHaveLength(1);
    // The upstream ended the pipe, not the client: failed, with the upstream's error.
    const row = await generation(res.headers.get("X-Generation-Id")!);
    expect(row?.status).toBe("failed");
    expect(row?.error).toContain("upstream connection reset");
  });

  it("maps an upstream 429 before the first byte to 429 with the provider's code", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok");
    upstream(
      () =>
        new Response(JSON.stringify(openaiRateLimited), {
          status: 429,
          headers: { "Content-Type": "application/json", "Retry-After": "3" },
        }),
    );
    const { res, settled } = await post("/audio/speech", acct.apiKey, tts);
    await settled();
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("3");
    expect((await errorOf(res)).metadata).toMatchObject({ provider_code: "rate_limit_exceeded" });
  });
});

describe("speech through an ElevenLabs-style upstream", () => {
  const body = {
    model: "elevenlabs/eleven-flash-v2.5",
    voice: "21m00Tcm4TlvDq8ikWAM",
    input: "Hi there.",
    response_format: "pcm",
  };

  it("puts the voice in the path, the format in the query and speed in voice_settings", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "elevenlabs", "xi-secret");
    const { stream } = lazyBody(2);
    const seen = upstream(() => new Response(stream, { headers: { "Content-Type": "audio/pcm" } }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, { ...body, speed: 1.1 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/pcm");
    expect((await res.arrayBuffer()).byteLength).toBe(2 * CHUNK);
    await settled();
    expect(seen[0]!.url).toBe(
      "https://api.elevenlabs.io/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream?output_format=pcm_24000",
    );
    expect(seen[0]!.headers["xi-api-key"]).toBe("xi-secret");
    expect(seen[0]!.body).toEqual({
      text: "Hi there.",
      model_id: "eleven_flash_v2_5",
      voice_settings: { speed: 1.1 },
    });
  });

  it("answers 502 when the provider refuses the key, never echoing it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "elevenlabs", "xi-wrong-secret");
    upstream(() => new Response(JSON.stringify(elevenlabsUnauthorized), { status: 401 }));
    const { res, settled } = await post("/audio/speech", acct.apiKey, body);
    await settled();
    expect(res.status).toBe(502);
    const text = JSON.stringify(await errorOf(res));
    expect(text).not.toContain("xi-wrong-secret");
  });
});
