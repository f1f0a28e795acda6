// GET /activity and GET /generations (the console's reads of generation records), GET /videos' listing,
// and the catalog discovery routes, each through @openrouter/sdk where it has the operation.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { activityWindowStart } from "../src/db/activity";
import { getDb, tables } from "../src/db/client";
import { ActivityQuerySchema } from "../src/schemas/activity";
import { createAccount, createKey, defaultGuardrail, type TestAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { post } from "./helpers/media";
import { sdkFor } from "./helpers/sdk";

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

/** A generation record as the inference routes write it, at a chosen time. */
async function record(
  acct: TestAccount,
  fields: Partial<typeof tables.generations.$inferInsert> & { createdAt: string },
) {
  const id = `gen-${crypto.randomUUID()}`;
  await getDb(env.DB)
    .insert(tables.generations)
    .values({
      id,
      accountId: acct.accountId,
      workspaceId: acct.workspaceId,
      keyHash: acct.apiKeyHash,
      modality: "chat",
      model: "sandbox/chat-echo",
      provider: "sandbox",
      endpointId: "sandbox/chat-echo@sandbox",
      status: "completed",
      usage: { prompt_tokens: 10, completion_tokens: 5, reasoning_tokens: 1 },
      costMicros: 1_500,
      region: "global",
      ...fields,
    });
  return id;
}

describe("GET /activity", () => {
  it("sums requests, tokens, credit and BYOK spend per day and endpoint, as the SDK parses it", async () => {
    const acct = await createAccount();
    const yesterday = daysAgo(1);
    await record(acct, { createdAt: yesterday });
    await record(acct, { createdAt: yesterday, costMicros: 2_500 });
    await record(acct, { createdAt: yesterday, isByok: true, costMicros: 4_000 });
    await record(acct, {
      createdAt: daysAgo(0),
      model: "sandbox/embed-small",
      endpointId: "sandbox/embed-small@sandbox-backup",
      provider: "sandbox-backup",
      modality: "embeddings",
      usage: { prompt_tokens: 7 },
      costMicros: 300,
    });
    // Outside the window, and one that never reached a provider: neither counts.
    await record(acct, { createdAt: daysAgo(31) });
    await record(acct, { createdAt: yesterday, provider: null, endpointId: null, status: "failed" });

    const { data } = await sdkFor(acct.managementKey).analytics.getUserActivity();
    expect(data).toEqual([
      {
        date: today(),
        model: "sandbox/embed-small",
        modelPermaslug: "sandbox/embed-small-20260101",
        endpointId: "sandbox/embed-small@sandbox-backup",
        providerName: "sandbox-backup",
        requests: 1,
        promptTokens: 7,
        completionTokens: 0,
        reasoningTokens: 0,
        usage: 0.0003,
        byokUsageInference: 0,
      },
      expect.objectContaining({
        date: yesterday.slice(0, 10),
        model: "sandbox/chat-echo",
        endpointId: "sandbox/chat-echo@sandbox",
        requests: 3,
        promptTokens: 30,
        completionTokens: 15,
        reasoningTokens: 3,
        usage: 0.004,
        byokUsageInference: 0.004,
      }),
    ]);
    expect(data[1]!.workspaceId).toBeUndefined();
  });

  it("counts a real sandbox request's record", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const { res, settled } = await post("/chat/completions", acct.apiKey, {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content: "count me in the activity" }],
    });
    const body = (await res.json()) as { usage: { prompt_tokens: number; cost: number } };
    await settled();
    const { data } = await sdkFor(acct.managementKey).analytics.getUserActivity();
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ date: today(), requests: 1, promptTokens: body.usage.prompt_tokens });
    expect(data[0]!.usage).toBeCloseTo(body.usage.cost, 9);
  });

  it("filters by day, key and creator, and splits per workspace when asked", async () => {
    const acct = await createAccount();
    const other = await createKey(acct, { name: "other" });
    await record(acct, { createdAt: daysAgo(2) });
    await record(acct, { createdAt: daysAgo(0), keyHash: other.hash });
    const sdk = sdkFor(acct.managementKey);

    const day = await sdk.analytics.getUserActivity({ date: daysAgo(2).slice(0, 10) });
    expect(day.data.map((r) => r.date)).toEqual([daysAgo(2).slice(0, 10)]);
    const byKey = await sdk.analytics.getUserActivity({ apiKeyHash: other.hash });
    expect(byKey.data.map((r) => r.date)).toEqual([today()]);
    const byUser = await sdk.analytics.getUserActivity({ userId: acct.userId });
    expect(byUser.data.reduce((n, r) => n + r.requests, 0)).toBe(2);
    const nobody = await sdk.analytics.getUserActivity({ userId: "user_nobody" });
    expect(nobody.data).toEqual([]);
    const split = await sdk.analytics.getUserActivity({ groupBy: "workspace" });
    expect(split.data.every((r) => r.workspaceId === acct.workspaceId)).toBe(true);
  });

  it("is the caller's account's only: account B sees none of A's records", async () => {
    const a = await createAccount();
    const b = await createAccount();
    await record(a, { createdAt: daysAgo(0) });
    expect((await sdkFor(b.managementKey).analytics.getUserActivity()).data).toEqual([]);
    // Naming A's key or workspace from B finds nothing either.
    const byHash = await call(`/activity?api_key_hash=${a.apiKeyHash}`, { key: b.managementKey });
    expect(((await byHash.json()) as { data: unknown[] }).data).toEqual([]);
    const byWs = await call(`/activity?workspace_id=${a.workspaceId}`, { key: b.managementKey });
    expect(byWs.status).toBe(404);
  });

  it("refuses regular keys (403) and bad filters (400)", async () => {
    const acct = await createAccount();
    const regular = await call("/activity", { key: acct.apiKey });
    expect((await errorOf(regular)).code).toBe(403);
    for (const q of [
      "date=2026-13-45",
      "date=yesterday",
      `date=${daysAgo(40).slice(0, 10)}`,
      "group_by=key",
    ]) {
      const res = await call(`/activity?${q}`, { key: acct.managementKey });
      expect(res.status, q).toBe(400);
      await errorOf(res);
    }
  });

  it("reads only days that exist: February 30th is not March 2nd", () => {
    expect(ActivityQuerySchema.safeParse({ date: "2026-02-30" }).success).toBe(false);
    expect(ActivityQuerySchema.safeParse({ date: "2026-11-31" }).success).toBe(false);
    expect(ActivityQuerySchema.safeParse({ date: "2028-02-29" }).success).toBe(true);
  });

  it("starts its window 29 days before today", () => {
    expect(activityWindowStart(new Date("2026-03-01T12:00:00Z"))).toBe("2026-01-31");
  });
});

describe("GET /generations (gateway extension)", () => {
  type Listed = {
    data: Array<{ id: string; status: string; api_key_hash: string; model: string }>;
    next_offset: number | null;
  };
  const list = async (acct: TestAccount, q = "") => {
    const res = await call(`/generations${q}`, { key: acct.managementKey });
    expect(res.status).toBe(200);
    return (await res.json()) as Listed;
  };

  it("lists the account's records newest first, filtered by model, status and key, in pages", async () => {
    const acct = await createAccount();
    const other = await createKey(acct, { name: "other" });
    const oldest = await record(acct, { createdAt: daysAgo(3) });
    const failed = await record(acct, { createdAt: daysAgo(2), status: "failed", costMicros: 0 });
    const embed = await record(acct, {
      createdAt: daysAgo(1),
      model: "sandbox/embed-small",
      keyHash: other.hash,
    });

    expect((await list(acct)).data.map((g) => g.id)).toEqual([embed, failed, oldest]);
    expect((await list(acct, "?model=sandbox/embed-small")).data.map((g) => g.id)).toEqual([embed]);
    expect((await list(acct, "?status=failed")).data.map((g) => [g.id, g.status])).toEqual([
      [failed, "failed"],
    ]);
    // api_key_hash, as /activity names it; key_hash, its first name, still reads.
    for (const name of ["api_key_hash", "key_hash"]) {
      const byKey = await list(acct, `?${name}=${other.hash}`);
      expect(
        byKey.data.map((g) => [g.id, g.api_key_hash]),
        name,
      ).toEqual([[embed, other.hash]]);
    }
    const first = await list(acct, "?limit=2");
    expect(first.data.map((g) => g.id)).toEqual([embed, failed]);
    expect(first.next_offset).toBe(2);
    const second = await list(acct, `?limit=2&offset=${first.next_offset}`);
    expect(second).toMatchObject({ data: [{ id: oldest }], next_offset: null });
  });

  it("never shows another account's records; regular keys get 403 and bad filters 400", async () => {
    const a = await createAccount();
    const b = await createAccount();
    await record(a, { createdAt: daysAgo(0) });
    expect((await list(b)).data).toEqual([]);
    expect((await list(b, `?key_hash=${a.apiKeyHash}`)).data).toEqual([]);
    expect((await call("/generations", { key: a.apiKey })).status).toBe(403);
    const twoKeys = `api_key_hash=${a.apiKeyHash}&key_hash=${"0".repeat(64)}`;
    for (const q of [
      "limit=0",
      "limit=101",
      "status=done",
      "key_hash=xyz",
      "api_key_hash=xyz",
      "offset=-1",
      twoKeys,
    ]) {
      const res = await call(`/generations?${q}`, { key: a.managementKey });
      expect(res.status, q).toBe(400);
    }
  });
});

describe("GET /videos (gateway extension)", () => {
  it("lists the workspace's jobs only", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const db = getDb(env.DB);
    const job = (acct: TestAccount, status: "pending" | "completed") => ({
      id: `gen-vid-1763822400-${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
      accountId: acct.accountId,
      workspaceId: acct.workspaceId,
      keyHash: acct.apiKeyHash,
      model: "sandbox/video-mini",
      provider: "sandbox",
      status,
      region: "global",
    });
    const mine = [job(a, "pending"), job(a, "completed")];
    await db.insert(tables.videoJobs).values([...mine, job(b, "pending")]);
    const res = await call("/videos", { key: a.managementKey });
    const body = (await res.json()) as { data: Array<{ id: string; model: string }> };
    expect(body.data.map((j) => j.id).sort()).toEqual(mine.map((j) => j.id).sort());
    const pending = await call("/videos?status=pending", { key: a.apiKey });
    expect(((await pending.json()) as { data: Array<{ id: string }> }).data.map((j) => j.id)).toEqual([
      mine[0]!.id,
    ]);
    expect((await call("/videos?status=nope", { key: a.apiKey })).status).toBe(400);
  });
});

describe("catalog discovery", () => {
  it("GET /providers lists every provider the catalog routes to", async () => {
    const acct = await createAccount();
    const { data } = await sdkFor(acct.apiKey).providers.list();
    const bySlug = new Map(data.map((p) => [p.slug, p.name]));
    expect(bySlug.get("openai")).toBe("OpenAI");
    expect(bySlug.get("google-ai-studio")).toBe("Google AI Studio");
    expect(bySlug.get("sandbox-backup")).toBe("Sandbox Backup");
  });

  it("GET /models/count counts all models, or those of the named output modalities", async () => {
    const acct = await createAccount();
    const sdk = sdkFor(acct.apiKey);
    const all = (await (await call("/models", { key: acct.apiKey })).json()) as { data: unknown[] };
    expect((await sdk.models.count()).data.count).toBe(all.data.length);
    const video = (await (await call("/videos/models", { key: acct.apiKey })).json()) as { data: unknown[] };
    expect((await sdk.models.count({ outputModalities: "video" })).data.count).toBe(video.data.length);
    expect((await call("/models/count?output_modalities=smell", { key: acct.apiKey })).status).toBe(400);
  });

  it("GET /models/{author}/{slug}/endpoints lists the model's endpoints in catalog order", async () => {
    const acct = await createAccount();
    const { data } = await sdkFor(acct.apiKey).endpoints.list({ author: "openai", slug: "gpt-oss-120b" });
    expect(data.id).toBe("openai/gpt-oss-120b");
    expect(data.endpoints.map((e) => e.tag)).toEqual(["groq", "cerebras", "fireworks", "together"]);
    expect(data.endpoints[0]).toMatchObject({ providerName: "Groq", modelId: "openai/gpt-oss-120b" });
    expect(Number(data.endpoints[0]!.pricing.prompt)).toBeGreaterThan(0);
    const missing = await call("/models/acme/nothing/endpoints", { key: acct.apiKey });
    expect((await errorOf(missing)).code).toBe(404);
  });

  it("GET /model/{author}/{slug} is the model as GET /models lists it (the SDK's models.get)", async () => {
    const acct = await createAccount();
    const sdk = sdkFor(acct.apiKey);
    const { data } = await sdk.models.get({ author: "openai", slug: "gpt-oss-120b" });
    const listed = (await sdk.models.list()).result.data.find((m) => m.id === "openai/gpt-oss-120b");
    expect(data).toEqual(listed);
    expect(data.contextLength).toBeGreaterThan(0);
    const missing = await call("/model/acme/nothing", { key: acct.apiKey });
    expect((await errorOf(missing)).code).toBe(404);
  });

  it("GET /models/user applies the key's guardrails and the deployment's region", async () => {
    const acct = await createAccount();
    await defaultGuardrail(acct, {
      name: "Only Anthropic and the sandbox",
      allowedProviders: ["anthropic", "sandbox"],
    });
    const ids = async (region?: "europe") => {
      const page = await sdkFor(acct.apiKey, region).models.listForUser({ bearer: acct.apiKey });
      return page.result.data.map((m) => m.id);
    };
    const global = await ids();
    expect(global).toContain("anthropic/claude-sonnet-4");
    expect(global).toContain("sandbox/chat-echo");
    expect(global).not.toContain("openai/gpt-5");
    // Anthropic's endpoints serve no European requests.
    const europe = await ids("europe");
    expect(europe).toContain("sandbox/chat-echo");
    expect(europe).not.toContain("anthropic/claude-sonnet-4");
  });
});
