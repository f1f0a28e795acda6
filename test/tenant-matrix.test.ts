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
  { method: "GET", path: "/presets/{slug}/versions/{version}", target: "preset", expect: WORKSPACE },
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

/** The route's path with the target's reference in it (and version 1 of a preset). */
const pathOf = (template: string, ref: string) =>
  template.replace(/\{(hash|id|slug)\}/, ref).replace("{version}", "1");

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
  it("has a row for every method of every route that names a resource, per the OpenAPI document", async () => {
    const doc = (await (await call("/openapi.json")).json()) as { paths: Record<string, object> };
    // Routes named by the caller key's workspace rather than by a path parameter.
    const named = new Set(["/videos/webhook", "/videos/webhook/secret"]);
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => {
      const route = path.replace(/^\/api\/v1/, "");
      if (!route.includes("{") && !named.has(route)) return [];
      return Object.keys(ops).map((method) => `${method.toUpperCase()} ${route}`);
    });
    expect(routes.length).toBeGreaterThan(20);
    expect(new Set(ROWS.map((row) => `${row.method} ${row.path}`))).toEqual(new Set(routes));
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

// ---------------------------------------------------------------------------------------------------------
// References: ids and names inside queries and bodies (workspace_id, key hashes, user ids, @preset/<slug>),
// and the account-wide lists. A refused reference changes nothing it names or would have touched.

interface Reference {
  name: string;
  caller: Caller;
  method: Method;
  path: () => string;
  body?: () => unknown;
  status: number;
  /** On refusal: the error message, when it tells which reference was refused. */
  message?: string;
  /** On success: text the answer must show. */
  shows?: () => string;
  /** Text the answer must not show (another tenant's resources). */
  hides?: () => string[];
  /** State the request must leave as it was. */
  watch?: () => Promise<unknown>;
}

/** A's W1 resources the references name (made once), and B's own preset of the same slug as A's. */
let mine: {
  guardrail: Target;
  byok: Target;
  preset: Target;
  slug: string;
  onlyA: string;
  videoSlug: string;
  bGuardrail: string;
};

const keysOf = (workspaceId: string) =>
  db().select().from(apiKeys).where(eq(apiKeys.workspaceId, workspaceId));
const guardrailsOf = (accountId: string) =>
  db().select().from(guardrails).where(eq(guardrails.accountId, accountId));
const byokOf = (accountId: string) =>
  db().select().from(byokCredentials).where(eq(byokCredentials.accountId, accountId));
const jobsOf = (workspaceId: string) =>
  db().select().from(videoJobs).where(eq(videoJobs.workspaceId, workspaceId));
const providerKey = () => `sk-matrix-${uuid()}`;

// Decisions where the spec is silent: a management key names any workspace of its account (201/200, as
// GET /byok?workspace_id= does in the spec); another account's workspace is 404 on every route that takes
// one, lists included (GET /guardrails and GET /byok already did so; GET /keys did too, after issue 14).
const REFERENCES: Reference[] = [
  {
    name: "GET /keys?workspace_id=<B's W1>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/keys?workspace_id=${b.workspaceId}`,
    status: 404,
  },
  {
    name: "GET /keys?workspace_id=<A's W2>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/keys?workspace_id=${aW2.workspaceId}`,
    status: 200,
    shows: () => aW2.apiKeyHash,
    hides: () => [a.apiKeyHash],
  },
  {
    name: "POST /keys naming B's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/keys",
    body: () => ({ name: "planted", workspace_id: bW2.workspaceId }),
    status: 404,
    watch: () => keysOf(bW2.workspaceId),
  },
  {
    name: "POST /keys naming A's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/keys",
    body: () => ({ name: "for W2", workspace_id: aW2.workspaceId }),
    status: 201,
    shows: () => aW2.workspaceId,
  },
  {
    name: "GET /guardrails?workspace_id=<B's W2>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/guardrails?workspace_id=${bW2.workspaceId}`,
    status: 404,
  },
  {
    name: "POST /guardrails naming B's W1",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/guardrails",
    body: () => ({ name: "planted", workspace_id: b.workspaceId }),
    status: 404,
    watch: () => guardrailsOf(b.accountId),
  },
  {
    name: "POST /guardrails naming A's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/guardrails",
    body: () => ({ name: "for W2", workspace_id: aW2.workspaceId }),
    status: 201,
    shows: () => aW2.workspaceId,
  },
  {
    name: "GET /byok?workspace_id=<B's W1>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/byok?workspace_id=${b.workspaceId}`,
    status: 404,
  },
  {
    name: "GET /byok?workspace_id=<A's W2> (spec: scope to another workspace)",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/byok?workspace_id=${aW2.workspaceId}`,
    status: 200,
    hides: () => [mine.byok.token],
  },
  {
    name: "GET /byok without workspace_id from A's W2 (spec: the account's default workspace)",
    caller: "A-W2 management",
    method: "GET",
    path: () => "/byok",
    status: 200,
    shows: () => mine.byok.token,
  },
  {
    name: "POST /byok naming B's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/byok",
    body: () => ({ provider: "openai", key: providerKey(), workspace_id: bW2.workspaceId }),
    status: 404,
    watch: () => byokOf(b.accountId),
  },
  {
    name: "POST /byok restricted to B's key",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/byok",
    body: () => ({ provider: "openai", key: providerKey(), allowed_api_key_hashes: [b.apiKeyHash] }),
    status: 400,
    message: "allowed_api_key_hashes: not keys of this account",
    watch: () => byokOf(a.accountId),
  },
  {
    name: "POST /byok restricted to B's user",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/byok",
    body: () => ({ provider: "openai", key: providerKey(), allowed_user_ids: [b.userId] }),
    status: 400,
    message: "allowed_user_ids: not users of this account",
    watch: () => byokOf(a.accountId),
  },
  {
    name: "PATCH /byok/{A's} restricted to B's key",
    caller: "A-W1 management",
    method: "PATCH",
    path: () => `/byok/${mine.byok.ref}`,
    body: () => ({ allowed_api_key_hashes: [b.apiKeyHash] }),
    status: 400,
    message: "allowed_api_key_hashes: not keys of this account",
    watch: () => mine.byok.snapshot(),
  },
  {
    name: "PATCH /byok/{A's} restricted to B's user",
    caller: "A-W1 management",
    method: "PATCH",
    path: () => `/byok/${mine.byok.ref}`,
    body: () => ({ allowed_user_ids: [bW2.userId] }),
    status: 400,
    message: "allowed_user_ids: not users of this account",
    watch: () => mine.byok.snapshot(),
  },
  {
    name: "assign B's key to A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/keys`,
    body: () => ({ key_hashes: [b.apiKeyHash] }),
    status: 404,
    message: "API key not found",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "unassign B's key from A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/keys/remove`,
    body: () => ({ key_hashes: [b.apiKeyHash] }),
    status: 404,
    message: "API key not found",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    // Documented: a key is assigned only to guardrails of its own workspace.
    name: "assign A-W2's key to A-W1's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/keys`,
    body: () => ({ key_hashes: [aW2.apiKeyHash] }),
    status: 400,
    message: "Keys can only be assigned to a guardrail of their own workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "assign B's member to A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/members`,
    body: () => ({ member_user_ids: [b.userId] }),
    status: 404,
    message: "Member not found in the guardrail's workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "unassign B's member from A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/members/remove`,
    body: () => ({ member_user_ids: [b.userId] }),
    status: 404,
    message: "Member not found in the guardrail's workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    // Documented: members are assigned only to guardrails of a workspace they belong to.
    name: "assign an A-W2-only member to A-W1's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/members`,
    body: () => ({ member_user_ids: [aW2.userId] }),
    status: 404,
    message: "Member not found in the guardrail's workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "B assigns A's key to B's own guardrail",
    caller: "B management",
    method: "POST",
    path: () => `/guardrails/${mine.bGuardrail}/assignments/keys`,
    body: () => ({ key_hashes: [a.apiKeyHash] }),
    status: 404,
    message: "API key not found",
    watch: async () => ({
      guardrail: await guardrailRows(mine.bGuardrail),
      key: await db()
        .select()
        .from(guardrailKeyAssignments)
        .where(eq(guardrailKeyAssignments.keyHash, a.apiKeyHash)),
    }),
  },
  {
    name: "model @preset/<A-W1's slug> from A-W1",
    caller: "A-W1 regular",
    method: "POST",
    path: () => "/embeddings",
    body: () => ({ model: `@preset/${mine.onlyA}`, input: "hello" }),
    status: 200,
    shows: () => '"model":"sandbox/embed-small"',
  },
  {
    name: "model @preset/<A-W1's slug> from A-W2",
    caller: "A-W2 regular",
    method: "POST",
    path: () => "/embeddings",
    body: () => ({ model: `@preset/${mine.onlyA}`, input: "hello" }),
    status: 404,
  },
  {
    name: "model @preset/<A-W1's slug> from B",
    caller: "B regular",
    method: "POST",
    path: () => "/embeddings",
    body: () => ({ model: `@preset/${mine.onlyA}`, input: "hello" }),
    status: 404,
  },
  {
    // The correction to issue 14: B's own preset of the same slug is B's, not a leak of A's.
    name: "model @preset/<a slug both A-W1 and B have> from B: B's own",
    caller: "B regular",
    method: "POST",
    path: () => "/embeddings",
    body: () => ({ model: `@preset/${mine.slug}`, input: "hello" }),
    status: 200,
    shows: () => '"model":"sandbox/embed-small:free"',
  },
  {
    name: "video with model @preset/<A-W1's slug> from A-W2",
    caller: "A-W2 regular",
    method: "POST",
    path: () => "/videos",
    body: () => ({ model: `@preset/${mine.videoSlug}`, prompt: "a red kite", duration: 2 }),
    status: 404,
    watch: () => jobsOf(aW2.workspaceId),
  },
  ...([
    "/keys",
    "/guardrails",
    "/byok",
    "/guardrails/assignments/keys",
    "/guardrails/assignments/members",
  ].map(
    (path): Reference => ({
      name: `GET ${path} from B`,
      caller: "B management",
      method: "GET",
      path: () => path,
      status: 200,
      hides: () => [a.apiKeyHash, mine.guardrail.token, mine.byok.token, a.userId],
    }),
  ) satisfies Reference[]),
  ...(["A-W2 management", "A-W2 regular", "B regular"] as const).map(
    (caller): Reference => ({
      name: `GET /presets from ${caller}`,
      caller,
      method: "GET",
      path: () => "/presets",
      status: 200,
      hides: () => [mine.preset.token],
    }),
  ),
];

describe("tenant matrix: references in queries and bodies, and lists", () => {
  beforeAll(async () => {
    const guardrail = await make.guardrail();
    const byok = await make["BYOK credential"]();
    const preset = await make.preset();
    const slug = `tm-${uuid()}`;
    await post(a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" });
    await post(b.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small:free" });
    const videoSlug = `tm-${uuid()}`;
    await post(a.managementKey, `/presets/${videoSlug}/responses`, { model: "sandbox/video-mini" });
    const bGuardrail = (await post(b.managementKey, "/guardrails", { name: "B's" }, 201)).data.id;
    mine = { guardrail, byok, preset, slug, onlyA: preset.ref, videoSlug, bGuardrail };
  });

  it.each(REFERENCES.map((r) => [r.name, r] as const))("%s", async (_, ref) => {
    const before = await ref.watch?.();
    const res = await call(ref.path(), { method: ref.method, key: keyOf[ref.caller], body: ref.body?.() });
    const text = await res.text();
    expect(res.status, text).toBe(ref.status);
    if (res.status >= 400) {
      const error = await errorOf(new Response(text, { status: res.status }));
      if (ref.message) expect(error.message).toBe(ref.message);
    }
    if (ref.shows) expect(text).toContain(ref.shows());
    for (const hidden of ref.hides?.() ?? []) expect(text).not.toContain(hidden);
    if (ref.watch) expect(await ref.watch()).toEqual(before);
  });
});
