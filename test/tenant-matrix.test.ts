// Issue 14, the tenant matrix: accounts A and B x workspaces W1, W2 x every route that names a resource x every
// method it serves x caller key kind. Each cell checks the status, the error envelope, and that the target
// (one of each resource, all in A's W1) changed only when the cell says the caller may change it.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import { MANAGEMENT_ONLY_MESSAGE } from "../src/lib/errors";
import { addByok, createAccount, createKey, type TestAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";
import { driveUntil, stateOf, step, submitOk } from "./helpers/videos";
import { addMember, addWorkspace, type TestWorkspace } from "./helpers/workspaces";

const { apiKeys, guardrails, guardrailKeyAssignments, guardrailMemberAssignments, byokCredentials } = tables;
const { presets, presetVersions, videoJobs, workspaces } = tables;

// ---------------------------------------------------------------------------------------------------------
// Outcomes of a cell.

/** 200 on the target itself: a read shows it, a write changes it. */
const OK = "ok";
/** 200 on the caller's own workspace's resource of that name: the target is neither shown nor changed. */
const OWN = "own";
/** 403 "management keys only", answered before the target is looked up. */
const DENY = "deny";
/** 404, word for word the answer to an id that never existed: nothing tells the caller the target exists. */
const HIDE = "hidden";
/** 404 saying the workspace default guardrail is not configured yet (for callers who may manage it). */
const UNSET = "unset";
type Outcome = typeof OK | typeof OWN | typeof DENY | typeof HIDE | typeof UNSET;
const STATUS: Record<Outcome, number> = { ok: 200, own: 200, deny: 403, hidden: 404, unset: 404 };

const CALLERS = [
  "A-W1 management",
  "A-W1 regular",
  "A-W2 management",
  "A-W2 regular",
  "B management",
  "B regular",
] as const;
type Caller = (typeof CALLERS)[number];
type Outcomes = readonly [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome];

// ---------------------------------------------------------------------------------------------------------
// The targets: a fresh one of each kind per cell, in A's W1.

type Kind =
  | "API key"
  | "guardrail"
  | "W1 default guardrail (unconfigured)"
  | "BYOK credential"
  | "preset"
  | "video job (in progress)"
  | "video job (completed)"
  | "W1 video webhook settings";

interface Target {
  /** The path parameter naming it ("" for the workspace's webhook settings, named by the caller's key). */
  ref: string;
  /** A value of the same shape that names nothing. */
  unknown: () => string;
  /** Text that a read of the target shows and a read of anything else does not. */
  token: string;
  /** Its D1 rows (and, for a video job, the status its Durable Object holds) now. */
  snapshot: () => Promise<unknown>;
  /** For assignment bodies: a key and a member of W1, assigned to the guardrail or not yet. */
  freeKeyHash?: string;
  assignedKeyHash?: string;
  freeUserId?: string;
  assignedUserId?: string;
}

let a: TestAccount;
let aW2: TestWorkspace;
let b: TestAccount;
let bW2: TestWorkspace;
/** A third regular key of A's W1: it submits the video jobs, so no caller is the job's own key. */
let submitter: { key: string; hash: string };
let keyOf: Record<Caller, string>;

const db = () => getDb(env.DB);
const uuid = () => crypto.randomUUID();
const hex64 = () =>
  [...crypto.getRandomValues(new Uint8Array(32))].map((x) => x.toString(16).padStart(2, "0")).join("");
const alnum20 = () => uuid().replaceAll("-", "").slice(0, 20);
const videoId = () => `gen-vid-${Math.floor(Date.now() / 1000)}-${alnum20()}`;

const video = {
  model: "sandbox/video-mini",
  prompt: "a lighthouse at dawn",
  duration: 2,
  resolution: "720p",
};
// Many polls before done: the job stays in progress however often its alarm fires during a cell.
const slowVideo = { ...video, provider: { options: { sandbox: { polls_before_done: 50 } } } };

async function post(key: string, path: string, body: unknown, status = 200) {
  const res = await call(path, { method: "POST", key, body });
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(status);
  return (await res.json()) as { data: { id: string } };
}

async function guardrailRows(id: string) {
  return {
    guardrail: await db().select().from(guardrails).where(eq(guardrails.id, id)),
    keys: await db()
      .select()
      .from(guardrailKeyAssignments)
      .where(eq(guardrailKeyAssignments.guardrailId, id)),
    members: await db()
      .select()
      .from(guardrailMemberAssignments)
      .where(eq(guardrailMemberAssignments.guardrailId, id)),
  };
}

async function videoState(id: string) {
  const [row] = await db().select().from(videoJobs).where(eq(videoJobs.id, id));
  const { updatedAt: _, ...rest } = row!;
  return { row: rest, status: (await stateOf(id)).status };
}

const make: Record<Kind, () => Promise<Target>> = {
  async "API key"() {
    const { hash } = await createKey(a, { name: `target ${uuid()}` });
    return {
      ref: hash,
      unknown: hex64,
      token: hash,
      snapshot: async () => ({
        key: await db().select().from(apiKeys).where(eq(apiKeys.hash, hash)),
        guardrails: await db()
          .select()
          .from(guardrailKeyAssignments)
          .where(eq(guardrailKeyAssignments.keyHash, hash)),
      }),
    };
  },
  async guardrail() {
    const { id } = (await post(a.managementKey, "/guardrails", { name: `target ${uuid()}` }, 201)).data;
    const [assignedKey, freeKey] = [await createKey(a), await createKey(a)];
    const [assignedUserId, freeUserId] = [await addMember(a), await addMember(a)];
    await post(a.managementKey, `/guardrails/${id}/assignments/keys`, { key_hashes: [assignedKey.hash] });
    await post(a.managementKey, `/guardrails/${id}/assignments/members`, {
      member_user_ids: [assignedUserId],
    });
    return {
      ref: id,
      unknown: uuid,
      token: id,
      snapshot: () => guardrailRows(id),
      freeKeyHash: freeKey.hash,
      assignedKeyHash: assignedKey.hash,
      freeUserId,
      assignedUserId,
    };
  },
  async "W1 default guardrail (unconfigured)"() {
    const id = a.defaultGuardrailId;
    // Back to unconfigured: a cell before may have materialised it.
    await db().delete(guardrails).where(eq(guardrails.id, id));
    return { ref: id, unknown: uuid, token: id, snapshot: () => guardrailRows(id) };
  },
  async "BYOK credential"() {
    const id = await addByok(a, "openai", `sk-matrix-${uuid()}`);
    return {
      ref: id,
      unknown: uuid,
      token: id,
      snapshot: () => db().select().from(byokCredentials).where(eq(byokCredentials.id, id)),
    };
  },
  async preset() {
    const slug = `tm-${uuid()}`;
    await post(a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" });
    const { id } = (
      await post(a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" })
    ).data;
    return {
      ref: slug,
      unknown: () => `tm-${uuid()}`,
      // The id, not the slug: another workspace's own preset of the same slug shows the slug too.
      token: id,
      snapshot: async () => ({
        preset: await db().select().from(presets).where(eq(presets.id, id)),
        versions: await db().select().from(presetVersions).where(eq(presetVersions.presetId, id)),
      }),
    };
  },
  async "video job (in progress)"() {
    const job = await submitOk(submitter.key, slowVideo);
    await step(job.id);
    expect((await stateOf(job.id)).status).toBe("in_progress");
    return { ref: job.id, unknown: videoId, token: job.id, snapshot: () => videoState(job.id) };
  },
  async "video job (completed)"() {
    const job = await submitOk(submitter.key, video);
    await driveUntil(submitter.key, job.id, "completed");
    return { ref: job.id, unknown: videoId, token: job.id, snapshot: () => videoState(job.id) };
  },
  async "W1 video webhook settings"() {
    const url = `https://hooks-${uuid()}.example.com/videos`;
    await db().update(workspaces).set({ videoWebhookUrl: url }).where(eq(workspaces.id, a.workspaceId));
    return {
      ref: "",
      unknown: () => "",
      token: url,
      snapshot: () => db().select().from(workspaces).where(eq(workspaces.id, a.workspaceId)),
    };
  },
};

// ---------------------------------------------------------------------------------------------------------
// The matrix. Columns, in order: A-W1 management, A-W1 regular, A-W2 management, A-W2 regular,
// B management, B regular.
//
// Decisions where the spec is silent (it documents only "management key required -> 403" for guardrail
// update and BYOK list, and that GET /byok may name another workspace of the account):
// - Keys, guardrails (and their assignments) and BYOK credentials are account-level administration: a
//   management key of any workspace of the account manages them in every workspace of the account, as GET
//   /byok?workspace_id= already does in the spec. So A-W2 management -> 200, like A-W1 management.
// - Presets, video jobs and the video webhook settings belong to a workspace and are addressed through the
//   caller key's own workspace (no route takes a workspace for them): a key of another workspace, even of
//   the same account, gets the 404 of an id that does not exist; any key of the workspace may read presets
//   and poll, download or cancel its jobs (a job is not private to the key that submitted it).
// - Every refused lookup of another tenant's resource is 404 (never 403), word for word the answer to an
//   unknown id, so ids cannot be probed; the management-key 403 comes first and says nothing about the id.

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
interface Row {
  method: Method;
  path: string;
  target: Kind;
  body?: (t: Target) => unknown;
  expect: Outcomes;
}

/** Management routes of account-level resources. */
const ADMIN: Outcomes = [OK, DENY, OK, DENY, HIDE, DENY];
/** Reads and actions on a resource of the caller's workspace. */
const WORKSPACE: Outcomes = [OK, OK, HIDE, HIDE, HIDE, HIDE];
/** Management routes that act on the caller's own workspace's resource of that name. */
const OWN_WORKSPACE: Outcomes = [OK, DENY, OWN, DENY, OWN, DENY];

const ROWS: Row[] = [
  { method: "GET", path: "/keys/{hash}", target: "API key", expect: ADMIN },
  {
    method: "PATCH",
    path: "/keys/{hash}",
    target: "API key",
    body: () => ({ name: "renamed" }),
    expect: ADMIN,
  },
  { method: "DELETE", path: "/keys/{hash}", target: "API key", expect: ADMIN },

  { method: "GET", path: "/guardrails/{id}", target: "guardrail", expect: ADMIN },
  {
    method: "PATCH",
    path: "/guardrails/{id}",
    target: "guardrail",
    body: () => ({ description: "changed" }),
    expect: ADMIN,
  },
  { method: "DELETE", path: "/guardrails/{id}", target: "guardrail", expect: ADMIN },
  // Documented: until configured, GET says so (404) and PATCH materialises it. DELETE of an unconfigured
  // default has nothing to delete: the plain 404 of an unknown guardrail, for everyone.
  {
    method: "GET",
    path: "/guardrails/{id}",
    target: "W1 default guardrail (unconfigured)",
    expect: [UNSET, DENY, UNSET, DENY, HIDE, DENY],
  },
  {
    method: "PATCH",
    path: "/guardrails/{id}",
    target: "W1 default guardrail (unconfigured)",
    body: () => ({ description: "materialised" }),
    expect: ADMIN,
  },
  {
    method: "DELETE",
    path: "/guardrails/{id}",
    target: "W1 default guardrail (unconfigured)",
    expect: [HIDE, DENY, HIDE, DENY, HIDE, DENY],
  },

  { method: "GET", path: "/guardrails/{id}/assignments/keys", target: "guardrail", expect: ADMIN },
  {
    method: "POST",
    path: "/guardrails/{id}/assignments/keys",
    target: "guardrail",
    body: (t) => ({ key_hashes: [t.freeKeyHash] }),
    expect: ADMIN,
  },
  {
    method: "POST",
    path: "/guardrails/{id}/assignments/keys/remove",
    target: "guardrail",
    body: (t) => ({ key_hashes: [t.assignedKeyHash] }),
    expect: ADMIN,
  },
  { method: "GET", path: "/guardrails/{id}/assignments/members", target: "guardrail", expect: ADMIN },
  {
    method: "POST",
    path: "/guardrails/{id}/assignments/members",
    target: "guardrail",
    body: (t) => ({ member_user_ids: [t.freeUserId] }),
    expect: ADMIN,
  },
  {
    method: "POST",
    path: "/guardrails/{id}/assignments/members/remove",
    target: "guardrail",
    body: (t) => ({ member_user_ids: [t.assignedUserId] }),
    expect: ADMIN,
  },

  { method: "GET", path: "/byok/{id}", target: "BYOK credential", expect: ADMIN },
  {
    method: "PATCH",
    path: "/byok/{id}",
    target: "BYOK credential",
    body: () => ({ name: "renamed" }),
    expect: ADMIN,
  },
  { method: "DELETE", path: "/byok/{id}", target: "BYOK credential", expect: ADMIN },

  // Documented (docs/management.md): any key of the workspace reads; another workspace's slug is absent.
  { method: "GET", path: "/presets/{slug}", target: "preset", expect: WORKSPACE },
  { method: "GET", path: "/presets/{slug}/versions", target: "preset", expect: WORKSPACE },
  { method: "GET", path: "/presets/{slug}/versions/1", target: "preset", expect: WORKSPACE },
  // Documented: creating needs a management key, and another workspace's POST creates its own preset.
  {
    method: "POST",
    path: "/presets/{slug}/responses",
    target: "preset",
    body: () => ({ model: "sandbox/embed-failover" }),
    expect: OWN_WORKSPACE,
  },

  { method: "GET", path: "/videos/{id}", target: "video job (in progress)", expect: WORKSPACE },
  { method: "GET", path: "/videos/{id}/content", target: "video job (completed)", expect: WORKSPACE },
  { method: "POST", path: "/videos/{id}/cancel", target: "video job (in progress)", expect: WORKSPACE },

  // The settings are the caller key's workspace's: another workspace's management key reads and writes
  // its own, never W1's.
  { method: "GET", path: "/videos/webhook", target: "W1 video webhook settings", expect: OWN_WORKSPACE },
  {
    method: "PUT",
    path: "/videos/webhook",
    target: "W1 video webhook settings",
    body: () => ({ url: `https://hooks-${uuid()}.example.com/changed` }),
    expect: OWN_WORKSPACE,
  },
  {
    method: "POST",
    path: "/videos/webhook/secret",
    target: "W1 video webhook settings",
    expect: OWN_WORKSPACE,
  },
];

/** The route's path with the target's reference in its (first) parameter. */
const pathOf = (template: string, ref: string) => template.replace(/\{[a-z]+\}/, ref);

async function runCell(row: Row, caller: Caller, outcome: Outcome) {
  const target = await make[row.target]();
  const path = pathOf(row.path, target.ref);
  const request = { method: row.method, key: keyOf[caller], body: row.body?.(target) };
  const before = await target.snapshot();
  const res = await call(path, request);
  const label = `${caller}: ${row.method} ${row.path}`;
  const json = res.headers.get("Content-Type")?.startsWith("application/json");
  expect(res.status, json ? `${label}: ${await res.clone().text()}` : label).toBe(STATUS[outcome]);

  if (outcome === OK || outcome === OWN) {
    if (!json) {
      expect(res.headers.get("Content-Type"), label).toBe("video/mp4");
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(String.fromCharCode(...bytes.subarray(4, 8)), label).toBe("ftyp");
    } else {
      const text = await res.text();
      if (outcome === OK && row.method === "GET") expect(text, label).toContain(target.token);
      if (outcome === OWN) expect(text, label).not.toContain(target.token);
    }
    const after = await target.snapshot();
    if (outcome === OK && row.method !== "GET")
      expect(after, `${label} changes the target`).not.toEqual(before);
    else expect(after, `${label} leaves the target as it was`).toEqual(before);
    return;
  }

  const error = await errorOf(res);
  expect(error.message, label).toEqual(expect.any(String));
  expect(await target.snapshot(), `${label} leaves the target as it was`).toEqual(before);
  if (outcome === DENY) expect(error.message, label).toBe(MANAGEMENT_ONLY_MESSAGE);
  if (outcome === UNSET) expect(error.message, label).toMatch(/not been configured/);
  if (outcome === HIDE) {
    const unknown = target.unknown();
    const probe = await call(pathOf(row.path, unknown), request);
    expect(probe.status, `${label}, unknown id`).toBe(404);
    expect(error.message, `${label} answers as for an unknown id`).toBe(
      (await errorOf(probe)).message.replaceAll(unknown, target.ref),
    );
  }
}

beforeAll(async () => {
  // Completed jobs notify W1's webhook URL: answer those deliveries here instead of the network.
  vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response(null, { status: 204 }));
  a = await createAccount({ creditsUsd: 100 });
  aW2 = await addWorkspace(a);
  b = await createAccount({ creditsUsd: 100 });
  bW2 = await addWorkspace(b);
  submitter = await createKey(a, { name: "video submitter" });
  keyOf = {
    "A-W1 management": a.managementKey,
    "A-W1 regular": a.apiKey,
    "A-W2 management": aW2.managementKey,
    "A-W2 regular": aW2.apiKey,
    "B management": b.managementKey,
    "B regular": b.apiKey,
  };
});

afterAll(() => vi.restoreAllMocks());

describe("tenant matrix: routes that name a resource x methods x caller keys", () => {
  it("covers every caller kind in every row", () => {
    for (const row of ROWS) expect(row.expect).toHaveLength(CALLERS.length);
  });

  describe.each(ROWS.map((row) => [`${row.method} ${row.path} on a ${row.target}`, row] as const))(
    "%s",
    (_, row) => {
      it.each(CALLERS.map((caller, i) => [caller, row.expect[i]!] as const))(
        "%s -> %s",
        async (caller, outcome) => {
          await runCell(row, caller, outcome);
        },
      );
    },
  );
});
