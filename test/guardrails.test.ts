// Guardrails API: create/read/update/delete through the SDK, PATCH semantics, materialising the default, concurrency.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { assignKeys, assignMembers } from "../src/db/guardrails";
import { createAccount, createKey } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor as sdk } from "./helpers/sdk";

type Wire = Record<string, unknown> & { id: string; version: number; name: string };

async function createGuardrail(key: string, body: Record<string, unknown> = {}): Promise<Wire> {
  const res = await call("/guardrails", { method: "POST", key, body: { name: "g", ...body } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: Wire }).data;
}
async function getGuardrail(key: string, id: string): Promise<Wire> {
  const res = await call(`/guardrails/${id}`, { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Wire }).data;
}
const patch = (key: string, id: string, body: unknown, headers?: Record<string, string>) =>
  call(`/guardrails/${id}`, { method: "PATCH", key, body, headers });

describe("guardrails through the SDK", () => {
  it("creates, reads, lists, updates and deletes", async () => {
    const acct = await createAccount();
    const client = sdk(acct.managementKey);
    const created = await client.guardrails.create({
      createGuardrailRequest: {
        name: "Team budget",
        description: "for the team",
        limitUsd: 25,
        resetInterval: "monthly",
        allowedDataRegions: ["europe", "global"],
        allowedProviders: ["openai"],
        contentFilterBuiltins: [{ slug: "email", action: "redact" }],
        contentFilters: [{ pattern: "ticket-\\d+", action: "flag", label: "[TICKET]" }],
      },
    });
    const g = created.data;
    expect(g).toMatchObject({
      name: "Team budget",
      limitUsd: 25,
      resetInterval: "monthly",
      workspaceId: acct.workspaceId,
      allowedDataRegions: ["europe", "global"],
      includeByokInBudgets: false,
      contentFilterBuiltins: [{ slug: "email", action: "redact", label: "[EMAIL]" }],
      contentFilters: [{ pattern: "ticket-\\d+", action: "flag", label: "[TICKET]" }],
    });
    expect((await client.guardrails.get({ id: g.id })).data.name).toBe("Team budget");
    const listed = await client.guardrails.list({});
    expect(listed.result.totalCount).toBe(1);

    const updated = await client.guardrails.update({
      id: g.id,
      updateGuardrailRequest: { description: null, allowedProviders: ["cohere", "sandbox"] },
    });
    expect(updated.data).toMatchObject({
      name: "Team budget",
      description: null,
      limitUsd: 25,
      allowedProviders: ["cohere", "sandbox"],
    });
    // Display names and any case are read as the slugs the listings show beside them.
    const named = await client.guardrails.update({
      id: g.id,
      updateGuardrailRequest: { allowedProviders: ["Cohere", "SANDBOX", "Google AI Studio"] },
    });
    expect(named.data.allowedProviders).toEqual(["cohere", "sandbox", "google-ai-studio"]);
    expect((await client.guardrails.delete({ id: g.id })).deleted).toBe(true);
    expect((await call(`/guardrails/${g.id}`, { key: acct.managementKey })).status).toBe(404);
  });
});

describe("PATCH /guardrails/{id}", () => {
  it("leaves omitted fields, clears nulls and replaces collections", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey, {
      description: "keep",
      limit_usd: 3,
      ignored_models: ["sandbox/embed-failover", "cohere/embed-v4.0"],
      content_filter_builtins: [{ slug: "ssn", action: "block" }],
    });
    const res = await patch(acct.managementKey, g.id, {
      limit_usd: null,
      ignored_models: ["openai/text-embedding-3-small"],
      content_filter_builtins: null,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("ETag")).toBe(`"${g.version + 1}"`);
    const after = ((await res.json()) as { data: Wire }).data;
    expect(after).toMatchObject({
      description: "keep",
      limit_usd: null,
      ignored_models: ["openai/text-embedding-3-small"],
      content_filter_builtins: null,
      version: g.version + 1,
    });
  });

  it("copies the deprecated enforce_zdr into each per-maker field the request does not set", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const res = await patch(acct.managementKey, g.id, { enforce_zdr: true, enforce_zdr_vendor_b: false });
    expect(((await res.json()) as { data: Wire }).data).toMatchObject({
      enforce_zdr: true,
      enforce_zdr_vendor_a: true,
      enforce_zdr_vendor_b: false,
      enforce_zdr_vendor_c: true,
      enforce_zdr_vendor_d: true,
      enforce_zdr_other: true,
    });
  });

  it("normalises canonical model slugs to catalog slugs", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const res = await patch(acct.managementKey, g.id, {
      allowed_models: ["sandbox/embed-small-20260101", "openai/text-embedding-3-small"],
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: Wire }).data.allowed_models).toEqual([
      "sandbox/embed-small",
      "openai/text-embedding-3-small",
    ]);
  });

  const bad: Array<[string, Record<string, unknown>, string?]> = [
    ["empty name", { name: "" }],
    ["name over 200", { name: "n".repeat(201) }, "200"],
    ["description over 1000", { description: "d".repeat(1001) }, "1000"],
    ["unknown reset interval", { reset_interval: "hourly" }],
    ["empty data regions", { allowed_data_regions: [] }, "at least one"],
    ["unknown data region", { allowed_data_regions: ["mars"] }],
    ["repeated data region", { allowed_data_regions: ["us", "us"] }],
    ["empty allowed_models", { allowed_models: [] }, "at least one model"],
    ["empty ignored_providers", { ignored_providers: [] }, "at least one provider"],
    ["unknown model", { allowed_models: ["nobody/nothing"] }, "nobody/nothing"],
    ["unknown provider", { ignored_providers: ["acme-ai"] }, "acme-ai"],
    ["negative limit", { limit_usd: -1 }],
    ["limit under one micro-dollar", { limit_usd: 1e-9 }, "smallest limit is 0.000001"],
    ["limit between micro-dollars", { limit_usd: 0.0000015 }, "whole micro-dollars"],
    ["non-boolean flag", { include_byok_in_budgets: "yes" }],
    ["null for a boolean", { enable_free_model_training: null }],
    ["unknown built-in slug", { content_filter_builtins: [{ slug: "passport", action: "block" }] }, "slug"],
    ["unknown action", { content_filter_builtins: [{ slug: "email", action: "delete" }] }],
    [
      "repeated built-in",
      {
        content_filter_builtins: [
          { slug: "email", action: "block" },
          { slug: "email", action: "flag" },
        ],
      },
    ],
    [
      "backreference (no linear-time engine runs it)",
      { content_filters: [{ pattern: "(a)\\1", action: "block" }] },
      "backreferences are not supported",
    ],
    [
      "lookahead",
      { content_filters: [{ pattern: "a(?=b)", action: "flag" }] },
      "lookahead assertions are not supported",
    ],
    ["over-long pattern", { content_filters: [{ pattern: "a".repeat(513), action: "flag" }] }, "512"],
    [
      "invalid regex",
      { content_filters: [{ pattern: "([a-z", action: "flag" }] },
      "not a valid regular expression",
    ],
    ["unknown field", { enforce_zdr_openai: true }],
  ];

  it.each(bad)("%s -> 400, nothing changed", async (_name, body, message) => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const res = await patch(acct.managementKey, g.id, body);
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    if (message) expect(error.message).toContain(message);
    expect(await getGuardrail(acct.managementKey, g.id)).toEqual(g);
  });

  it("needs a management key", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    for (const [path, method] of [
      [`/guardrails/${g.id}`, "PATCH"],
      [`/guardrails/${g.id}`, "GET"],
      ["/guardrails", "GET"],
      [`/guardrails/${g.id}`, "DELETE"],
    ] as const) {
      const res = await call(path, {
        method,
        key: acct.apiKey,
        body: method === "PATCH" ? { name: "x" } : undefined,
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await errorOf(res)).message).toContain("management keys");
    }
    expect(await getGuardrail(acct.managementKey, g.id)).toEqual(g);
  });

  it("rejects a stale If-Match with 409 and changes nothing", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const ok = await patch(acct.managementKey, g.id, { name: "first" }, { "If-Match": `"${g.version}"` });
    expect(ok.status).toBe(200);
    const stale = await patch(acct.managementKey, g.id, { name: "second" }, { "If-Match": `"${g.version}"` });
    expect(stale.status).toBe(409);
    await errorOf(stale);
    expect((await getGuardrail(acct.managementKey, g.id)).name).toBe("first");
    expect((await patch(acct.managementKey, g.id, { name: "x" }, { "If-Match": "soon" })).status).toBe(400);
  });

  it("If-Match: * applies to whatever version exists, and does not materialise an unconfigured default", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const any = await patch(acct.managementKey, g.id, { name: "any version" }, { "If-Match": "*" });
    expect(any.status).toBe(200);
    expect((await getGuardrail(acct.managementKey, g.id)).name).toBe("any version");
    const unset = await patch(
      acct.managementKey,
      acct.defaultGuardrailId,
      { name: "x" },
      { "If-Match": "*" },
    );
    expect(unset.status).toBe(409);
    expect((await errorOf(unset)).message).toMatch(/not configured/);
    // A weak tag never matches (strong comparison): not even version 0 of the unconfigured default.
    const weak = await patch(
      acct.managementKey,
      acct.defaultGuardrailId,
      { name: "x" },
      { "If-Match": 'W/"0"' },
    );
    expect(weak.status).toBe(409);
    expect((await call(`/guardrails/${acct.defaultGuardrailId}`, { key: acct.managementKey })).status).toBe(
      404,
    );
  });

  it("never interleaves the fields of concurrent updates", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const n = 10;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        patch(acct.managementKey, g.id, { name: `name-${i}`, description: `desc-${i}`, limit_usd: i }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const final = await getGuardrail(acct.managementKey, g.id);
    const i = Number(final.name.slice("name-".length));
    expect(final.description).toBe(`desc-${i}`);
    expect(final.limit_usd).toBe(i);
    expect(final.version).toBe(g.version + n);
  });

  it("materialises the unconfigured workspace default with the sent fields, and it applies at once", async () => {
    const acct = await createAccount();
    const before = await call(`/guardrails/${acct.defaultGuardrailId}`, { key: acct.managementKey });
    expect(before.status).toBe(404);
    expect((await errorOf(before)).message).toContain("not been configured");
    expect((await call("/key", { key: acct.apiKey, region: "us" })).status).toBe(200);

    const res = await sdk(acct.managementKey).guardrails.update({
      id: acct.defaultGuardrailId,
      updateGuardrailRequest: { allowedDataRegions: ["europe"] },
    });
    expect(res.data).toMatchObject({
      id: acct.defaultGuardrailId,
      workspaceId: acct.workspaceId,
      allowedDataRegions: ["europe"],
    });
    expect((await call("/key", { key: acct.apiKey, region: "us" })).status).toBe(403);
    expect((await call("/key", { key: acct.apiKey, region: "europe" })).status).toBe(200);
    // The default binds the management key too: a second PATCH must arrive through europe.
    expect((await patch(acct.managementKey, acct.defaultGuardrailId, { name: "Renamed" })).status).toBe(403);
    const again = await call(`/guardrails/${acct.defaultGuardrailId}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { name: "Renamed" },
      region: "europe",
    });
    expect(((await again.json()) as { data: Wire }).data).toMatchObject({
      name: "Renamed",
      allowed_data_regions: ["europe"],
    });
  });

  it("answers 404 for an unknown id without creating anything", async () => {
    const acct = await createAccount();
    const id = crypto.randomUUID();
    expect((await patch(acct.managementKey, id, { name: "x" })).status).toBe(404);
    expect((await call(`/guardrails/${id}`, { key: acct.managementKey })).status).toBe(404);
  });
});

describe("POST /guardrails and GET /guardrails reject bad input", () => {
  it.each([
    ["no name", {}],
    ["blank name", { name: "   " }],
    ["empty regions", { name: "g", allowed_data_regions: [] }],
    ["unsafe pattern", { name: "g", content_filters: [{ pattern: "(\\w+\\s?)*$", action: "block" }] }],
    ["unknown provider", { name: "g", allowed_providers: ["acme-ai"] }],
  ])("POST with %s -> 400, nothing created", async (_name, body) => {
    const acct = await createAccount();
    const res = await call("/guardrails", { method: "POST", key: acct.managementKey, body });
    expect(res.status).toBe(400);
    await errorOf(res);
    expect((await sdk(acct.managementKey).guardrails.list({})).result.totalCount).toBe(0);
  });

  it("rejects bad paging and foreign workspaces on the list", async () => {
    const a = await createAccount();
    const b = await createAccount();
    for (const query of ["?limit=0", "?limit=101", "?offset=-1"]) {
      expect((await call(`/guardrails${query}`, { key: a.managementKey })).status, query).toBe(400);
    }
    expect((await call(`/guardrails?workspace_id=${b.workspaceId}`, { key: a.managementKey })).status).toBe(
      404,
    );
    expect((await call("/guardrails", { method: "POST", key: a.managementKey })).status).toBe(400);
  });
});

describe("assignments", () => {
  it("assigns and unassigns keys and members, and the assignment takes effect", async () => {
    const acct = await createAccount();
    // Europe: once the member (creator of every key here) is assigned, the management key is bound too.
    const client = sdk(acct.managementKey, "europe");
    const g = await createGuardrail(acct.managementKey, { allowed_data_regions: ["europe"] });
    const other = await createKey(acct, { name: "other" });

    const assigned = await client.guardrails.bulkAssignKeys({
      id: g.id,
      bulkAssignKeysRequest: { keyHashes: [acct.apiKeyHash, acct.apiKeyHash] },
    });
    expect(assigned.assignedCount).toBe(1);
    expect((await call("/key", { key: acct.apiKey })).status).toBe(403);
    expect((await call("/key", { key: other.key })).status).toBe(200);

    const again = await client.guardrails.bulkAssignKeys({
      id: g.id,
      bulkAssignKeysRequest: { keyHashes: [acct.apiKeyHash, other.hash] },
    });
    expect(again.assignedCount).toBe(1);
    const listed = await client.guardrails.listGuardrailKeyAssignments({ id: g.id });
    expect(listed.result.totalCount).toBe(2);
    expect(listed.result.data.map((a) => a.keyName).sort()).toEqual(["other", "regular"]);
    expect((await client.guardrails.listKeyAssignments({})).result.totalCount).toBe(2);

    const removed = await client.guardrails.bulkUnassignKeys({
      id: g.id,
      bulkUnassignKeysRequest: { keyHashes: [acct.apiKeyHash] },
    });
    expect(removed.unassignedCount).toBe(1);
    expect((await call("/key", { key: acct.apiKey })).status).toBe(200);

    const members = await client.guardrails.bulkAssignMembers({
      id: g.id,
      bulkAssignMembersRequest: { memberUserIds: [acct.userId] },
    });
    expect(members.assignedCount).toBe(1);
    // Keys created by that member now carry the guardrail.
    expect((await call("/key", { key: acct.apiKey })).status).toBe(403);
    const memberList = await client.guardrails.listGuardrailMemberAssignments({ id: g.id });
    expect(memberList.result.data).toMatchObject([{ userId: acct.userId, organizationId: acct.accountId }]);
    expect((await client.guardrails.listMemberAssignments({})).result.totalCount).toBe(1);
    const unassigned = await client.guardrails.bulkUnassignMembers({
      id: g.id,
      bulkUnassignMembersRequest: { memberUserIds: [acct.userId] },
    });
    expect(unassigned.unassignedCount).toBe(1);

    await client.guardrails.delete({ id: g.id });
    expect((await client.guardrails.listKeyAssignments({})).result.totalCount).toBe(0);
    expect((await call("/key", { key: other.key })).status).toBe(200);
  });

  it("rejects malformed or unknown assignment targets and changes nothing", async () => {
    const acct = await createAccount();
    const g = await createGuardrail(acct.managementKey);
    const path = `/guardrails/${g.id}/assignments`;
    const key = acct.managementKey;
    expect((await call(`${path}/keys`, { method: "POST", key, body: { key_hashes: [] } })).status).toBe(400);
    expect(
      (await call(`${path}/keys`, { method: "POST", key, body: { key_hashes: ["nothex"] } })).status,
    ).toBe(400);
    const unknownKey = "0".repeat(64);
    expect(
      (
        await call(`${path}/keys`, {
          method: "POST",
          key,
          body: { key_hashes: [acct.apiKeyHash, unknownKey] },
        })
      ).status,
    ).toBe(404);
    expect(
      (await call(`${path}/members`, { method: "POST", key, body: { member_user_ids: ["user_nobody"] } }))
        .status,
    ).toBe(404);
    const listed = await call(`${path}/keys`, { key });
    expect(((await listed.json()) as { total_count: number }).total_count).toBe(0);
  });
});

describe("isolation between accounts", () => {
  it("answers 404 on every id route of another account's guardrail and changes nothing", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const g = await createGuardrail(a.managementKey, { name: "A's" });
    const id = g.id;
    const attempts: Array<[string, string, unknown?]> = [
      ["GET", `/guardrails/${id}`],
      ["PATCH", `/guardrails/${id}`, { name: "hijacked" }],
      ["DELETE", `/guardrails/${id}`],
      ["GET", `/guardrails/${id}/assignments/keys`],
      ["GET", `/guardrails/${id}/assignments/members`],
      ["POST", `/guardrails/${id}/assignments/keys`, { key_hashes: [b.apiKeyHash] }],
      ["POST", `/guardrails/${id}/assignments/keys/remove`, { key_hashes: [b.apiKeyHash] }],
      ["POST", `/guardrails/${id}/assignments/members`, { member_user_ids: [b.userId] }],
      ["POST", `/guardrails/${id}/assignments/members/remove`, { member_user_ids: [b.userId] }],
      ["PATCH", `/guardrails/${a.defaultGuardrailId}`, { name: "materialised by B" }],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(path, { method, key: b.managementKey, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await errorOf(res)).message).toBe("Guardrail not found");
    }
    // A cannot assign B's key to its own guardrail either.
    const foreign = await call(`/guardrails/${id}/assignments/keys`, {
      method: "POST",
      key: a.managementKey,
      body: { key_hashes: [b.apiKeyHash] },
    });
    expect(foreign.status).toBe(404);
    expect(await getGuardrail(a.managementKey, id)).toEqual(g);
    expect((await call(`/guardrails/${a.defaultGuardrailId}`, { key: a.managementKey })).status).toBe(404);
    expect((await sdk(b.managementKey).guardrails.list({})).result.totalCount).toBe(0);
    const other = await call("/guardrails", {
      method: "POST",
      key: b.managementKey,
      body: { name: "x", workspace_id: a.workspaceId },
    });
    expect(other.status).toBe(404);
  });
});

describe("assignments racing the guardrail's delete", () => {
  it("an assignment to a guardrail deleted since it was read lands nowhere (null, no row)", async () => {
    const acct = await createAccount();
    const db = getDb(env.DB);
    const gone = crypto.randomUUID();
    expect(await assignKeys(db, gone, [acct.apiKeyHash], null)).toBeNull();
    expect(await assignMembers(db, gone, acct.workspaceId, [acct.userId], null)).toBeNull();
    const keyRows = await db
      .select()
      .from(tables.guardrailKeyAssignments)
      .where(eq(tables.guardrailKeyAssignments.guardrailId, gone));
    const memberRows = await db
      .select()
      .from(tables.guardrailMemberAssignments)
      .where(eq(tables.guardrailMemberAssignments.guardrailId, gone));
    expect([keyRows, memberRows]).toEqual([[], []]);
  });

  it("through the API, assigns and a delete in parallel leave no assignment of the deleted guardrail", async () => {
    const acct = await createAccount();
    const made = await call("/guardrails", {
      key: acct.managementKey,
      method: "POST",
      body: { name: "race" },
    });
    const { id } = ((await made.json()) as { data: { id: string } }).data;
    const statuses = await Promise.all([
      ...Array.from({ length: 8 }, () =>
        call(`/guardrails/${id}/assignments/keys`, {
          key: acct.managementKey,
          method: "POST",
          body: { key_hashes: [acct.apiKeyHash] },
        }).then((r) => r.status),
      ),
      call(`/guardrails/${id}`, { key: acct.managementKey, method: "DELETE" }).then((r) => r.status),
    ]);
    expect(statuses.every((s) => s === 200 || s === 404)).toBe(true);
    const rows = await getDb(env.DB)
      .select()
      .from(tables.guardrailKeyAssignments)
      .where(eq(tables.guardrailKeyAssignments.guardrailId, id));
    expect(rows).toEqual([]);
  });
});
