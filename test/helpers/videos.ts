// Video job test helpers: submit through raw fetch (the SDK expects 202), drive the job's alarms, read its state.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import type { VideoJobWire } from "../../src/schemas/videos";
import type { VideoJob } from "../../src/videos/job";
import type { VideoJobState } from "../../src/videos/state";
import { call } from "./http";
import { post, streamingFetch } from "./media";
import { sdkFor } from "./sdk";

export const sdk = (apiKey: string) => sdkFor(apiKey, undefined, streamingFetch());

export async function submit(
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const { res, settled } = await post("/videos", key, body, headers);
  await settled();
  return res;
}

/** Submits and expects the 200 pending answer. */
export async function submitOk(
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await submit(key, body, headers);
  expect(res.status).toBe(200);
  const job = (await res.json()) as VideoJobWire;
  expect(job.status).toBe("pending");
  return job;
}

export const stubOf = (id: string) => env.VIDEO_JOBS.get(env.VIDEO_JOBS.idFromName(id));

/** Runs the job's pending alarm (if any) now; returns whether one ran. */
export const step = (id: string) => runDurableObjectAlarm(stubOf(id));

export async function stateOf(id: string): Promise<VideoJobState> {
  return runInDurableObject(stubOf(id), async (instance: VideoJob) => (await instance.snapshot())!);
}

export async function poll(key: string, id: string): Promise<VideoJobWire> {
  const res = await call(`/videos/${id}`, { key });
  expect(res.status).toBe(200);
  return (await res.json()) as VideoJobWire;
}

/** Runs alarms until the job reaches `status` (alarms may also fire on their own; both are fine). */
export async function driveUntil(
  key: string,
  id: string,
  status: string,
  maxSteps = 10,
): Promise<VideoJobWire> {
  for (let i = 0; i < maxSteps; i++) {
    const job = await poll(key, id);
    if (job.status === status) return job;
    await step(id);
  }
  const job = await poll(key, id);
  expect(job.status).toBe(status);
  return job;
}
