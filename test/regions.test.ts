// Region ingress: the deployment's region must be allowed by the key and by every applicable guardrail.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DATA_REGIONS, type DataRegion, REGIONS } from "../regions";
import { getDb, tables } from "../src/db/client";
import wranglerToml from "../wrangler.toml?raw";
import { createAccount, createKey, type TestAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

type Source = "workspace" | "member" | "key";
type GuardrailSpec = { source: Source; regions: DataRegion[] | null };

async function addGuardrail(acct: TestAccount, keyHash: string, spec: GuardrailSpec) {
  const db = getDb(env.DB);
  const id = spec.source === "workspace" ? acct.defaultGuardrailId : crypto.randomUUID();
  await db.insert(tables.guardrails).values({
    id,
    accountId: acct.accountId,
    workspaceId: acct.workspaceId,
    name: `${spec.source} guardrail`,
    allowedDataRegions: spec.regions,
  });
  if (spec.source === "member") {
    await db
      .insert(tables.guardrailMemberAssignments)
      .values({ guardrailId: id, userId: acct.userId, workspaceId: acct.workspaceId });
  }
  if (spec.source === "key") {
    await db.insert(tables.guardrailKeyAssignments).values({ guardrailId: id, keyHash });
  }
}

const keySets: DataRegion[][] = [["global", "europe", "us"], ["europe"], ["global", "us"]];
const guardrailSets: GuardrailSpec[][] = [
  [],
  [{ source: "workspace", regions: ["europe", "us"] }],
  [{ source: "member", regions: ["europe"] }],
  [{ source: "key", regions: ["global", "europe"] }],
  [{ source: "key", regions: null }],
  [
    { source: "workspace", regions: ["europe", "us"] },
    { source: "key", regions: ["us", "global"] },
  ],
  [
    { source: "workspace", regions: ["global", "europe", "us"] },
    { source: "member", regions: ["global", "europe"] },
    { source: "key", regions: ["europe", "us"] },
  ],
];

const cases = DATA_REGIONS.flatMap((ingress) =>
  keySets.flatMap((keyRegions) =>
    guardrailSets.map((guards) => {
      const allowed =
        keyRegions.includes(ingress) &&
        guards.every((g) => g.regions === null || g.regions.includes(ingress));
      const label = guards.map((g) => `${g.source}:${g.regions?.join("+") ?? "any"}`).join(",") || "none";
      return { ingress, keyRegions, guards, allowed, label };
    }),
  ),
);

describe("region ingress matrix", () => {
  it.each(cases)(
    "ingress $ingress, key [$keyRegions], guardrails $label -> allowed: $allowed",
    async ({ ingress, keyRegions, guards, allowed }) => {
      const acct = await createAccount();
      const key = await createKey(acct, { allowedDataRegions: keyRegions });
      for (const g of guards) await addGuardrail(acct, key.hash, g);
      const res = await call("/key", { key: key.key, region: ingress });
      if (allowed) {
        expect(res.status).toBe(200);
      } else {
        expect(res.status).toBe(403);
        const error = await errorOf(res);
        expect(error.message).toContain(`'${ingress}' data region`);
        expect(error.metadata).toMatchObject({ region: ingress });
      }
    },
  );

  it("rejects before any write: a refused management call creates nothing", async () => {
    const acct = await createAccount();
    const mgmt = await createKey(acct, { isManagement: true, allowedDataRegions: ["europe"] });
    const res = await call("/keys", {
      key: mgmt.key,
      method: "POST",
      body: { name: "should not exist" },
      region: "us",
    });
    expect(res.status).toBe(403);
    const rows = await getDb(env.DB).select().from(tables.apiKeys).all();
    expect(rows.filter((r) => r.accountId === acct.accountId && r.name === "should not exist")).toHaveLength(
      0,
    );
  });
});

/** The `[env.<name>]` block of wrangler.toml, or the top level for null. */
function section(name: string | null): string {
  const parts = wranglerToml.split(/^\[env\.(\w+)\]\s*$/m);
  if (name === null) return parts[0]!;
  const at = parts.indexOf(name);
  return at > 0 ? parts[at + 1]!.split(/^\[env\.|^\[(?!env)/m)[0]! : "";
}

describe("regions/ and wrangler.toml agree", () => {
  it.each(DATA_REGIONS)("%s", (name) => {
    const record = REGIONS[name];
    const block = section(record.wranglerEnv);
    expect(block, `wrangler.toml has a block for ${name}`).not.toBe("");
    expect(block).toMatch(new RegExp(`^name = "${record.workerName}"`, "m"));
    expect(block).toMatch(new RegExp(`REGION = "${name}"`));
    expect(block).toContain(`pattern = "${record.hostname}"`);
    expect(new URL(record.baseUrl).hostname).toBe(record.hostname);
    const owner = Object.values(REGIONS).find((r) => r.ownsDurableObjects)!;
    if (record.ownsDurableObjects) {
      expect(block).not.toMatch(/script_name\s*=/);
    } else {
      // Every Durable Object binding points at the owner's script: one ledger whatever the ingress.
      for (const cls of ["Ledger", "VideoJob"]) {
        expect(block).toContain(`class_name = "${cls}", script_name = "${owner.workerName}"`);
      }
    }
  });

  it("has exactly one owner of the Durable Objects, the global deployment", () => {
    const owners = Object.values(REGIONS).filter((r) => r.ownsDurableObjects);
    expect(owners.map((r) => r.name)).toEqual(["global"]);
  });
});

describe("guardrail regions and the management key", () => {
  /** A guardrail allowing only europe, assigned to the given key hashes. */
  async function europeOnly(acct: TestAccount, hashes: string[]) {
    const made = await call("/guardrails", {
      method: "POST",
      key: acct.managementKey,
      body: { name: "eu only", allowed_data_regions: ["europe"] },
    });
    expect(made.status).toBe(201);
    const { data } = (await made.json()) as { data: { id: string } };
    const assigned = await call(`/guardrails/${data.id}/assignments/keys`, {
      method: "POST",
      key: acct.managementKey,
      body: { key_hashes: hashes },
    });
    expect(assigned.status).toBe(200);
  }

  it("guardrails that leave a management key no region at all are set aside for it (no lock-out); they still bind where a region is left", async () => {
    const acct = await createAccount();
    const { sha256Hex } = await import("../src/lib/hash");
    const mine = await sha256Hex(acct.managementKey);
    const narrowed = await call(`/keys/${mine}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { allowed_data_regions: ["global", "us"] },
    });
    expect(narrowed.status).toBe(200);
    await europeOnly(acct, [mine, acct.apiKeyHash]);
    // The key allows global and us, the guardrail only europe: nothing is left, so the key's own hold.
    expect((await call("/keys", { key: acct.managementKey })).status).toBe(200);
    expect((await call("/keys", { key: acct.managementKey, region: "us" })).status).toBe(200);
    expect((await call("/keys", { key: acct.managementKey, region: "europe" })).status).toBe(403);
    // An API key gets no such escape: it is refused everywhere the guardrail refuses.
    expect((await call("/key", { key: acct.apiKey })).status).toBe(403);
    // Where a region is left (the key allows every region again), the guardrail binds the management key.
    const widened = await call(`/keys/${mine}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { allowed_data_regions: ["global", "europe", "us"] },
    });
    expect(widened.status).toBe(200);
    expect((await call("/keys", { key: acct.managementKey })).status).toBe(403);
    expect((await call("/keys", { key: acct.managementKey, region: "europe" })).status).toBe(200);
  });
});
