// POST /videos: every validation rule, Idempotency-Key semantics, and the reservation made at submission.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import app from "../src/app";
import { readLedgerStatus } from "../src/billing/usage";
import { getDb, tables } from "../src/db/client";
import { createAccount } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";
import { BLOCKED_URLS } from "./helpers/ssrf-corpus";
import { driveUntil, stateOf, submit, submitOk } from "./helpers/videos";

afterEach(() => vi.restoreAllMocks());

const base = { model: "sandbox/video-mini", prompt: "waves on a beach", duration: 2 };
const image = "data:image/png;base64,iVBORw0KGgo=";
const frame = (frame_type: string) => ({ type: "image_url", image_url: { url: image }, frame_type });

describe("POST /videos validation", () => {
  const invalid: Array<[string, Record<string, unknown>]> = [
    ["a missing model", { prompt: "x" }],
    ["an empty prompt", { ...base, prompt: "" }],
    ["no prompt and no image", { model: "sandbox/video-mini", duration: 2 }],
    ["an unknown aspect_ratio", { ...base, aspect_ratio: "5:4" }],
    ["an aspect_ratio the model does not make", { ...base, aspect_ratio: "21:9" }],
    ["the SDK-only 360p resolution", { ...base, resolution: "360p" }],
    ["a resolution the model does not make", { ...base, resolution: "4K" }],
    ["a duration of 0", { ...base, duration: 0 }],
    ["a fractional duration", { ...base, duration: 2.5 }],
    ["a duration outside the model's range", { ...base, duration: 3 }],
    ["an http callback_url", { ...base, callback_url: "http://hooks.example.com/v" }],
    ["a frame_type that does not exist", { ...base, frame_images: [frame("middle_frame")] }],
    ["two first frames", { ...base, frame_images: [frame("first_frame"), frame("first_frame")] }],
    [
      "a frame image that is not a URL",
      { ...base, frame_images: [{ ...frame("first_frame"), image_url: { url: "x" } }] },
    ],
    [
      "a last frame on a model that takes only first frames",
      { ...base, model: "openai/sora-2", duration: 4, frame_images: [frame("last_frame")] },
    ],
    [
      "an audio reference on a model without audio references",
      {
        ...base,
        input_references: [{ type: "audio_url", audio_url: { url: "https://cdn.example.com/a.mp3" } }],
      },
    ],
    ["a reference of unknown type", { ...base, input_references: [{ type: "file", file: {} }] }],
    ["generate_audio on a model without audio", { ...base, generate_audio: true }],
    ["a negative seed", { ...base, seed: -1 }],
    ["a fractional seed", { ...base, seed: 1.5 }],
    ["a malformed size", { ...base, size: "1280*720" }],
    [
      "a size with a non-string aspect_ratio",
      { ...base, size: "1280x720", aspect_ratio: 5, resolution: 720 },
    ],
    ["a size contradicting aspect_ratio", { ...base, size: "1280x720", aspect_ratio: "9:16" }],
    ["a size contradicting resolution", { ...base, size: "1280x720", resolution: "1080p" }],
    ["creativity on a generation model", { ...base, creativity: 0.5 }],
    ["upscale_factor on a generation model", { ...base, upscale_factor: 2 }],
    ["an upscale_factor of 0", { ...base, model: "sandbox/video-upscale", upscale_factor: 0 }],
    ["an upscaler without a video", { model: "sandbox/video-upscale", upscale_factor: 2, duration: 2 }],
    ["previous_job_id", { ...base, previous_job_id: "gen-vid-1-AAAAAAAAAAAAAAAAAAAA" }],
    ["a user longer than 256", { ...base, user: "u".repeat(257) }],
    ["a trace with a non-string span_name", { ...base, trace: { span_name: 3 } }],
    ["a model of another modality", { ...base, model: "sandbox/tts-mini" }],
  ];
  for (const [name, body] of invalid) {
    it(`rejects ${name} with 400 and creates nothing`, async () => {
      const acct = await createAccount({ creditsUsd: 5 });
      const res = await submit(acct.apiKey, body);
      expect(res.status).toBe(400);
      await errorOf(res);
      const rows = await getDb(env.DB)
        .select()
        .from(tables.videoJobs)
        .where(eq(tables.videoJobs.accountId, acct.accountId));
      expect(rows).toEqual([]);
    });
  }

  it("answers 404 for an unknown model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await submit(acct.apiKey, { ...base, model: "nobody/nothing" });
    expect(res.status).toBe(404);
  });

  it("accepts an image-only request, an exact size, and an upscaler's own fields", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await submitOk(acct.apiKey, {
      model: "sandbox/video-mini",
      duration: 2,
      frame_images: [frame("first_frame")],
    });
    await submitOk(acct.apiKey, {
      ...base,
      size: "1280x720",
      aspect_ratio: "16:9",
      resolution: "720p",
      seed: 7,
    });
    await submitOk(acct.apiKey, {
      model: "sandbox/video-upscale",
      duration: 2,
      upscale_factor: 2,
      creativity: 0.3,
      input_references: [{ type: "video_url", video_url: { url: "https://cdn.example.com/in.mp4" } }],
    });
  });

  it(`refuses ${BLOCKED_URLS.length} unsafe callback URLs without contacting any`, async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    for (const url of BLOCKED_URLS) {
      const res = await submit(acct.apiKey, { ...base, callback_url: url });
      expect(res.status, url).toBe(400);
      expect((await errorOf(res)).message).toMatch(/callback_url/);
    }
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});

describe("Idempotency-Key", () => {
  it("returns the same job for a retry with the same body, billed once", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = crypto.randomUUID();
    const first = await submitOk(acct.apiKey, base, { "Idempotency-Key": key });
    // Key order does not matter: the body is compared canonically.
    const retry = await submit(
      acct.apiKey,
      { duration: 2, prompt: base.prompt, model: base.model },
      { "Idempotency-Key": key },
    );
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { id: string }).id).toBe(first.id);
    await driveUntil(acct.apiKey, first.id, "completed");
    const late = await submit(acct.apiKey, base, { "Idempotency-Key": key });
    expect(await late.json()).toMatchObject({ id: first.id, status: "completed" });
    const rows = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.accountId, acct.accountId));
    expect(rows).toHaveLength(1);
    const usage = (await (await call("/key", { key: acct.apiKey })).json()) as { data: { usage: number } };
    expect(usage.data.usage).toBeCloseTo(0.1, 6);
  });

  it("replays the job for a retry whose headers differ (a session or user agent is not the request)", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = crypto.randomUUID();
    const first = await submitOk(acct.apiKey, base, { "Idempotency-Key": key, "x-session-id": "take-1" });
    const retry = await submit(acct.apiKey, base, {
      "Idempotency-Key": key,
      "x-session-id": "take-2",
      "User-Agent": "retrying-client/1.1",
    });
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { id: string }).id).toBe(first.id);
    // The job keeps the first request's session.
    expect((await stateOf(first.id)).sessionId).toBe("take-1");
    // A session in the body is the request's own: another one there is another request.
    const res = await submit(acct.apiKey, { ...base, session_id: "take-3" }, { "Idempotency-Key": key });
    expect(res.status).toBe(409);
    await errorOf(res);
  });

  it("refuses the same key with a different body with 409", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = crypto.randomUUID();
    await submitOk(acct.apiKey, base, { "Idempotency-Key": key });
    const res = await submit(acct.apiKey, { ...base, prompt: "something else" }, { "Idempotency-Key": key });
    expect(res.status).toBe(409);
    await errorOf(res);
  });

  it("scopes keys to the API key, and creates a new job without one", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const a = await submitOk(acct.apiKey, base);
    const b = await submitOk(acct.apiKey, base);
    expect(a.id).not.toBe(b.id);
    const other = await createAccount({ creditsUsd: 5 });
    const key = crypto.randomUUID();
    const mine = await submitOk(acct.apiKey, base, { "Idempotency-Key": key });
    const theirs = await submitOk(other.apiKey, base, { "Idempotency-Key": key });
    expect(mine.id).not.toBe(theirs.id);
  });

  it("frees a key after 24 hours", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = crypto.randomUUID();
    const first = await submitOk(acct.apiKey, base, { "Idempotency-Key": key });
    await getDb(env.DB)
      .update(tables.videoJobs)
      .set({ createdAt: new Date(Date.now() - 25 * 3600_000).toISOString() })
      .where(eq(tables.videoJobs.id, first.id));
    const second = await submitOk(acct.apiKey, base, { "Idempotency-Key": key });
    expect(second.id).not.toBe(first.id);
  });

  it("rejects a malformed key with 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await submit(acct.apiKey, base, { "Idempotency-Key": "x".repeat(300) });
    expect(res.status).toBe(400);
  });
});

describe("billing at submission", () => {
  it("reserves price x duration, and a cancel releases it", async () => {
    // $0.25 of credit: one 4-second job ($0.20) fits, a second does not until the first is cancelled.
    const acct = await createAccount({ creditsUsd: 0.25 });
    const body = { ...base, duration: 4 };
    const first = await submitOk(acct.apiKey, body);
    const refused = await submit(acct.apiKey, body);
    expect(refused.status).toBe(402);
    await errorOf(refused);
    const cancel = await call(`/videos/${first.id}/cancel`, { key: acct.apiKey, method: "POST" });
    expect(cancel.status).toBe(200);
    await submitOk(acct.apiKey, body);
  });

  it("refuses inline media too large for the job's state with 413 naming the limit, and creates nothing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const big = `data:image/png;base64,${"A".repeat(800_000)}`;
    const res = await submit(acct.apiKey, {
      ...base,
      frame_images: [{ type: "image_url", image_url: { url: big }, frame_type: "first_frame" }],
      input_references: [{ type: "image_url", image_url: { url: big } }],
    });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toMatch(
      /at most 1,500,000 characters together \(this one 1,600,0\d\d\): pass larger images by URL/,
    );
    // The scheme in any case is a data URL all the same.
    const upper = await submit(acct.apiKey, {
      ...base,
      frame_images: [
        { type: "image_url", image_url: { url: big.replace("data:", "DATA:") }, frame_type: "first_frame" },
      ],
      input_references: [{ type: "image_url", image_url: { url: big } }],
    });
    expect(upper.status).toBe(413);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.accountId, acct.accountId));
    expect(rows).toEqual([]);
    // One within the limit is a job.
    await submitOk(acct.apiKey, {
      ...base,
      frame_images: [{ type: "image_url", image_url: { url: big }, frame_type: "first_frame" }],
    });
  });

  it("answers 402 with no credits and creates no job", async () => {
    const acct = await createAccount();
    const res = await submit(acct.apiKey, base);
    expect(res.status).toBe(402);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.accountId, acct.accountId));
    expect(rows).toEqual([]);
  });

  describe("after admission fails", () => {
    /** The binding, except that statements on video_jobs matching `failing` fail as D1 would. */
    function failingDb(failing: RegExp): D1Database {
      const broken = {
        bind: () => broken,
        run: () => Promise.reject(new Error("D1_ERROR: disk I/O error: SQLITE_IOERR")),
        all: () => Promise.reject(new Error("D1_ERROR: disk I/O error: SQLITE_IOERR")),
        raw: () => Promise.reject(new Error("D1_ERROR: disk I/O error: SQLITE_IOERR")),
        first: () => Promise.reject(new Error("D1_ERROR: disk I/O error: SQLITE_IOERR")),
      };
      return new Proxy(env.DB, {
        get(target, prop) {
          if (prop === "prepare") {
            return (sql: string) => (failing.test(sql) ? broken : target.prepare(sql));
          }
          const value: unknown = Reflect.get(target, prop);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    }

    async function submitWith(key: string, overrides: Partial<Cloudflare.Env>) {
      const ctx = createExecutionContext();
      const req = new Request(`${BASE}/videos`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ ...base, duration: 4 }),
      });
      const res = await app.fetch(req, { ...env, REGION: "global", ...overrides }, ctx);
      await waitOnExecutionContext(ctx);
      return res;
    }

    async function expectNothingReserved(acct: { accountId: string; apiKeyHash: string }) {
      const status = await readLedgerStatus(env, acct.accountId, [acct.apiKeyHash]);
      expect(status.account.reserved).toBe(0);
      expect(status.keys[acct.apiKeyHash]!.reserved).toEqual({ credits: 0, byok: 0 });
    }

    it("releases the reservation when the job row cannot be written, and answers 500", async () => {
      const acct = await createAccount({ creditsUsd: 1 });
      const log = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await submitWith(acct.apiKey, { DB: failingDb(/^insert into "video_jobs"/i) });
      expect(res.status).toBe(500);
      expect((await errorOf(res)).message).toBe("Internal server error");
      expect(log).toHaveBeenCalled();
      await expectNothingReserved(acct);
      // The whole credit is there for the next job.
      await submitOk(acct.apiKey, { ...base, duration: 4 });
    });

    it("releases the reservation when the job cannot start and its row cannot be marked failed", async () => {
      const acct = await createAccount({ creditsUsd: 1 });
      vi.spyOn(console, "error").mockImplementation(() => {});
      const jobs = {
        idFromName: (name: string) => env.VIDEO_JOBS.idFromName(name),
        get: () => ({
          start: () => Promise.reject(new Error("Durable Object reset because its code was updated")),
        }),
      } as unknown as Cloudflare.Env["VIDEO_JOBS"];
      const res = await submitWith(acct.apiKey, {
        VIDEO_JOBS: jobs,
        DB: failingDb(/^update "video_jobs"/i),
      });
      // A Durable Object reset is the platform's transient failure: 503, retry shortly.
      expect(res.status).toBe(503);
      expect(res.headers.get("Retry-After")).toBe("1");
      await errorOf(res);
      await expectNothingReserved(acct);
    });

    it("a job that could not start frees its Idempotency-Key: the retry starts a job, not replays the failure", async () => {
      const acct = await createAccount({ creditsUsd: 1 });
      vi.spyOn(console, "error").mockImplementation(() => {});
      const jobs = {
        idFromName: (name: string) => env.VIDEO_JOBS.idFromName(name),
        get: () => ({ start: () => Promise.reject(new Error("Network connection lost.")) }),
      } as unknown as Cloudflare.Env["VIDEO_JOBS"];
      const ctx = createExecutionContext();
      const request = () =>
        new Request(`${BASE}/videos`, {
          method: "POST",
          headers: {
            Authorization: `Bearer ${acct.apiKey}`,
            "Content-Type": "application/json",
            "Idempotency-Key": "retry-after-failed-start",
          },
          body: JSON.stringify({ ...base, duration: 4 }),
        });
      const failed = await app.fetch(request(), { ...env, REGION: "global", VIDEO_JOBS: jobs }, ctx);
      await waitOnExecutionContext(ctx);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      const retry = await submitOk(
        acct.apiKey,
        { ...base, duration: 4 },
        {
          "Idempotency-Key": "retry-after-failed-start",
        },
      );
      expect(retry.status).toBe("pending");
    });
  });
});
