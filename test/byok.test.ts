// BYOK API: stored keys are sealed and masked, listing rules, bad input, and isolation between accounts.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { decryptByokKey } from "../src/lib/byok-crypto";
import { createAccount, createKey } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor as sdk } from "./helpers/sdk";

const upstreamKey = () => `sk-test-${crypto.randomUUID().replaceAll("-", "")}WXYZ`;
const rowOf = (id: string) =>
  getDb(env.DB).select().from(tables.byokCredentials).where(eq(tables.byokCredentials.id, id)).get();

type Wire = Record<string, unknown> & { id: string };
async function create(key: string, body: Record<string, unknown>): Promise<Wire> {
  const res = await call("/byok", {
    method: "POST",
    key,
    body: { provider: "openai", key: upstreamKey(), ...body },
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: Wire }).data;
}
const list = async (key: string, query = "") => {
  const res = await call(`/byok${query}`, { key });
  expect(res.status).toBe(200);
  return (await res.json()) as { data: Wire[]; total_count: number };
};

describe("BYOK through the SDK", () => {
  it("creates, reads, lists, updates and deletes without ever returning the key", async () => {
    const acct = await createAccount();
    const client = sdk(acct.managementKey);
    const secret = upstreamKey();
    const created = await client.byok.create({
      createBYOKKeyRequest: { provider: "openai", key: secret, name: "Prod OpenAI", isFallback: true },
    });
    const c = created.data;
    expect(c).toMatchObject({
      provider: "openai",
      name: "Prod OpenAI",
      label: "sk-...WXYZ",
      workspaceId: acct.workspaceId,
      isFallback: true,
      isByokOnly: false,
      disabled: false,
      sortOrder: 0,
      allowedModels: null,
      declaredZdr: null,
    });
    expect((await client.byok.get({ id: c.id })).data.label).toBe("sk-...WXYZ");
    const listed = await client.byok.list({});
    expect(listed.result.totalCount).toBe(1);

    const replacement = `sk-new-${crypto.randomUUID().replaceAll("-", "")}ABCD`;
    const updated = await client.byok.update({
      id: c.id,
      updateBYOKKeyRequest: {
        key: replacement,
        disabled: true,
        allowedModels: ["openai/text-embedding-3-small"],
      },
    });
    expect(updated.data).toMatchObject({ label: "sk-...ABCD", disabled: true, name: "Prod OpenAI" });
    expect(await decryptByokKey(env, (await rowOf(c.id))!)).toBe(replacement);

    // The plaintext never appears in any response body.
    for (const path of [`/byok/${c.id}`, "/byok", `/byok?provider=openai`]) {
      const text = await (await call(path, { key: acct.managementKey })).text();
      expect(text).not.toContain(secret.slice(8, -4));
      expect(text).not.toContain(replacement.slice(7, -4));
    }
    expect((await client.byok.delete({ id: c.id })).deleted).toBe(true);
    expect((await call(`/byok/${c.id}`, { key: acct.managementKey })).status).toBe(404);
  });

  it("stores only ciphertext bound to the row", async () => {
    const acct = await createAccount();
    const secret = upstreamKey();
    const a = await create(acct.managementKey, { key: secret });
    const b = await create(acct.managementKey, { provider: "cohere" });
    const rowA = (await rowOf(a.id))!;
    expect(rowA.ciphertext).not.toContain(secret);
    expect(rowA.keyVersion).toBe("1");
    expect(await decryptByokKey(env, rowA)).toBe(secret);
    // Copy A's ciphertext onto B's row: it no longer opens, so B's key can never be used.
    await getDb(env.DB)
      .update(tables.byokCredentials)
      .set({ ciphertext: rowA.ciphertext, iv: rowA.iv, keyVersion: rowA.keyVersion })
      .where(eq(tables.byokCredentials.id, b.id));
    expect(await decryptByokKey(env, (await rowOf(b.id))!)).toBeNull();
  });
});

describe("GET /byok", () => {
  it("orders by sort_order then created_at, pages, counts and filters by provider", async () => {
    const acct = await createAccount();
    const k = acct.managementKey;
    const third = await create(k, { sort_order: 5, name: "third" });
    const first = await create(k, { sort_order: -1, name: "first" });
    const second = await create(k, { sort_order: 5, provider: "cohere", name: "second-later" });
    const all = await list(k);
    expect(all.total_count).toBe(3);
    expect(all.data.map((d) => d.id)).toEqual([first.id, third.id, second.id]);
    const page = await list(k, "?offset=1&limit=1");
    expect(page).toMatchObject({ total_count: 3, data: [{ id: third.id }] });
    const cohere = await list(k, "?provider=cohere");
    expect(cohere).toMatchObject({ total_count: 1, data: [{ id: second.id }] });
  });

  it("rejects bad paging and unknown providers", async () => {
    const acct = await createAccount();
    for (const query of ["?limit=0", "?limit=101", "?offset=-1", "?limit=abc", "?provider=acme-ai"]) {
      const res = await call(`/byok${query}`, { key: acct.managementKey });
      expect(res.status, query).toBe(400);
      await errorOf(res);
    }
  });

  it("scopes to a workspace of the caller's account", async () => {
    const a = await createAccount();
    const b = await create((await createAccount()).managementKey, {});
    expect(b.workspace_id).not.toBe(a.workspaceId);
    const res = await call(`/byok?workspace_id=${b.workspace_id}`, { key: a.managementKey });
    expect(res.status).toBe(404);
    expect((await list(a.managementKey, `?workspace_id=${a.workspaceId}`)).total_count).toBe(0);
  });

  it("asks for workspace_id once the default workspace is deleted", async () => {
    const acct = await createAccount();
    await create(acct.managementKey, {});
    await getDb(env.DB)
      .update(tables.accounts)
      .set({ defaultWorkspaceId: null })
      .where(eq(tables.accounts.id, acct.accountId));
    const { invalidateAuthCache } = await import("../src/middleware/auth");
    invalidateAuthCache();
    const res = await call("/byok", { key: acct.managementKey });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("workspace_id");
    expect((await list(acct.managementKey, `?workspace_id=${acct.workspaceId}`)).total_count).toBe(1);
  });

  it("needs a management key", async () => {
    const acct = await createAccount();
    const c = await create(acct.managementKey, {});
    for (const [method, path, body] of [
      ["GET", "/byok"],
      ["POST", "/byok", { provider: "openai", key: upstreamKey() }],
      ["GET", `/byok/${c.id}`],
      ["PATCH", `/byok/${c.id}`, { disabled: true }],
      ["DELETE", `/byok/${c.id}`],
    ] as const) {
      const res = await call(path, { method, key: acct.apiKey, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await errorOf(res)).message).toContain("management keys");
    }
    expect((await list(acct.managementKey)).data).toEqual([c]);
  });
});

describe("BYOK bad input changes nothing", () => {
  const cases: Array<[string, Record<string, unknown>, string?]> = [
    ["missing key", { key: undefined }],
    ["unknown provider", { provider: "acme-ai" }, "acme-ai"],
    ["key with spaces", { key: "sk-abc def ghi jkl" }],
    ["key too short", { key: "sk-1" }],
    ["empty allowed_models", { allowed_models: [] }, "null for no restriction"],
    ["unknown model", { allowed_models: ["nobody/nothing"] }, "nobody/nothing"],
    ["foreign key hash", { allowed_api_key_hashes: ["f".repeat(64)] }, "not keys of this account"],
    ["malformed key hash", { allowed_api_key_hashes: ["abc"] }],
    ["unknown user", { allowed_user_ids: ["user_nobody"] }, "not users of this account"],
    ["non-integer sort_order", { sort_order: 1.5 }],
    ["unknown field", { declaredZdr: true }],
  ];

  it.each(cases)("POST with %s -> 400", async (_name, body, message) => {
    const acct = await createAccount();
    const res = await call("/byok", {
      method: "POST",
      key: acct.managementKey,
      body: { provider: "openai", key: upstreamKey(), ...body },
    });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    if (message) expect(error.message).toContain(message);
    expect((await list(acct.managementKey)).total_count).toBe(0);
  });

  it.each([
    ["empty body", {}],
    ["provider change", { provider: "cohere" }],
    ["empty allowed_user_ids", { allowed_user_ids: [] }],
    ["bad key", { key: "has space inside" }],
  ])("PATCH with %s -> 400", async (_name, body) => {
    const acct = await createAccount();
    const c = await create(acct.managementKey, {});
    const res = await call(`/byok/${c.id}`, { method: "PATCH", key: acct.managementKey, body });
    expect(res.status).toBe(400);
    await errorOf(res);
    expect((await list(acct.managementKey)).data).toEqual([c]);
  });

  it("accepts restrictions that name the account's own keys, users and models", async () => {
    const acct = await createAccount();
    const other = await createKey(acct, { name: "other" });
    const c = await create(acct.managementKey, {
      allowed_api_key_hashes: [other.hash],
      allowed_user_ids: [acct.userId],
      allowed_models: ["sandbox/embed-small-20260101"],
      declared_zdr: true,
    });
    expect(c).toMatchObject({
      allowed_api_key_hashes: [other.hash],
      allowed_user_ids: [acct.userId],
      allowed_models: ["sandbox/embed-small"],
      declared_zdr: true,
    });
    const cleared = await call(`/byok/${c.id}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { allowed_api_key_hashes: null, allowed_user_ids: null, allowed_models: null, name: null },
    });
    expect(((await cleared.json()) as { data: Wire }).data).toMatchObject({
      allowed_api_key_hashes: null,
      allowed_user_ids: null,
      allowed_models: null,
      name: "openai",
    });
  });
});

describe("isolation between accounts", () => {
  it("answers 404 on another account's credential for every method and changes nothing", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const c = await create(a.managementKey, {});
    const before = await rowOf(c.id);
    for (const [method, body] of [
      ["GET"],
      ["PATCH", { disabled: true, key: upstreamKey() }],
      ["DELETE"],
    ] as const) {
      const res = await call(`/byok/${c.id}`, { method, key: b.managementKey, body });
      expect(res.status, method).toBe(404);
      expect((await errorOf(res)).message).toBe("BYOK credential not found");
    }
    const posted = await call("/byok", {
      method: "POST",
      key: b.managementKey,
      body: { provider: "openai", key: upstreamKey(), workspace_id: a.workspaceId },
    });
    expect(posted.status).toBe(404);
    expect(await rowOf(c.id)).toEqual(before);
    expect((await list(b.managementKey)).total_count).toBe(0);
  });
});
