// Video jobs on real wire formats (recorded payloads): OpenAI-compatible /videos and a long-running operation.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import opDone from "./fixtures/google-ai-studio/operation-done.json";
import opError from "./fixtures/google-ai-studio/operation-error.json";
import opRunning from "./fixtures/google-ai-studio/operation-running.json";
import opStarted from "./fixtures/google-ai-studio/operation-started.json";
import soraCompleted from "./fixtures/openai/video-completed.json";
import soraCreate from "./fixtures/openai/video-create.json";
import soraFailed from "./fixtures/openai/video-failed.json";
import soraRunning from "./fixtures/openai/video-in-progress.json";
import { addByok, createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";

import { driveUntil, poll, step, submitOk } from "./helpers/videos";

afterEach(() => vi.restoreAllMocks());

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

const json = (v: unknown, status = 200) =>
  new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
const MP4 = new Uint8Array([0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0]);

/** Answers `METHOD url` from a table of responders (each a list used in turn); anything else fails. */
function upstream(routes: Record<string, Array<() => Response>>) {
  const seen: Seen[] = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const text = await req.text();
    seen.push({
      method: req.method,
      url: req.url,
      headers: Object.fromEntries(req.headers),
      body: text ? JSON.parse(text) : undefined,
    });
    const queue = routes[`${req.method} ${req.url}`];
    const next = queue && (queue.length > 1 ? queue.shift()! : queue[0]!);
    if (!next) throw new TypeError(`no mock for ${req.method} ${req.url}`);
    return next();
  });
  return seen;
}

describe("OpenAI-compatible video jobs", () => {
  const JOB = "https://api.openai.com/v1/videos/video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5";

  it("submits, polls to completion with the workspace key, and streams the content", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-sora");
    const seen = upstream({
      "POST https://api.openai.com/v1/videos": [() => json(soraCreate)],
      [`GET ${JOB}`]: [() => json(soraRunning), () => json(soraCompleted)],
      [`GET ${JOB}/content`]: [() => new Response(MP4, { headers: { "Content-Type": "video/mp4" } })],
    });
    const job = await submitOk(acct.apiKey, {
      model: "openai/sora-2",
      prompt: "a paper boat in the rain",
      duration: 4,
      size: "1280x720",
      aspect_ratio: "16:9",
      frame_images: [
        { type: "image_url", image_url: { url: "https://cdn.example.com/f.png" }, frame_type: "first_frame" },
      ],
      user: "end-user-7",
    });
    await step(job.id);
    expect((await poll(acct.apiKey, job.id)).status).toBe("in_progress");
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    expect(done.usage).toEqual({ cost: 0.4, is_byok: true });
    expect(seen[0]).toMatchObject({
      method: "POST",
      headers: { authorization: "Bearer sk-byok-sora" },
      body: {
        model: "sora-2",
        prompt: "a paper boat in the rain",
        seconds: "4",
        size: "1280x720",
        aspect_ratio: "16:9",
        input_reference: { image_url: "https://cdn.example.com/f.png" },
      },
    });
    expect(JSON.stringify(seen[0]!.body)).not.toContain("end-user-7");
    const content = await call(`/videos/${job.id}/content`, { key: acct.apiKey });
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    expect(new Uint8Array(await content.arrayBuffer())).toEqual(MP4);
  });

  it.each([
    ["disabled", { disabled: true }],
    ["restricted to other API keys", { allowedApiKeyHashes: ["0".repeat(64)] }],
    ["restricted to other models", { allowedModels: ["openai/gpt-4o"] }],
    ["restricted to other users", { allowedUserIds: ["user_someone_else"] }],
  ])(
    "does not use a credential %s after the job was accepted: no upstream call, nothing charged",
    async (_, restriction) => {
      const acct = await createAccount({ creditsUsd: 5 });
      const credential = await addByok(acct, "openai", "sk-byok-sora", { isByokOnly: true });
      const seen = upstream({ "POST https://api.openai.com/v1/videos": [() => json(soraCreate)] });
      const job = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
      await getDb(env.DB)
        .update(tables.byokCredentials)
        .set(restriction)
        .where(eq(tables.byokCredentials.id, credential));
      const failed = await driveUntil(acct.apiKey, job.id, "failed");
      expect(failed.usage).toBeUndefined();
      expect(seen).toHaveLength(0);
    },
  );

  it("still uses a credential whose restrictions admit the job's key, user and model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const credential = await addByok(acct, "openai", "sk-byok-sora", { isByokOnly: true });
    const seen = upstream({
      "POST https://api.openai.com/v1/videos": [() => json(soraCreate)],
      [`GET ${JOB}`]: [() => json(soraCompleted)],
    });
    const job = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    await getDb(env.DB)
      .update(tables.byokCredentials)
      .set({ allowedApiKeyHashes: [acct.apiKeyHash], allowedModels: ["openai/sora-2"] })
      .where(eq(tables.byokCredentials.id, credential));
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    expect(done.usage).toEqual({ cost: 0.4, is_byok: true });
    expect(seen[0]).toMatchObject({ headers: { authorization: "Bearer sk-byok-sora" } });
  });

  it("reports the provider's failure message", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-sora");
    upstream({
      "POST https://api.openai.com/v1/videos": [() => json(soraCreate)],
      [`GET ${JOB}`]: [() => json(soraFailed)],
    });
    const job = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    const failed = await driveUntil(acct.apiKey, job.id, "failed");
    expect(failed.error).toBe("Your request was blocked by our moderation system.");
  });

  it("keeps polling through transient poll errors", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-sora");
    upstream({
      "POST https://api.openai.com/v1/videos": [() => json(soraCreate)],
      [`GET ${JOB}`]: [() => json({ error: { message: "busy" } }, 503), () => json(soraCompleted)],
    });
    const job = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    await step(job.id);
    await step(job.id);
    expect((await poll(acct.apiKey, job.id)).status).toBe("in_progress");
    await driveUntil(acct.apiKey, job.id, "completed");
  });

  it("fails the job when every endpoint refuses the submission", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "openai", "sk-byok-sora");
    upstream({
      "POST https://api.openai.com/v1/videos": [() => json({ error: { message: "prompt too long" } }, 400)],
    });
    const job = await submitOk(acct.apiKey, { model: "openai/sora-2", prompt: "x", duration: 4 });
    const failed = await driveUntil(acct.apiKey, job.id, "failed");
    expect(failed.error).toMatch(/^Submission failed: .*prompt too long/);
  });
});

describe("long-running-operation video jobs", () => {
  const BASE = "https://generativelanguage.googleapis.com/v1beta";
  const OP = `${BASE}/${opStarted.name}`;

  it("starts an operation, polls it until done, and fetches the file it names", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "google-ai-studio", "goog-byok");
    const seen = upstream({
      [`POST ${BASE}/models/veo-3.1-generate-preview:predictLongRunning`]: [() => json(opStarted)],
      [`GET ${OP}`]: [() => json(opRunning), () => json(opDone)],
      [`GET ${opDone.response.generateVideoResponse.generatedSamples[0]!.video.uri}`]: [
        () => new Response(MP4, { headers: { "Content-Type": "video/mp4" } }),
      ],
    });
    const job = await submitOk(acct.apiKey, {
      model: "google/veo-3.1",
      prompt: "a fox in snow",
      duration: 8,
      resolution: "1080p",
      aspect_ratio: "9:16",
      generate_audio: true,
      seed: 42,
    });
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    expect(done.usage).toEqual({ cost: 3.2, is_byok: true });
    expect(seen[0]).toMatchObject({
      headers: { "x-goog-api-key": "goog-byok" },
      body: {
        instances: [{ prompt: "a fox in snow" }],
        parameters: {
          aspectRatio: "9:16",
          resolution: "1080p",
          durationSeconds: 8,
          generateAudio: true,
          seed: 42,
        },
      },
    });
    const content = await call(`/videos/${job.id}/content`, { key: acct.apiKey });
    expect(new Uint8Array(await content.arrayBuffer())).toEqual(MP4);
  });

  it("fails with the operation's error", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await addByok(acct, "google-ai-studio", "goog-byok");
    const seen = upstream({
      [`POST ${BASE}/models/veo-3.1-generate-preview:predictLongRunning`]: [() => json(opStarted)],
      [`GET ${OP}`]: [() => json(opError)],
    });
    const job = await submitOk(acct.apiKey, { model: "google/veo-3.1", prompt: "x", duration: 4 });
    const failed = await driveUntil(acct.apiKey, job.id, "failed");
    expect(failed.error).toBe(opError.error.message);
    // generate_audio absent: the endpoint's capability (true for this model) is sent.
    expect(seen[0]!.body).toMatchObject({ parameters: { generateAudio: true, durationSeconds: 4 } });
  });
});
