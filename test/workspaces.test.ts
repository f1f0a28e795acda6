// The workspaces API (read-only): where a management key finds each workspace's default guardrail id,
// read through @openrouter/sdk so its parsing proves the shape.
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { sdkFor as sdk } from "./helpers/sdk";
import { addWorkspace } from "./helpers/workspaces";

describe("GET /workspaces", () => {
  it("lists the account's workspaces with their default guardrail ids, newest first", async () => {
    const acct = await createAccount();
    const second = await addWorkspace(acct);
    const other = await createAccount();
    const res = await sdk(acct.managementKey).workspaces.list({});
    expect(res.result.totalCount).toBe(2);
    const ids = res.result.data.map((w) => w.id);
    expect(new Set(ids)).toEqual(new Set([acct.workspaceId, second.workspaceId]));
    expect(ids).not.toContain(other.workspaceId);
    const byId = new Map(res.result.data.map((w) => [w.id, w]));
    expect(byId.get(acct.workspaceId)?.defaultGuardrailId).toBe(acct.defaultGuardrailId);
    expect(byId.get(second.workspaceId)?.defaultGuardrailId).toBe(second.defaultGuardrailId);
    // Pages: one at a time, no repeats.
    const first = await call("/workspaces?limit=1", { key: acct.managementKey });
    const next = await call("/workspaces?limit=1&offset=1", { key: acct.managementKey });
    const page = async (r: Response) => ((await r.json()) as { data: Array<{ id: string }> }).data;
    const [a, b] = [await page(first), await page(next)];
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(new Set([a[0]!.id, b[0]!.id])).toEqual(new Set(ids));
  });

  it("says whether the default guardrail is configured; PATCH on the listed id configures it", async () => {
    const acct = await createAccount();
    const read = async () =>
      (
        (await (await call(`/workspaces/${acct.workspaceId}`, { key: acct.managementKey })).json()) as {
          data: { default_guardrail_id: string; default_guardrail_configured: boolean };
        }
      ).data;
    const before = await read();
    expect(before.default_guardrail_configured).toBe(false);
    expect(
      (await call(`/guardrails/${before.default_guardrail_id}`, { key: acct.managementKey })).status,
    ).toBe(404);
    const patched = await call(`/guardrails/${before.default_guardrail_id}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { allowed_data_regions: ["global", "europe"] },
    });
    expect(patched.status).toBe(200);
    expect((await read()).default_guardrail_configured).toBe(true);
  });

  it("gets one by id or slug; another account's or an unknown one is the same 404; regular keys 403", async () => {
    const acct = await createAccount();
    const other = await createAccount();
    const ws = await sdk(acct.managementKey).workspaces.get({ id: acct.workspaceId });
    expect(ws.data.id).toBe(acct.workspaceId);
    const bySlug = await call(`/workspaces/${ws.data.slug}`, { key: acct.managementKey });
    expect(((await bySlug.json()) as { data: { id: string } }).data.id).toBe(acct.workspaceId);
    const foreign = await call(`/workspaces/${other.workspaceId}`, { key: acct.managementKey });
    const unknown = await call(`/workspaces/${crypto.randomUUID()}`, { key: acct.managementKey });
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect((await errorOf(foreign)).message).toBe((await errorOf(unknown)).message);
    expect((await call("/workspaces", { key: acct.apiKey })).status).toBe(403);
    expect((await call("/workspaces?limit=0", { key: acct.managementKey })).status).toBe(400);
  });
});
