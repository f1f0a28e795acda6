// Completion webhooks of video jobs: signed payload, retries with the same webhook-id, workspace default, settings.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import { createAccount, type TestAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { BLOCKED_URLS } from "./helpers/ssrf-corpus";
import { driveUntil, stateOf, step, submitOk } from "./helpers/videos";

afterEach(() => vi.restoreAllMocks());

const body = { model: "sandbox/video-mini", prompt: "a red kite", duration: 2 };

/** Captures outbound webhook POSTs, answering with the given statuses in turn. */
function receiver(statuses: number[]) {
  const seen: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    seen.push({ url: req.url, headers: Object.fromEntries(req.headers), body: await req.text() });
    return new Response(null, { status: statuses.shift() ?? 200 });
  });
  return seen;
}

async function rotate(acct: TestAccount): Promise<string> {
  const res = await call("/videos/webhook/secret", { key: acct.managementKey, method: "POST" });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { secret: string } }).data.secret;
}

describe("completion webhook", () => {
  it("POSTs a signed payload that verifies with standardwebhooks", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = await rotate(acct);
    const seen = receiver([204]);
    const job = await submitOk(acct.apiKey, {
      ...body,
      callback_url: "https://hooks.example.com/videos?tenant=1",
    });
    const done = await driveUntil(acct.apiKey, job.id, "completed");
    expect(seen).toHaveLength(1);
    const hook = seen[0]!;
    expect(hook.url).toBe("https://hooks.example.com/videos?tenant=1");
    const payload = new Webhook(secret).verify(hook.body, hook.headers) as Record<string, unknown>;
    expect(payload).toMatchObject({
      type: "video.completed",
      data: {
        id: job.id,
        status: "completed",
        polling_url: `/api/v1/videos/${job.id}`,
        generation_id: done.generation_id,
        usage: { cost: 0.1, is_byok: false },
      },
    });
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, job.id));
    expect(rows).toMatchObject([
      { attempt: 1, statusCode: 204, error: null, webhookId: hook.headers["webhook-id"] },
    ]);
  });

  it("retries a failing receiver with backoff, keeping the webhook-id, and records every attempt", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const secret = await rotate(acct);
    const seen = receiver([500, 503, 200]);
    const job = await submitOk(acct.apiKey, { ...body, callback_url: "https://hooks.example.com/v" });
    await driveUntil(acct.apiKey, job.id, "completed");
    expect(seen).toHaveLength(1);
    const first = await stateOf(job.id);
    expect(first.webhook).toMatchObject({ attempts: 1, done: false });
    // The next attempt waits 15-30 s (30 s with equal jitter).
    expect(first.webhook!.nextAt - Date.now()).toBeGreaterThan(10_000);
    await step(job.id);
    await step(job.id);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.headers["webhook-id"])).size).toBe(1);
    for (const s of seen) new Webhook(secret).verify(s.body, s.headers);
    expect((await stateOf(job.id)).webhook).toMatchObject({ attempts: 3, done: true });
    expect(await step(job.id)).toBe(false);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, job.id));
    expect(rows.map((r) => [r.attempt, r.statusCode]).sort()).toEqual([
      [1, 500],
      [2, 503],
      [3, 200],
    ]);
  });

  it("gives up after the bounded number of attempts", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const seen = receiver(Array(20).fill(500));
    const job = await submitOk(acct.apiKey, { ...body, callback_url: "https://hooks.example.com/down" });
    await driveUntil(acct.apiKey, job.id, "completed");
    for (let i = 0; i < 12; i++) await step(job.id);
    expect(seen).toHaveLength(8);
    expect((await stateOf(job.id)).webhook?.done).toBe(true);
  });

  it("falls back to the workspace default URL, and notifies failures and cancellations too", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const set = await call("/videos/webhook", {
      key: acct.managementKey,
      method: "PUT",
      body: { url: "https://default.example.com/hook" },
    });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({
      data: { url: "https://default.example.com/hook", secret_configured: false },
    });
    const seen = receiver([200, 200]);
    const failed = await submitOk(acct.apiKey, {
      ...body,
      provider: { options: { sandbox: { fail_with: "nope" } } },
    });
    await driveUntil(acct.apiKey, failed.id, "failed");
    const cancelled = await submitOk(acct.apiKey, body);
    await call(`/videos/${cancelled.id}/cancel`, { key: acct.apiKey, method: "POST" });
    await step(cancelled.id);
    expect(seen.map((s) => s.url)).toEqual([
      "https://default.example.com/hook",
      "https://default.example.com/hook",
    ]);
    expect(seen.map((s) => JSON.parse(s.body).type)).toEqual(["video.failed", "video.cancelled"]);
    expect(JSON.parse(seen[0]!.body).data).toMatchObject({ id: failed.id, status: "failed", error: "nope" });
    // A secret was created on first use; rotating now returns a new one that signs from here on.
    const settings = await call("/videos/webhook", { key: acct.managementKey });
    expect(await settings.json()).toMatchObject({ data: { secret_configured: true } });
  });

  it("signs with both secrets during the grace period after a rotation", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const old = await rotate(acct);
    const current = await rotate(acct);
    const seen = receiver([200]);
    const job = await submitOk(acct.apiKey, { ...body, callback_url: "https://hooks.example.com/r" });
    await driveUntil(acct.apiKey, job.id, "completed");
    expect(seen[0]!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [old, current]) new Webhook(secret).verify(seen[0]!.body, seen[0]!.headers);
  });

  it("does not follow a receiver's redirect to an internal address, on any attempt", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    // Like the runtime, the mock follows a redirect (through the spied fetch) unless told "manual".
    const fetchSpy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (new URL(req.url).hostname !== "hooks.example.com") return new Response("internal", { status: 200 });
      if ((init?.redirect ?? "follow") === "follow") return globalThis.fetch("http://127.0.0.1/", init);
      return new Response(null, { status: 302, headers: { Location: "http://127.0.0.1/" } });
    });
    const job = await submitOk(acct.apiKey, { ...body, callback_url: "https://hooks.example.com/moved" });
    await driveUntil(acct.apiKey, job.id, "completed");
    await step(job.id);
    await step(job.id);
    const urls = fetchSpy.mock.calls.map(([input]) => new Request(input).url);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    expect(urls.every((u) => u === "https://hooks.example.com/moved")).toBe(true);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, job.id));
    expect(rows).toHaveLength(urls.length);
    expect(rows.every((r) => r.statusCode === 302 && r.error === "redirect not followed")).toBe(true);
  });

  it(`refuse ${BLOCKED_URLS.length} unsafe callback_url values: 400, no job, no outbound request`, async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    for (const url of BLOCKED_URLS) {
      const res = await call("/videos", {
        key: acct.apiKey,
        method: "POST",
        body: { ...body, callback_url: url },
      });
      expect(res.status, url).toBe(400);
      expect((await errorOf(res)).message, url).toContain("body.callback_url");
    }
    expect(fetchSpy).toHaveBeenCalledTimes(0);
    const jobs = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.accountId, acct.accountId));
    expect(jobs).toEqual([]);
  });

  it("sends nothing when no URL applies", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const job = await submitOk(acct.apiKey, body);
    await driveUntil(acct.apiKey, job.id, "completed");
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});

describe("webhook settings", () => {
  it("are for management keys only", async () => {
    const acct = await createAccount();
    for (const [path, method] of [
      ["/videos/webhook", "GET"],
      ["/videos/webhook", "PUT"],
      ["/videos/webhook/secret", "POST"],
    ] as const) {
      const res = await call(path, {
        key: acct.apiKey,
        method,
        body: method === "PUT" ? { url: null } : undefined,
      });
      expect(res.status).toBe(403);
      await errorOf(res);
    }
  });

  it("rotate the secret, keeping the previous one valid for a grace period", async () => {
    const acct = await createAccount();
    const first = await call("/videos/webhook/secret", { key: acct.managementKey, method: "POST" });
    const a = ((await first.json()) as { data: { secret: string; previous_valid_until: string | null } })
      .data;
    expect(a.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(a.previous_valid_until).toBeNull();
    expect(first.headers.get("Cache-Control")).toBe("no-store");
    const second = await call("/videos/webhook/secret", { key: acct.managementKey, method: "POST" });
    const b = ((await second.json()) as { data: { secret: string; previous_valid_until: string } }).data;
    expect(b.secret).not.toBe(a.secret);
    expect(Date.parse(b.previous_valid_until) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const read = await call("/videos/webhook", { key: acct.managementKey });
    expect(JSON.stringify(await read.json())).not.toContain(b.secret.slice(6));
  });

  it("refuse an empty userinfo (https://:@host) as callback_url and as the default, sending nothing", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const url = "https://:@hooks.example.com/video";
    const submitted = await call("/videos", {
      key: acct.apiKey,
      method: "POST",
      body: { ...body, callback_url: url },
    });
    expect(submitted.status).toBe(400);
    expect((await errorOf(submitted)).message).toContain("body.callback_url: not an allowed webhook URL");
    const jobs = await getDb(env.DB)
      .select()
      .from(tables.videoJobs)
      .where(eq(tables.videoJobs.accountId, acct.accountId));
    expect(jobs).toEqual([]);
    const set = await call("/videos/webhook", { key: acct.managementKey, method: "PUT", body: { url } });
    expect(set.status).toBe(400);
    expect((await errorOf(set)).message).toContain("must not carry credentials");
    const read = await call("/videos/webhook", { key: acct.managementKey });
    expect(await read.json()).toMatchObject({ data: { url: null } });
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it(`refuse ${BLOCKED_URLS.length} unsafe default URLs without contacting any, and clear with null`, async () => {
    const acct = await createAccount();
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    for (const url of BLOCKED_URLS) {
      const res = await call("/videos/webhook", { key: acct.managementKey, method: "PUT", body: { url } });
      expect(res.status, url).toBe(400);
    }
    expect(fetchSpy).not.toHaveBeenCalled();
    const cleared = await call("/videos/webhook", {
      key: acct.managementKey,
      method: "PUT",
      body: { url: null },
    });
    expect(await cleared.json()).toMatchObject({ data: { url: null } });
  });
});
