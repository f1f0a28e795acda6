// Issue 14, the tenant matrix: accounts A and B x workspaces W1, W2 x every route that names a resource x every
// method it serves x caller key kind. Each cell checks the status, the error envelope, and that the target
// (one of each resource, all in A's W1, made fresh per cell) changed only when the caller may change it.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MANAGEMENT_ONLY_MESSAGE } from "../src/lib/errors";
import { call, errorOf } from "./helpers/http";
import {
  CALLERS,
  type Caller,
  createTenants,
  type Kind,
  type Target,
  type Tenants,
  targetsOf,
  uuid,
} from "./helpers/tenants";

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
type Outcomes = readonly [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome];

let tenants: Tenants;
let make: ReturnType<typeof targetsOf>;

// ---------------------------------------------------------------------------------------------------------
// Columns, in order: A-W1 management, A-W1 regular, A-W2 management, A-W2 regular,
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

  // Workspaces are the account's: any management key of the account reads each of them.
  { method: "GET", path: "/workspaces/{id}", target: "W1 workspace", expect: ADMIN },

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
  {
    method: "POST",
    path: "/presets/{slug}/chat/completions",
    target: "preset",
    body: () => ({ model: "sandbox/chat-echo", messages: [{ role: "system", content: "Be brief." }] }),
    expect: OWN_WORKSPACE,
  },
  {
    method: "POST",
    path: "/presets/{slug}/messages",
    target: "preset",
    body: () => ({ model: "sandbox/chat-echo", system: "Be brief.", messages: [] }),
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
  const request = { method: row.method, key: tenants.keyOf[caller], body: row.body?.(target) };
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
  tenants = await createTenants();
  make = targetsOf(tenants);
});

afterAll(() => vi.restoreAllMocks());

describe("tenant matrix: routes that name a resource x methods x caller keys", () => {
  it("has a row for every method of every route that names a resource, per the OpenAPI document", async () => {
    const doc = (await (await call("/openapi.json")).json()) as { paths: Record<string, object> };
    // Routes named by the caller key's workspace rather than by a path parameter.
    const named = new Set(["/videos/webhook", "/videos/webhook/secret"]);
    // Path parameters that name the shared catalog, not a tenant's resource.
    const catalog = new Set(["/models/{author}/{slug}/endpoints", "/model/{author}/{slug}"]);
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => {
      const route = path.replace(/^\/api\/v1/, "");
      if ((!route.includes("{") && !named.has(route)) || catalog.has(route)) return [];
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
