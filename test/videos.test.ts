// The video job lifecycle: submit, alarms, polling through @openrouter/sdk, content, cancel, expiry, restarts.
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getCatalog } from "../src/catalog/cache";
import type { Pricing } from "../src/catalog/schema";
import { findModel } from "../src/catalog/types";
import { getDb, tables } from "../src/db/client";
import { pricedResolution } from "../src/schemas/videos";
import type { VideoJob } from "../src/videos/job";
import type { VideoJobState } from "../src/videos/state";
import { createAccount, defaultGuardrail } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { driveUntil, poll, sdk, stateOf, step, stubOf, submitOk } from "./helpers/videos";

const ID = /^gen-vid-\d+-[A-Za-z0-9]{20}$/;
const body = { model: "sandbox/video-mini", prompt: "a lighthouse at dawn", duration: 4, resolution: "720p" };

const tenfold = (pricing: Pricing) =>
  Object.fromEntries(Object.entries(pricing.video_second ?? {}).map(([k, v]) => [k, v * 10]));

async function usageUsd(key: string): Promise<number> {
  const res = await call("/key", { key });
  return ((await res.json()) as { data: { usage: number } }).data.usage;
}

describe("video job lifecycle", () => {
  it("moves pending -> in_progress -> completed with alarms, polled through the SDK", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, body, {
      "x-session-id": "film-session",
      "HTTP-Referer": "https://studio.example.com",
      "User-Agent": "studio-cli/2.0",
      "X-Request-Id": "studio-submit-0001",
    });
    expect(job.id).toMatch(ID);
    expect(job.polling_url).toBe(`/api/v1/videos/${job.id}`);
    const client = sdk(acct.apiKey);
    expect(await client.videoGeneration.getGeneration({ jobId: job.id })).toMatchObject({
      id: job.id,
      status: "pending",
      pollingUrl: job.polling_url,
    });

    await step(job.id); // submit upstream
    const upstreamJobId = (await stateOf(job.id))!.current!.upstreamJobId;
    const running = await client.videoGeneration.getGeneration({ jobId: job.id });
    expect(running.status).toBe("in_progress");
    expect(running.usage).toBeUndefined();
    expect(running.generationId).toBeUndefined();

    await step(job.id); // first poll: the sandbox is still working
    expect((await poll(acct.apiKey, job.id)).status).toBe("in_progress");
    await step(job.id); // second poll: done
    const done = await client.videoGeneration.getGeneration({ jobId: job.id });
    expect(done).toMatchObject({ status: "completed", usage: { cost: 0.2, isByok: false } });
    expect(done.generationId).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    // Charged once: 4 s x $0.05 per second.
    expect(await usageUsd(acct.apiKey)).toBeCloseTo(0.2, 6);

    const generation = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.id, done.generationId!))
      .get();
    expect(generation).toMatchObject({
      modality: "video",
      status: "completed",
      costMicros: 200_000,
      sessionId: "film-session",
      streamed: false,
      // The provider's job id, and who submitted it.
      upstreamId: upstreamJobId,
      httpReferer: "https://studio.example.com",
      userAgent: "studio-cli/2.0",
      // The submitting request's id: the job's generation is found from its log line.
      requestId: "studio-submit-0001",
    });
    expect(generation!.generationMs).toBeGreaterThanOrEqual(0);
  });

  it("a flag filter's note on the prompt reaches the job's generation record", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await defaultGuardrail(acct, {
      contentFilterBuiltins: [{ slug: "email", action: "flag", label: "mail" }],
    });
    const job = await submitOk(acct.apiKey, { ...body, prompt: "a letter to bob@example.com" });
    for (let i = 0; i < 3; i++) await step(job.id);
    const done = await sdk(acct.apiKey).videoGeneration.getGeneration({ jobId: job.id });
    expect(done.status).toBe("completed");
    const generation = await getDb(env.DB)
      .select()
      .from(tables.generations)
      .where(eq(tables.generations.id, done.generationId!))
      .get();
    expect(generation!.flags).toEqual(["flag:mail"]);
  });

  it("prices a video asked for by pixel size at the resolution that size is", async () => {
    expect(pricedResolution({ size: "1920x1080" })).toBe("1080p");
    expect(pricedResolution({ size: "1080x1920" })).toBe("1080p");
    expect(pricedResolution({ size: "1280x720" })).toBe("720p");
    expect(pricedResolution({ size: "1000x1000" })).toBe("dearest");
    expect(pricedResolution({ resolution: "480p" })).toBe("480p");
    expect(pricedResolution({})).toBeNull();
    // 4 s at 1080p's $0.10 a second: a probe had it billed at the default's $0.05.
    const acct = await createAccount({ creditsUsd: 5 });
    const { resolution: _, ...unsized } = body;
    const job = await submitOk(acct.apiKey, { ...unsized, size: "1920x1080" });
    await step(job.id);
    await step(job.id);
    await step(job.id);
    expect(await poll(acct.apiKey, job.id)).toMatchObject({ status: "completed", usage: { cost: 0.4 } });
    expect(await usageUsd(acct.apiKey)).toBeCloseTo(0.4, 6);
  });

  it("streams a valid MP4 once completed, through the SDK", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, { ...body, duration: 2 });
    const early = await call(`/videos/${job.id}/content`, { key: acct.apiKey });
    expect(early.status).toBe(409);
    await errorOf(early);
    await driveUntil(acct.apiKey, job.id, "completed");
    const stream = await sdk(acct.apiKey).videoGeneration.getVideoContent({ jobId: job.id });
    const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    const text = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
    expect(text(4, 8)).toBe("ftyp");
    const ftypSize = new DataView(bytes.buffer).getUint32(0);
    expect(text(ftypSize + 4, ftypSize + 8)).toBe("moov");
    expect(text(0, bytes.length)).toContain("avcC");
    const res = await call(`/videos/${job.id}/content?index=1`, { key: acct.apiKey });
    expect(res.status).toBe(400);
  });

  it("fails over to the next endpoint when the first refuses the submission", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, {
      ...body,
      model: "sandbox/video-failover",
      resolution: undefined,
    });
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    const row = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.id, job.id))
      .get();
    expect(row?.endpointId).toBe("sandbox/video-failover@sandbox");
    // Its generation lists both providers tried, the refusal first, as an inference request's does.
    const generation = await call(`/generation?id=${done.generation_id}`, { key: acct.apiKey });
    const { data } = (await generation.json()) as {
      data: { provider_responses: Array<{ provider_name?: string; status?: number | null }> };
    };
    expect(data.provider_responses).toHaveLength(2);
    expect(data.provider_responses[0]!.status).not.toBe(200);
  });

  it("reports a provider failure with its reason and releases the reservation", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, {
      ...body,
      provider: { options: { sandbox: { fail_with: "content policy refused the prompt" } } },
    });
    const failed = await driveUntil(acct.apiKey, job.id, "failed");
    expect(failed.error).toBe("content policy refused the prompt");
    expect(failed.usage).toBeUndefined();
    expect(await usageUsd(acct.apiKey)).toBe(0);
    const content = await call(`/videos/${job.id}/content`, { key: acct.apiKey });
    expect(content.status).toBe(409);
  });

  it("cancels an unfinished job (idempotently), refusing to cancel a finished one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    // Cancelled before any provider took it: released, nothing charged.
    const early = await submitOk(acct.apiKey, body);
    expect((await call(`/videos/${early.id}/cancel`, { key: acct.apiKey, method: "POST" })).status).toBe(200);
    await step(early.id);
    const released = await poll(acct.apiKey, early.id);
    expect(released.status).toBe("cancelled");
    expect(released.usage).toBeUndefined();
    expect(await usageUsd(acct.apiKey)).toBe(0);

    const job = await submitOk(acct.apiKey, body);
    await step(job.id);
    const cancelled = await call(`/videos/${job.id}/cancel`, { key: acct.apiKey, method: "POST" });
    expect(cancelled.status).toBe(200);
    // The provider had taken the job: it makes and bills it (it is not told of the cancel), so it is
    // charged as made, 4 s at $0.05, and the job says so, with the generation that records it.
    const charged = {
      id: job.id,
      status: "cancelled",
      usage: { cost: 0.2, is_byok: false },
      generation_id: expect.stringMatching(/^gen-/),
    };
    expect(await cancelled.json()).toMatchObject(charged);
    const again = await call(`/videos/${job.id}/cancel`, { key: acct.apiKey, method: "POST" });
    expect(again.status).toBe(200);
    // Alarms after the cancel change nothing: charged once.
    await step(job.id);
    expect(await poll(acct.apiKey, job.id)).toMatchObject(charged);
    expect(await usageUsd(acct.apiKey)).toBeCloseTo(0.2, 6);

    const other = await submitOk(acct.apiKey, { ...body, duration: 2 });
    await driveUntil(acct.apiKey, other.id, "completed");
    const late = await call(`/videos/${other.id}/cancel`, { key: acct.apiKey, method: "POST" });
    expect(late.status).toBe(409);
    expect((await errorOf(late)).message).toMatch(/already completed/);
  });

  it("charges the price quoted at submission, whatever the catalog says when the job ends", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, body);
    await step(job.id); // submitted upstream
    // The catalog's price goes up tenfold while the job runs.
    const endpoints = findModel(await getCatalog(env.DB), body.model)!.endpoints as Array<{
      pricing: Pricing;
    }>;
    const before = endpoints.map((e) => e.pricing);
    try {
      for (const e of endpoints) e.pricing = { ...e.pricing, video_second: tenfold(e.pricing) };
      const done = await driveUntil(acct.apiKey, job.id, "completed");
      expect(done.usage?.cost).toBeCloseTo(0.2, 6);
      expect(await usageUsd(acct.apiKey)).toBeCloseTo(0.2, 6);
    } finally {
      endpoints.forEach((e, i) => {
        e.pricing = before[i]!;
      });
    }
  });

  it("never charges a job more than was reserved for it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, body);
    await step(job.id);
    const reserved = (await stateOf(job.id)).reservation!.reservedMicros;
    // As if the provider billed many more seconds than asked for: ten times the quoted price.
    await runInDurableObject(stubOf(job.id), async (_instance: VideoJob, state) => {
      const s = (await state.storage.get<VideoJobState>("job"))!;
      const pricing = s.current!.pricing!;
      await state.storage.put("job", {
        ...s,
        current: { ...s.current!, pricing: { ...pricing, video_second: tenfold(pricing) } },
      });
    });
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    expect(done.usage?.cost).toBe(reserved / 1e6);
    expect(await usageUsd(acct.apiKey)).toBeCloseTo(reserved / 1e6, 6);
  });

  it("expires a job that does not finish before its deadline", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, {
      ...body,
      provider: { options: { sandbox: { polls_before_done: 50 } } },
    });
    await step(job.id);
    await runInDurableObject(stubOf(job.id), async (_instance: VideoJob, state) => {
      const s = (await state.storage.get<{ deadlineAt: number }>("job"))!;
      await state.storage.put("job", { ...s, deadlineAt: Date.now() - 1 });
    });
    await step(job.id);
    const expired = await poll(acct.apiKey, job.id);
    expect(expired).toMatchObject({ status: "expired", error: "The job did not finish in time" });
    expect(await usageUsd(acct.apiKey)).toBe(0);
  });

  it("keeps its state across a restart of the Durable Object", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(acct.apiKey, body);
    await step(job.id);
    const before = await stateOf(job.id);
    expect(before.status).toBe("in_progress");
    await evictDurableObject(stubOf(job.id));
    const after = await stateOf(job.id);
    expect(after.current?.upstreamJobId).toBe(before.current?.upstreamJobId);
    await driveUntil(acct.apiKey, job.id, "completed");
  });

  it("hides another account's job: 404 on poll, content and cancel", async () => {
    const owner = await createAccount({ creditsUsd: 5 });
    const stranger = await createAccount({ creditsUsd: 5 });
    const job = await submitOk(owner.apiKey, body);
    for (const [path, method] of [
      [`/videos/${job.id}`, "GET"],
      [`/videos/${job.id}/content`, "GET"],
      [`/videos/${job.id}/cancel`, "POST"],
    ] as const) {
      const res = await call(path, { key: stranger.apiKey, method });
      expect(res.status).toBe(404);
      await errorOf(res);
    }
    expect((await poll(owner.apiKey, job.id)).status).not.toBe("cancelled");
  });

  it("is submitted with plain HTTP: the SDK's generate() expects 202 where the spec answers 200", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await expect(
      sdk(acct.apiKey).videoGeneration.generate({
        videoGenerationRequest: { model: body.model, prompt: body.prompt, duration: 4, aspectRatio: "16:9" },
      }),
    ).rejects.toThrow();
  });

  it("is described in the OpenAPI document", async () => {
    const res = await call("/openapi.json");
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    for (const path of [
      "/videos",
      "/videos/{id}",
      "/videos/{id}/content",
      "/videos/{id}/cancel",
      "/audio/speech",
    ]) {
      expect(doc.paths[`/api/v1${path}`], path).toBeDefined();
    }
  });

  it("answers 404 for an unknown job id and 400 for a malformed one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const unknown = await call("/videos/gen-vid-1700000000-AAAAAAAAAAAAAAAAAAAA", { key: acct.apiKey });
    expect(unknown.status).toBe(404);
    const malformed = await call("/videos/not-a-job", { key: acct.apiKey });
    expect(malformed.status).toBe(400);
  });
});
