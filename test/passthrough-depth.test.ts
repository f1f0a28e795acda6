// Free-form passthrough fields (trace, provider options) are bounded in depth and size: 400, nothing created.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { jsonBoundsProblem, PASSTHROUGH_MAX_DEPTH } from "../src/schemas/common";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { submit } from "./helpers/videos";

/** `{"a":{"a":...{"a":leaf}}}` with `depth` objects, built as text so building it needs no recursion. */
function nestedJson(depth: number, leaf = "1"): string {
  return `${'{"a":'.repeat(depth)}${leaf}${"}".repeat(depth)}`;
}

/** The same nesting as a value (JSON.parse builds it without recursion in the test either). */
const nested = (depth: number): unknown => JSON.parse(nestedJson(depth));

const video = {
  model: "sandbox/video-mini",
  prompt: "a lighthouse at dawn",
  duration: 4,
  resolution: "720p",
};

async function accountJobs(accountId: string) {
  return getDb(env.DB).select().from(tables.videoJobs).where(eq(tables.videoJobs.accountId, accountId));
}

async function accountGenerations(accountId: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.accountId, accountId));
}

/** Sends a raw JSON text, so the nesting never goes through JSON.stringify. */
const postRaw = (path: string, key: string, text: string) => call(path, { method: "POST", key, body: text });

describe("POST /videos passthrough bounds", () => {
  it("answers 10,000-deep nesting in trace with a 400 envelope and creates no job", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const text = `{"model":"${video.model}","prompt":"${video.prompt}","duration":4,"resolution":"720p","trace":${nestedJson(10_000)}}`;
    const res = await postRaw("/videos", acct.apiKey, text);
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.message).toContain("body.trace");
    expect(error.message).toMatch(/nested deeper than 32 levels/);
    expect(await accountJobs(acct.accountId)).toEqual([]);
  });

  it("answers deep nesting inside a trace key and inside provider options with 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const cases = [
      ["body.trace", { ...video, trace: { trace_id: "t-1", custom: nested(100) } }],
      ["body.provider.options", { ...video, provider: { options: { sandbox: nested(1_000) } } }],
    ] as const;
    for (const [field, body] of cases) {
      const res = await submit(acct.apiKey, body);
      expect(res.status, field).toBe(400);
      expect((await errorOf(res)).message, field).toContain(`${field}: must not be nested deeper than 32`);
    }
    expect(await accountJobs(acct.accountId)).toEqual([]);
  });

  it("answers an oversized trace or provider options value with 400", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const big = { blob: { inner: "x".repeat(40_000) } };
    const trace = await submit(acct.apiKey, { ...video, trace: big });
    expect(trace.status).toBe(400);
    expect((await errorOf(trace)).message).toMatch(/body\.trace: .*larger than/);
    const options = await submit(acct.apiKey, {
      ...video,
      provider: { options: { sandbox: { blob: "x".repeat(300_000) } } },
    });
    expect(options.status).toBe(400);
    expect((await errorOf(options)).message).toMatch(/body\.provider\.options: .*larger than/);
    expect(await accountJobs(acct.accountId)).toEqual([]);
  });

  it("still accepts nesting at the limit and a full-size trace", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const extra = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, "k"), "v".repeat(512)]),
    );
    const res = await submit(acct.apiKey, {
      ...video,
      trace: { trace_id: "t".repeat(512), ...extra },
      // options itself is the first level.
      provider: { options: { sandbox: nested(PASSTHROUGH_MAX_DEPTH - 1) } },
    });
    expect(res.status).toBe(200);
    expect(await accountJobs(acct.accountId)).toHaveLength(1);
  });
});

describe("speech and embeddings share the trace bounds", () => {
  it("answers 10,000-deep trace nesting with 400 and records no generation", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const trace = nestedJson(10_000);
    for (const [path, head] of [
      ["/audio/speech", '{"model":"sandbox/tts-mini","voice":"alloy","input":"hello"'],
      ["/embeddings", '{"model":"sandbox/embed-small","input":"hello"'],
    ] as const) {
      const res = await postRaw(path, acct.apiKey, `${head},"trace":${trace}}`);
      expect(res.status, path).toBe(400);
      expect((await errorOf(res)).message, path).toMatch(/body\.trace: .*nested deeper than 32 levels/);
    }
    expect(await accountGenerations(acct.accountId)).toEqual([]);
  });
});

describe("jsonBoundsProblem", () => {
  const bounds = { maxDepth: 3, maxChars: 50 };

  it("counts containers, not scalars, and stops at the first problem", () => {
    expect(jsonBoundsProblem({ a: { b: [1] } }, bounds)).toBeNull();
    expect(jsonBoundsProblem({ a: { b: [[1]] } }, bounds)).toMatch(/nested deeper than 3 levels/);
    expect(jsonBoundsProblem("x", bounds)).toBeNull();
    expect(jsonBoundsProblem({ s: "x".repeat(60) }, bounds)).toMatch(/larger than 50/);
  });

  it("walks a million levels without overflowing the stack", () => {
    expect(jsonBoundsProblem(nested(1_000_000), bounds)).toMatch(/nested deeper/);
  });
});
