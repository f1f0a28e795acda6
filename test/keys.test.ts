// GET /key and the keys management API, over raw HTTP and through @openrouter/sdk.
import { createExecutionContext, env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import app from "../src/app";
import { getDb, tables } from "../src/db/client";
import { sha256Hex } from "../src/lib/hash";
import { createAccount, createKey } from "./helpers/accounts";
import { BASE, call, errorOf } from "./helpers/http";
import { sdkFor } from "./helpers/sdk";

describe("GET /key", () => {
  it("returns every field of the key information, computed from state", async () => {
    const acct = await createAccount({ creditsUsd: 3 });
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const key = await createKey(acct, {
      allowedDataRegions: ["europe", "global"],
      limitUsd: 12.5,
      limitReset: "monthly",
      includeByokInLimit: true,
      expiresAt,
      isFreeTier: true,
    });
    const res = await call("/key", { key: key.key, region: "europe" });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: Record<string, unknown> };
    expect(data).toMatchObject({
      label: key.label,
      allowed_data_regions: ["europe", "global"],
      creator_user_id: acct.userId,
      expires_at: expiresAt,
      limit: 12.5,
      limit_remaining: 12.5,
      limit_reset: "monthly",
      include_byok_in_limit: true,
      usage: 0,
      usage_daily: 0,
      usage_weekly: 0,
      usage_monthly: 0,
      byok_usage: 0,
      byok_usage_daily: 0,
      byok_usage_weekly: 0,
      byok_usage_monthly: 0,
      is_free_tier: true,
      is_management_key: false,
      is_provisioning_key: false,
      free_model_daily_requests: { limit: 50, remaining: 50, used: 0 },
      workspace_id: acct.workspaceId,
      organization_id: acct.accountId,
    });
    expect(JSON.stringify(data)).not.toContain(key.key);
  });

  it("parses in @openrouter/sdk", async () => {
    const acct = await createAccount();
    const info = await sdkFor(acct.managementKey).apiKeys.getCurrentKeyMetadata();
    expect(info.data.isManagementKey).toBe(true);
    expect(info.data.label).toMatch(/^sk-gw-v1-/);
    expect(info.data.freeModelDailyRequests.limit).toBeGreaterThan(0);
  });
});

describe("keys API", () => {
  it("creates a key whose plaintext is returned once and stored only as a hash", async () => {
    const acct = await createAccount();
    const res = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "ci", limit: 5, limit_reset: "daily", allowed_data_regions: ["us"] },
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { key: string; data: Record<string, unknown> };
    expect(body.key).toMatch(/^sk-gw-v1-[0-9a-f]{64}$/);
    expect(body.data).toMatchObject({
      name: "ci",
      limit: 5,
      limit_remaining: 5,
      limit_reset: "daily",
      allowed_data_regions: ["us"],
      disabled: false,
      workspace_id: acct.workspaceId,
      hash: await sha256Hex(body.key),
    });
    const row = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.hash, body.data.hash as string))
      .get();
    expect(JSON.stringify(row)).not.toContain(body.key.slice(9));
    // The new key works through its allowed region only.
    expect((await call("/key", { key: body.key, region: "us" })).status).toBe(200);
    expect((await call("/key", { key: body.key, region: "global" })).status).toBe(403);
    // Later reads never show the key.
    const got = await call(`/keys/${body.data.hash}`, { key: acct.managementKey });
    expect(await got.text()).not.toContain(body.key);
  });

  it("lists, reads, updates and deletes through @openrouter/sdk", async () => {
    const acct = await createAccount();
    const sdk = sdkFor(acct.managementKey);
    const created = await sdk.apiKeys.create({
      requestBody: { name: "sdk key", limit: 2, limitReset: "weekly" },
    });
    expect(created.key).toMatch(/^sk-gw-v1-/);
    const hash = created.data.hash;

    const listed = await sdk.apiKeys.list();
    expect(listed.data.map((k) => k.hash)).toEqual(expect.arrayContaining([hash, acct.apiKeyHash]));

    const got = await sdk.apiKeys.get({ hash });
    expect(got.data.name).toBe("sdk key");
    expect(got.data.limitReset).toBe("weekly");

    const updated = await sdk.apiKeys.update({
      hash,
      requestBody: { name: "renamed", disabled: true, limit: null },
    });
    expect(updated.data).toMatchObject({
      name: "renamed",
      disabled: true,
      limit: null,
      limitRemaining: null,
    });
    expect((await call("/key", { key: created.key })).status).toBe(401);

    const withoutDisabled = await sdk.apiKeys.list();
    expect(withoutDisabled.data.map((k) => k.hash)).not.toContain(hash);
    const withDisabled = await sdk.apiKeys.list({ includeDisabled: true });
    expect(withDisabled.data.map((k) => k.hash)).toContain(hash);

    const deleted = await sdk.apiKeys.delete({ hash });
    expect(deleted.deleted).toBe(true);
    expect((await call(`/keys/${hash}`, { key: acct.managementKey })).status).toBe(404);
  });

  it("pages the list with offset and an optional limit (1 to 100), each key once", async () => {
    const acct = await createAccount();
    for (let i = 0; i < 3; i++) await createKey(acct, { name: `page ${i}` });
    const page = async (query: string) => {
      const res = await call(`/keys${query}`, { key: acct.managementKey });
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { data: Array<{ hash: string }> }).data.map((k) => k.hash);
    };
    const all = await page("");
    expect(all).toHaveLength(5);
    const walked: string[] = [];
    for (let offset = 0; offset < 6; offset += 2) walked.push(...(await page(`?limit=2&offset=${offset}`)));
    expect(walked).toEqual(all);
    for (const bad of ["?limit=0", "?limit=101", "?limit=x"]) {
      expect((await call(`/keys${bad}`, { key: acct.managementKey })).status, bad).toBe(400);
    }
    // A parameter given twice is said to be so (the validator read the two as a list: "received NaN").
    const twice = await call("/keys?limit=1&offset=0&limit=50", { key: acct.managementKey });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: { message: string } }).error.message).toBe(
      "Query parameter 'limit' is given more than once",
    );
  });

  it("updates allowed_data_regions and expiry", async () => {
    const acct = await createAccount();
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const res = await call(`/keys/${acct.apiKeyHash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { allowed_data_regions: ["europe"], expires_at: expires },
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: Record<string, unknown> };
    expect(data).toMatchObject({ allowed_data_regions: ["europe"], expires_at: expires });
    expect((await call("/key", { key: acct.apiKey })).status).toBe(403);
    expect((await call("/key", { key: acct.apiKey, region: "europe" })).status).toBe(200);
  });

  it.each([
    ["an empty name", { name: "" }],
    ["a negative limit", { name: "x", limit: -1 }],
    ["an unknown reset", { name: "x", limit_reset: "hourly" }],
    ["an expiry in the past", { name: "x", expires_at: "2001-01-01T00:00:00Z" }],
    ["a malformed expiry", { name: "x", expires_at: "tomorrow" }],
    ["an empty region set", { name: "x", allowed_data_regions: [] }],
    ["a repeated region", { name: "x", allowed_data_regions: ["us", "us"] }],
  ])("rejects %s with 400 and creates nothing", async (_, body) => {
    const acct = await createAccount();
    const res = await call("/keys", { key: acct.managementKey, method: "POST", body });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("body.");
    const rows = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.accountId, acct.accountId))
      .all();
    expect(rows).toHaveLength(2);
  });

  // Raw JSON: 1e999 parses to Infinity, which JSON.stringify cannot write.
  it.each([
    ["below one micro-dollar", '{"name":"x","limit":0.0000005}', /smallest limit is 0\.000001/],
    ["a tiny positive", '{"name":"x","limit":1e-12}', /smallest limit is 0\.000001/],
    ["between micro-dollars", '{"name":"x","limit":0.0000015}', /whole micro-dollars/],
    ["above the maximum", '{"name":"x","limit":1000000000.01}', /largest limit is 1000000000 USD/],
    ["a huge finite", '{"name":"x","limit":1e300}', /largest limit/],
    ["an infinite", '{"name":"x","limit":1e999}', /body\.limit/],
  ])("rejects a limit %s on create with 400 and creates nothing", async (_, body, message) => {
    const acct = await createAccount();
    const res = await call("/keys", { key: acct.managementKey, method: "POST", body });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(message);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.accountId, acct.accountId))
      .all();
    expect(rows).toHaveLength(2);
  });

  it.each([
    ["below one micro-dollar", '{"limit":0.0000009}', /smallest limit is 0\.000001/],
    ["above the maximum", '{"limit":2000000000}', /largest limit/],
    ["an infinite", '{"limit":-1e999}', /body\.limit/],
  ])("rejects a limit %s on update with 400 and leaves the key unchanged", async (_, body, message) => {
    const acct = await createAccount();
    const key = await createKey(acct, { limitUsd: 7 });
    const res = await call(`/keys/${key.hash}`, { key: acct.managementKey, method: "PATCH", body });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(message);
    const row = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.hash, key.hash))
      .get();
    expect(row?.limitMicros).toBe(7_000_000);
  });

  it("accepts the smallest and largest limits, 0 as a cap and null as none", async () => {
    const acct = await createAccount();
    for (const limit of [0.000001, 1_000_000_000, 0, null]) {
      const res = await call("/keys", {
        key: acct.managementKey,
        method: "POST",
        body: { name: "x", limit },
      });
      expect(res.status, String(limit)).toBe(201);
      expect(((await res.json()) as { data: { limit: number | null } }).data.limit).toBe(limit);
    }
    const key = await createKey(acct, { limitUsd: 7 });
    for (const [limit, micros] of [
      [0.000001, 1],
      [0, 0],
      [null, null],
    ] as const) {
      const res = await call(`/keys/${key.hash}`, {
        key: acct.managementKey,
        method: "PATCH",
        body: { limit },
      });
      expect(res.status, String(limit)).toBe(200);
      const row = await getDb(env.DB)
        .select()
        .from(tables.apiKeys)
        .where(eq(tables.apiKeys.hash, key.hash))
        .get();
      expect(row?.limitMicros).toBe(micros);
    }
  });

  it("refuses a name with an unpaired surrogate (D1 would store it changed) and keeps one with a pair", async () => {
    const acct = await createAccount();
    const keys = async () =>
      (await getDb(env.DB).select().from(tables.apiKeys).where(eq(tables.apiKeys.accountId, acct.accountId)))
        .length;
    const before = await keys();
    // JSON.stringify writes the lone surrogate as the escape "\ud800", as a client's JSON would.
    const lone = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "bad \ud800 name" },
    });
    expect(lone.status).toBe(400);
    expect((await errorOf(lone)).message).toMatch(/unpaired surrogate/);
    expect(await keys()).toBe(before);
    const renamed = await call(`/keys/${acct.apiKeyHash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { name: "\udfff" },
    });
    expect(renamed.status).toBe(400);
    const paired = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "key \u{1F511}" },
    });
    expect(paired.status).toBe(201);
    const { data } = (await paired.json()) as { data: { hash: string } };
    const read = (await (await call(`/keys/${data.hash}`, { key: acct.managementKey })).json()) as {
      data: { name: string };
    };
    expect(read.data.name).toBe("key \u{1F511}");
  });

  it("rejects an empty update and an unknown workspace", async () => {
    const acct = await createAccount();
    const empty = await call(`/keys/${acct.apiKeyHash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: {},
    });
    expect(empty.status).toBe(400);
    const ws = await call("/keys", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "x", workspace_id: crypto.randomUUID() },
    });
    expect(ws.status).toBe(404);
    const badHash = await call("/keys/not-a-hash", { key: acct.managementKey });
    expect(badHash.status).toBe(400);
  });

  it("answers 404 for another account's key on every method and changes nothing", async () => {
    const mine = await createAccount();
    const theirs = await createAccount();
    for (const method of ["GET", "PATCH", "DELETE"]) {
      const res = await call(`/keys/${theirs.apiKeyHash}`, {
        key: mine.managementKey,
        method,
        body: method === "PATCH" ? { disabled: true } : undefined,
      });
      expect(res.status, method).toBe(404);
      await errorOf(res);
    }
    const list = (await call("/keys", { key: mine.managementKey }).then((r) => r.json())) as {
      data: { hash: string }[];
    };
    expect(list.data.map((k) => k.hash)).not.toContain(theirs.apiKeyHash);
    expect((await call("/key", { key: theirs.apiKey })).status).toBe(200);
  });
});

describe("a key the operator revoked (npm run admin -- keys revoke)", () => {
  it("stays revoked: enabling it through the keys API is a 409 and changes nothing", async () => {
    const acct = await createAccount();
    const other = await createKey(acct, { isManagement: true, name: "to revoke" });
    // What the CLI writes: the key disabled and the revocation in admin_audit.
    const db = getDb(env.DB);
    await db.update(tables.apiKeys).set({ disabled: true }).where(eq(tables.apiKeys.hash, other.hash));
    await db.insert(tables.adminAudit).values({
      id: crypto.randomUUID(),
      action: "management_key.revoke",
      accountId: acct.accountId,
      actor: "operator",
      reason: "left the team",
      detail: { hash: other.hash },
    });
    const enable = await call(`/keys/${other.hash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { disabled: false },
    });
    expect(enable.status).toBe(409);
    expect((await errorOf(enable)).message).toMatch(/revoked by the operator/);
    expect((await call("/key", { key: other.key })).status).toBe(401);
    // Other edits of it, and other keys, are not affected.
    const rename = await call(`/keys/${other.hash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { name: "revoked" },
    });
    expect(rename.status).toBe(200);
    const plain = await createKey(acct, { disabled: true });
    const back = await call(`/keys/${plain.hash}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { disabled: false },
    });
    expect(back.status).toBe(200);
  });
});

describe("the account's last management key", () => {
  it("cannot be disabled or deleted (409, unchanged); with another one enabled it can", async () => {
    const acct = await createAccount();
    const mine = await sha256Hex(acct.managementKey);
    const disable = await call(`/keys/${mine}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { disabled: true },
    });
    expect(disable.status).toBe(409);
    expect((await errorOf(disable)).message).toContain("last enabled management key");
    const remove = await call(`/keys/${mine}`, { key: acct.managementKey, method: "DELETE" });
    expect(remove.status).toBe(409);
    // Unchanged: the key still manages, and other edits of it still apply.
    const renamed = await call(`/keys/${mine}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { name: "renamed" },
    });
    expect(renamed.status).toBe(200);
    // An API key is not a management key: it can always be disabled and deleted.
    const api = await call(`/keys/${acct.apiKeyHash}`, { key: acct.managementKey, method: "DELETE" });
    expect(api.status).toBe(200);

    const second = await createKey(acct, { isManagement: true, name: "second" });
    expect((await call(`/keys/${mine}`, { key: second.key, method: "DELETE" })).status).toBe(200);
    expect((await call("/keys", { key: acct.managementKey })).status).toBe(401);
    // Now `second` is the last one.
    expect((await call(`/keys/${second.hash}`, { key: second.key, method: "DELETE" })).status).toBe(409);
  });

  it("cannot be given an expiry (409, unchanged): it would lock the account out later; removing one is fine", async () => {
    const acct = await createAccount();
    const mine = await sha256Hex(acct.managementKey);
    const soon = new Date(Date.now() + 5_000).toISOString();
    const expire = await call(`/keys/${mine}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { expires_at: soon, name: "expiring" },
    });
    expect(expire.status).toBe(409);
    expect((await errorOf(expire)).message).toContain("setting an expiry on it");
    const [row] = await getDb(env.DB).select().from(tables.apiKeys).where(eq(tables.apiKeys.hash, mine));
    expect(row).toMatchObject({ expiresAt: null, name: expect.not.stringMatching("expiring") });
    const cleared = await call(`/keys/${mine}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { expires_at: null },
    });
    expect(cleared.status).toBe(200);
    // With another management key enabled, it may expire; then the other may not (both would lapse).
    const second = await createKey(acct, { isManagement: true, name: "second" });
    const later = await call(`/keys/${mine}`, {
      key: acct.managementKey,
      method: "PATCH",
      body: { expires_at: soon },
    });
    expect(later.status).toBe(200);
    const both = await call(`/keys/${second.hash}`, {
      key: second.key,
      method: "PATCH",
      body: { expires_at: soon },
    });
    expect(both.status).toBe(409);
    // Nor disabled: the one left would expire.
    const off = await call(`/keys/${second.hash}`, {
      key: second.key,
      method: "PATCH",
      body: { disabled: true },
    });
    expect(off.status).toBe(409);
  });

  it("of two removed at once, one stays", async () => {
    const acct = await createAccount();
    const first = { key: acct.managementKey, hash: await sha256Hex(acct.managementKey) };
    const second = await createKey(acct, { isManagement: true, name: "second" });
    const statuses = await Promise.all([
      call(`/keys/${first.hash}`, { key: first.key, method: "DELETE" }).then((r) => r.status),
      call(`/keys/${second.hash}`, { key: second.key, method: "PATCH", body: { disabled: true } }).then(
        (r) => r.status,
      ),
    ]);
    expect(statuses.sort()).toEqual([200, 409]);
    const left = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.accountId, acct.accountId));
    expect(left.filter((k) => k.isManagement && !k.disabled)).toHaveLength(1);
  });
});

describe("PATCH /keys/{hash} with the ledger unreachable", () => {
  it("is a 503 that changed nothing (the answer's usage comes from the ledger, read before the change)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "log").mockImplementation(() => {});
    const acct = await createAccount();
    const lost = new Proxy({}, { get: () => () => Promise.reject(new Error("Network connection lost.")) });
    const ledger = { ...env.LEDGER, get: () => lost, idFromName: (n: string) => env.LEDGER.idFromName(n) };
    const res = await app.fetch(
      new Request(`${BASE}/keys/${acct.apiKeyHash}`, {
        method: "PATCH",
        headers: { Authorization: `Bearer ${acct.managementKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({ name: "patched-while-down", disabled: true }),
      }),
      { ...env, LEDGER: ledger as unknown as typeof env.LEDGER },
      createExecutionContext(),
    );
    expect(res.status).toBe(503);
    const [row] = await getDb(env.DB)
      .select()
      .from(tables.apiKeys)
      .where(eq(tables.apiKeys.hash, acct.apiKeyHash));
    expect(row).toMatchObject({ disabled: false });
    expect(row!.name).not.toBe("patched-while-down");
  });
});
