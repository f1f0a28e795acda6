// Issue 14, the tenant matrix's second half: ids and names inside queries and bodies (workspace_id, key
// hashes, user ids, @preset/<slug>) and the account-wide lists, across accounts A and B and workspaces W1, W2.
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { tables } from "../src/db/client";
import { call, errorOf } from "./helpers/http";
import {
  type Caller,
  createTenants,
  db,
  guardrailRows,
  post,
  type Target,
  type Tenants,
  targetsOf,
  uuid,
} from "./helpers/tenants";

const { apiKeys, guardrails, guardrailKeyAssignments, byokCredentials, videoJobs } = tables;

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
let t: Tenants;

// ---------------------------------------------------------------------------------------------------------
// // ids and names inside queries and bodies (workspace_id, key hashes, user ids, @preset/<slug>),
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
    path: () => `/keys?workspace_id=${t.b.workspaceId}`,
    status: 404,
  },
  {
    name: "GET /keys?workspace_id=<A's W2>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/keys?workspace_id=${t.aW2.workspaceId}`,
    status: 200,
    shows: () => t.aW2.apiKeyHash,
    hides: () => [t.a.apiKeyHash],
  },
  {
    name: "POST /keys naming B's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/keys",
    body: () => ({ name: "planted", workspace_id: t.bW2.workspaceId }),
    status: 404,
    watch: () => keysOf(t.bW2.workspaceId),
  },
  {
    name: "POST /keys naming A's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/keys",
    body: () => ({ name: "for W2", workspace_id: t.aW2.workspaceId }),
    status: 201,
    shows: () => t.aW2.workspaceId,
  },
  {
    name: "GET /guardrails?workspace_id=<B's W2>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/guardrails?workspace_id=${t.bW2.workspaceId}`,
    status: 404,
  },
  {
    name: "POST /guardrails naming B's W1",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/guardrails",
    body: () => ({ name: "planted", workspace_id: t.b.workspaceId }),
    status: 404,
    watch: () => guardrailsOf(t.b.accountId),
  },
  {
    name: "POST /guardrails naming A's W2",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/guardrails",
    body: () => ({ name: "for W2", workspace_id: t.aW2.workspaceId }),
    status: 201,
    shows: () => t.aW2.workspaceId,
  },
  {
    name: "GET /byok?workspace_id=<B's W1>",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/byok?workspace_id=${t.b.workspaceId}`,
    status: 404,
  },
  {
    name: "GET /byok?workspace_id=<A's W2> (spec: scope to another workspace)",
    caller: "A-W1 management",
    method: "GET",
    path: () => `/byok?workspace_id=${t.aW2.workspaceId}`,
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
    body: () => ({ provider: "openai", key: providerKey(), workspace_id: t.bW2.workspaceId }),
    status: 404,
    watch: () => byokOf(t.b.accountId),
  },
  {
    name: "POST /byok restricted to B's key",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/byok",
    body: () => ({ provider: "openai", key: providerKey(), allowed_api_key_hashes: [t.b.apiKeyHash] }),
    status: 400,
    message: "allowed_api_key_hashes: not keys of this account",
    watch: () => byokOf(t.a.accountId),
  },
  {
    name: "POST /byok restricted to B's user",
    caller: "A-W1 management",
    method: "POST",
    path: () => "/byok",
    body: () => ({ provider: "openai", key: providerKey(), allowed_user_ids: [t.b.userId] }),
    status: 400,
    message: "allowed_user_ids: not users of this account",
    watch: () => byokOf(t.a.accountId),
  },
  {
    name: "PATCH /byok/{A's} restricted to B's key",
    caller: "A-W1 management",
    method: "PATCH",
    path: () => `/byok/${mine.byok.ref}`,
    body: () => ({ allowed_api_key_hashes: [t.b.apiKeyHash] }),
    status: 400,
    message: "allowed_api_key_hashes: not keys of this account",
    watch: () => mine.byok.snapshot(),
  },
  {
    name: "PATCH /byok/{A's} restricted to B's user",
    caller: "A-W1 management",
    method: "PATCH",
    path: () => `/byok/${mine.byok.ref}`,
    body: () => ({ allowed_user_ids: [t.bW2.userId] }),
    status: 400,
    message: "allowed_user_ids: not users of this account",
    watch: () => mine.byok.snapshot(),
  },
  {
    name: "assign B's key to A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/keys`,
    body: () => ({ key_hashes: [t.b.apiKeyHash] }),
    status: 404,
    message: "API key not found",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "unassign B's key from A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/keys/remove`,
    body: () => ({ key_hashes: [t.b.apiKeyHash] }),
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
    body: () => ({ key_hashes: [t.aW2.apiKeyHash] }),
    status: 400,
    message: "Keys can only be assigned to a guardrail of their own workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "assign B's member to A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/members`,
    body: () => ({ member_user_ids: [t.b.userId] }),
    status: 404,
    message: "Member not found in the guardrail's workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "unassign B's member from A's guardrail",
    caller: "A-W1 management",
    method: "POST",
    path: () => `/guardrails/${mine.guardrail.ref}/assignments/members/remove`,
    body: () => ({ member_user_ids: [t.b.userId] }),
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
    body: () => ({ member_user_ids: [t.aW2.userId] }),
    status: 404,
    message: "Member not found in the guardrail's workspace",
    watch: () => mine.guardrail.snapshot(),
  },
  {
    name: "B assigns A's key to B's own guardrail",
    caller: "B management",
    method: "POST",
    path: () => `/guardrails/${mine.bGuardrail}/assignments/keys`,
    body: () => ({ key_hashes: [t.a.apiKeyHash] }),
    status: 404,
    message: "API key not found",
    watch: async () => ({
      guardrail: await guardrailRows(mine.bGuardrail),
      key: await db()
        .select()
        .from(guardrailKeyAssignments)
        .where(eq(guardrailKeyAssignments.keyHash, t.a.apiKeyHash)),
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
    watch: () => jobsOf(t.aW2.workspaceId),
  },
  ...["/keys", "/guardrails", "/byok", "/guardrails/assignments/keys", "/guardrails/assignments/members"].map(
    (path): Reference => ({
      name: `GET ${path} from B`,
      caller: "B management",
      method: "GET",
      path: () => path,
      status: 200,
      hides: () => [t.a.apiKeyHash, mine.guardrail.token, mine.byok.token, t.a.userId],
    }),
  ),
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
    t = await createTenants();
    const make = targetsOf(t);
    const guardrail = await make.guardrail();
    const byok = await make["BYOK credential"]();
    const preset = await make.preset();
    const slug = `tm-${uuid()}`;
    await post(t.a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" });
    await post(t.b.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small:free" });
    const videoSlug = `tm-${uuid()}`;
    await post(t.a.managementKey, `/presets/${videoSlug}/responses`, { model: "sandbox/video-mini" });
    const bGuardrail = (await post(t.b.managementKey, "/guardrails", { name: "B's" }, 201)).data.id;
    mine = { guardrail, byok, preset, slug, onlyA: preset.ref, videoSlug, bGuardrail };
  });

  it.each(REFERENCES.map((r) => [r.name, r] as const))("%s", async (_, ref) => {
    const before = await ref.watch?.();
    const res = await call(ref.path(), { method: ref.method, key: t.keyOf[ref.caller], body: ref.body?.() });
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
