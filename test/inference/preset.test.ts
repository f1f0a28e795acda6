// `model: "@preset/<slug>"` on inference: the preset's model, fallbacks and provider preferences apply.
import { describe, expect, it } from "vitest";
import { createAccount } from "../helpers/accounts";
import { call, errorOf } from "../helpers/http";
import { post } from "../helpers/media";
import { driveUntil, stateOf, submit, submitOk } from "../helpers/videos";

async function savePreset(key: string, slug: string, body: Record<string, unknown>) {
  const res = await call(`/presets/${slug}/responses`, { key, method: "POST", body });
  expect(res.status).toBe(200);
}

describe("presets in inference", () => {
  it("routes an embeddings request by the preset's model and fallbacks", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, {
      model: "sandbox/embed-always-503",
      models: ["sandbox/embed-small"],
      provider: { allow_fallbacks: true },
    });
    const res = await call("/embeddings", {
      key: acct.apiKey,
      method: "POST",
      body: { model: `@preset/${slug}`, input: "hello" },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
  });

  it("lets the request's own provider preferences win over the preset's", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, {
      model: "sandbox/embed-small",
      provider: { order: ["sandbox"] },
    });
    const served = async (provider?: unknown) => {
      const res = await call("/embeddings", {
        key: acct.apiKey,
        method: "POST",
        body: { model: `@preset/${slug}`, input: "hello", ...(provider ? { provider } : {}) },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { provider: string }).provider;
    };
    expect(await served()).toBe("sandbox");
    expect(await served({ order: ["sandbox-backup"] })).toBe("sandbox-backup");
  });

  it("answers 404 for an unknown preset and for another account's preset", async () => {
    const mine = await createAccount({ creditsUsd: 5 });
    const theirs = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(theirs.managementKey, slug, { model: "sandbox/embed-small" });
    for (const model of ["@preset/does-not-exist", `@preset/${slug}`]) {
      const res = await call("/embeddings", {
        key: mine.apiKey,
        method: "POST",
        body: { model, input: "x" },
      });
      expect(res.status, model).toBe(404);
      expect((await errorOf(res)).message).toContain("Preset");
    }
  });

  it("<model>@preset/<slug>: the model named before the preset wins, the preset's fallbacks and preferences apply", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, {
      model: "sandbox/embed-small",
      models: ["sandbox/embed-small"],
      provider: { allow_fallbacks: true },
    });
    // The named model always fails; the preset's fallback model serves it.
    const res = await call("/embeddings", {
      key: acct.apiKey,
      method: "POST",
      body: { model: `sandbox/embed-always-503@preset/${slug}`, input: "hello" },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
    const gen = await call(`/generation?id=${res.headers.get("x-generation-id")}`, { key: acct.apiKey });
    const attempts = (
      (await gen.json()) as { data: { provider_responses: Array<{ status: number | null }> } }
    ).data.provider_responses;
    // First the request's own model (503), then the preset's fallback.
    expect(attempts.map((a) => a.status)).toEqual([503, 200]);
  });

  it("<model>@preset/<slug> names a model even when the preset names none", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, { temperature: 0.2 });
    const res = await call("/embeddings", {
      key: acct.apiKey,
      method: "POST",
      body: { model: `sandbox/embed-small@preset/${slug}`, input: "x" },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("sandbox/embed-small");
  });

  it("answers 400 for a preset that names no model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `emb-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, { temperature: 0.2 });
    const res = await call("/embeddings", {
      key: acct.apiKey,
      method: "POST",
      body: { model: `@preset/${slug}`, input: "x" },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("names no model");
  });
});

describe("presets in speech and video", () => {
  it("synthesizes speech with the preset's model", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `tts-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, { model: "sandbox/tts-mini" });
    const { res, settled } = await post("/audio/speech", acct.apiKey, {
      model: `@preset/${slug}`,
      input: "hello",
      voice: "alloy",
      response_format: "mp3",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("audio/mpeg");
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    await settled();
  });

  it("submits a video job with the preset's model, and 404s an unknown preset", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `vid-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, { model: "sandbox/video-mini" });
    await submitOk(acct.apiKey, { model: `@preset/${slug}`, prompt: "a cat", duration: 2 });
    const missing = await submit(acct.apiKey, { model: "@preset/nope", prompt: "a cat", duration: 2 });
    expect(missing.status).toBe(404);
  });

  it("a speech preset's provider options apply when the request sends none; the request's own replace them", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `tts-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, {
      model: "sandbox/tts-mini",
      provider: { options: { sandbox: { duration_ms: 10 } } },
    });
    const bytes = async (extra: Record<string, unknown>) => {
      const { res, settled } = await post("/audio/speech", acct.apiKey, {
        model: `@preset/${slug}`,
        input: "hello there, this is a longer sentence to speak",
        voice: "alloy",
        response_format: "pcm",
        ...extra,
      });
      expect(res.status).toBe(200);
      const n = (await res.arrayBuffer()).byteLength;
      await settled();
      return n;
    };
    const underPreset = await bytes({});
    const own = await bytes({ provider: { options: { sandbox: { duration_ms: 1_000 } } } });
    // PCM at 24 kHz, 16-bit: 10 ms is 480 bytes, 1 s is 48,000.
    expect(underPreset).toBe(480);
    expect(own).toBe(48_000);
  });

  it("a video preset's provider options go with the job", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const slug = `vid-${crypto.randomUUID().slice(0, 8)}`;
    await savePreset(acct.managementKey, slug, {
      model: "sandbox/video-mini",
      provider: { options: { sandbox: { fail_with: "PRESET-FAIL" } } },
    });
    const job = await submitOk(acct.apiKey, { model: `@preset/${slug}`, prompt: "a cat", duration: 2 });
    expect((await stateOf(job.id)).providerOptions).toEqual({ sandbox: { fail_with: "PRESET-FAIL" } });
    const failed = await driveUntil(acct.apiKey, job.id, "failed");
    expect(failed.error).toContain("PRESET-FAIL");
  });
});
