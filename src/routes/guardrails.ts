// The guardrails API (management keys): create, list, read, update (or materialise the default), delete, assignments.
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCatalog } from "../catalog/cache";
import { getDb } from "../db/client";
import {
  accountKeys,
  assignKeys,
  assignMembers,
  DEFAULT_GUARDRAIL_NAME,
  deleteGuardrail,
  findAccountGuardrail,
  findAccountWorkspace,
  findDefaultOwner,
  guardrailToWire,
  guardrailValues,
  insertGuardrail,
  listGuardrails,
  listKeyAssignments,
  listMemberAssignments,
  unassignKeys,
  unassignMembers,
  updateGuardrail,
  workspaceMembers,
} from "../db/guardrails";
import type { AppEnv } from "../env";
import { normaliseModels, normaliseProviders } from "../guardrails/lists";
import { badRequest, conflict, notFound } from "../lib/errors";
import { createRouter, errorResponses, jsonBody, jsonContent } from "../lib/openapi";
import { nowIso } from "../lib/time";
import { invalidateAuthCache, requireManagementKey } from "../middleware/auth";
import { requireJsonBody } from "../middleware/require-body";
import {
  CreateGuardrailBodySchema,
  GuardrailIdParamSchema,
  GuardrailPageQuerySchema,
  GuardrailSchema,
  KeyAssignmentSchema,
  KeyHashesBodySchema,
  ListGuardrailsQuerySchema,
  MemberAssignmentSchema,
  MemberIdsBodySchema,
  type UpdateGuardrailBody,
  UpdateGuardrailBodySchema,
} from "../schemas/guardrails";

const common = { tags: ["Guardrails"], security: [{ bearer: [] }] };
const managed = { ...common, middleware: requireManagementKey };
const withBody = { ...common, middleware: [requireManagementKey, requireJsonBody] };
const data = z.object({ data: GuardrailSchema });
const ifMatch = z.object({
  "if-match": z.string().optional().openapi({
    description:
      "The guardrail `version` (as returned, optionally quoted) the update applies to; 409 if it changed",
  }),
});

const createGuardrail = createRoute({
  ...withBody,
  method: "post",
  path: "/guardrails",
  summary: "Create a guardrail",
  request: { body: jsonBody(CreateGuardrailBodySchema) },
  responses: { 201: jsonContent(data, "The new guardrail"), ...errorResponses(400, 401, 403, 404, 500) },
});

const listRoute = createRoute({
  ...managed,
  method: "get",
  path: "/guardrails",
  summary: "List the account's guardrails, newest first",
  request: { query: ListGuardrailsQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(GuardrailSchema), total_count: z.int() }), "Guardrails"),
    ...errorResponses(400, 401, 403, 404, 500),
  },
});

const getRoute = createRoute({
  ...managed,
  method: "get",
  path: "/guardrails/{id}",
  summary: "Get a guardrail",
  request: { params: GuardrailIdParamSchema },
  responses: { 200: jsonContent(data, "The guardrail"), ...errorResponses(400, 401, 403, 404, 500) },
});

const updateRoute = createRoute({
  ...withBody,
  method: "patch",
  path: "/guardrails/{id}",
  summary: "Update a guardrail, or materialise the workspace default guardrail",
  description:
    "Omitted fields stay; null clears; collections are replaced. `enforce_zdr` fills each enforce_zdr_* field the body omits.",
  request: { params: GuardrailIdParamSchema, headers: ifMatch, body: jsonBody(UpdateGuardrailBodySchema) },
  responses: {
    200: jsonContent(data, "The updated guardrail"),
    ...errorResponses(400, 401, 403, 404, 409, 500),
  },
});

const deleteRoute = createRoute({
  ...managed,
  method: "delete",
  path: "/guardrails/{id}",
  summary: "Delete a guardrail and its assignments",
  request: { params: GuardrailIdParamSchema },
  responses: {
    200: jsonContent(z.object({ deleted: z.literal(true) }), "Deleted"),
    ...errorResponses(400, 401, 403, 404, 500),
  },
});

const pageOf = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), total_count: z.int() });

const assignRoute = <B extends z.ZodType>(path: string, summary: string, body: B, count: string) =>
  createRoute({
    ...withBody,
    method: "post",
    path,
    summary,
    request: { params: GuardrailIdParamSchema, body: jsonBody(body) },
    responses: {
      200: jsonContent(z.object({ [count]: z.int() }), summary),
      ...errorResponses(400, 401, 403, 404, 500),
    },
  });

const listOneRoute = <T extends z.ZodType>(path: string, summary: string, item: T) =>
  createRoute({
    ...managed,
    method: "get",
    path,
    summary,
    request: { params: GuardrailIdParamSchema, query: GuardrailPageQuerySchema },
    responses: { 200: jsonContent(pageOf(item), "Assignments"), ...errorResponses(400, 401, 403, 404, 500) },
  });

const listAllRoute = <T extends z.ZodType>(path: string, summary: string, item: T) =>
  createRoute({
    ...managed,
    method: "get",
    path,
    summary,
    request: { query: GuardrailPageQuerySchema },
    responses: { 200: jsonContent(pageOf(item), "Assignments"), ...errorResponses(400, 401, 403, 500) },
  });

const keyRoutes = {
  assign: assignRoute(
    "/guardrails/{id}/assignments/keys",
    "Assign API keys to a guardrail",
    KeyHashesBodySchema,
    "assigned_count",
  ),
  unassign: assignRoute(
    "/guardrails/{id}/assignments/keys/remove",
    "Unassign API keys from a guardrail",
    KeyHashesBodySchema,
    "unassigned_count",
  ),
  listOne: listOneRoute(
    "/guardrails/{id}/assignments/keys",
    "List a guardrail's key assignments",
    KeyAssignmentSchema,
  ),
  listAll: listAllRoute(
    "/guardrails/assignments/keys",
    "List the key assignments of the account's guardrails",
    KeyAssignmentSchema,
  ),
};
const memberRoutes = {
  assign: assignRoute(
    "/guardrails/{id}/assignments/members",
    "Assign members to a guardrail",
    MemberIdsBodySchema,
    "assigned_count",
  ),
  unassign: assignRoute(
    "/guardrails/{id}/assignments/members/remove",
    "Unassign members from a guardrail",
    MemberIdsBodySchema,
    "unassigned_count",
  ),
  listOne: listOneRoute(
    "/guardrails/{id}/assignments/members",
    "List a guardrail's member assignments",
    MemberAssignmentSchema,
  ),
  listAll: listAllRoute(
    "/guardrails/assignments/members",
    "List the member assignments of the account's guardrails",
    MemberAssignmentSchema,
  ),
};

const guardrailNotFound = () => notFound("Guardrail not found");

/** Checks model and provider lists against the catalog and rewrites them to catalog slugs. */
async function normalised(c: Context<AppEnv>, body: UpdateGuardrailBody): Promise<UpdateGuardrailBody> {
  const lists = [body.allowed_models, body.ignored_models, body.allowed_providers, body.ignored_providers];
  if (lists.every((l) => l == null)) return body;
  const catalog = await getCatalog(c.env.DB);
  const out = { ...body };
  if (body.allowed_models)
    out.allowed_models = normaliseModels(catalog, "allowed_models", body.allowed_models);
  if (body.ignored_models)
    out.ignored_models = normaliseModels(catalog, "ignored_models", body.ignored_models);
  if (body.allowed_providers) {
    out.allowed_providers = normaliseProviders(catalog, "allowed_providers", body.allowed_providers);
  }
  if (body.ignored_providers) {
    out.ignored_providers = normaliseProviders(catalog, "ignored_providers", body.ignored_providers);
  }
  return out;
}

function expectedVersion(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!m) throw badRequest('If-Match must be a guardrail version, e.g. If-Match: "3"');
  return Number(m[1]);
}

const etag = (version: number) => ({ ETag: `"${version}"` });

async function requireGuardrail(c: Context<AppEnv>, id: string) {
  const row = await findAccountGuardrail(getDb(c.env.DB), c.get("auth").account.id, id);
  if (!row) throw guardrailNotFound();
  return row;
}

export const guardrailsRoutes = createRouter()
  .openapi(createGuardrail, async (c) => {
    const { workspace_id, ...body } = c.req.valid("json");
    const { account, key } = c.get("auth");
    const db = getDb(c.env.DB);
    const workspaceId = workspace_id ?? key.workspaceId;
    const workspace = await findAccountWorkspace(db, account.id, workspaceId);
    if (!workspace || workspace.deletedAt) throw notFound(`Workspace '${workspaceId}' not found`);
    const values = guardrailValues(await normalised(c, body));
    const row = await insertGuardrail(
      db,
      { id: crypto.randomUUID(), accountId: account.id, workspaceId, name: body.name, now: nowIso() },
      values,
    );
    if (!row) throw conflict("Guardrail id collision; retry");
    return c.json({ data: guardrailToWire(row) }, 201, etag(row.version));
  })
  .openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    if (q.workspace_id && !(await findAccountWorkspace(db, account.id, q.workspace_id))) {
      throw notFound(`Workspace '${q.workspace_id}' not found`);
    }
    return c.json(await listGuardrails(db, account.id, { ...q, workspaceId: q.workspace_id }), 200);
  })
  .openapi(getRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    const row = await findAccountGuardrail(db, account.id, id);
    if (!row) {
      if (await findDefaultOwner(db, account.id, id)) {
        throw notFound(
          "This workspace default guardrail has not been configured yet; PATCH it to configure it",
        );
      }
      throw guardrailNotFound();
    }
    return c.json({ data: guardrailToWire(row) }, 200, etag(row.version));
  })
  .openapi(updateRoute, async (c) => {
    const { id } = c.req.valid("param");
    const expected = expectedVersion(c.req.valid("header")["if-match"]);
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    const now = nowIso();
    const values = guardrailValues(await normalised(c, c.req.valid("json")));
    let row = await findAccountGuardrail(db, account.id, id);
    if (!row) {
      // Not configured yet: only the id of a workspace default can be materialised (version 0 until then).
      const owner = await findDefaultOwner(db, account.id, id);
      if (!owner) throw guardrailNotFound();
      if (expected !== undefined && expected !== 0) throw conflict(`Guardrail version is 0, not ${expected}`);
      const created = await insertGuardrail(
        db,
        { id, accountId: account.id, workspaceId: owner.id, name: DEFAULT_GUARDRAIL_NAME, now },
        values,
      );
      if (created) {
        invalidateAuthCache();
        return c.json({ data: guardrailToWire(created) }, 200, etag(created.version));
      }
      // Another request materialised it first: apply this one as an update on top.
      if (expected === 0) throw conflict("Guardrail was modified concurrently; re-read it and retry");
      row = await findAccountGuardrail(db, account.id, id);
      if (!row) throw guardrailNotFound();
    }
    if (Object.keys(values).length === 0) {
      if (expected !== undefined && expected !== row.version) {
        throw conflict(`Guardrail version is ${row.version}, not ${expected}`);
      }
      return c.json({ data: guardrailToWire(row) }, 200, etag(row.version));
    }
    const updated = await updateGuardrail(db, account.id, id, values, now, expected);
    if (!updated) {
      if (expected !== undefined && (await findAccountGuardrail(db, account.id, id))) {
        throw conflict("Guardrail was modified since the version in If-Match; re-read it and retry");
      }
      throw guardrailNotFound();
    }
    invalidateAuthCache();
    return c.json({ data: guardrailToWire(updated) }, 200, etag(updated.version));
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteGuardrail(getDb(c.env.DB), c.get("auth").account.id, id))) throw guardrailNotFound();
    invalidateAuthCache();
    return c.json({ deleted: true as const }, 200);
  })
  .openapi(keyRoutes.assign, async (c) => {
    const { id } = c.req.valid("param");
    const { key_hashes } = c.req.valid("json");
    const guardrail = await requireGuardrail(c, id);
    const db = getDb(c.env.DB);
    const hashes = [...new Set(key_hashes)];
    const keys = await accountKeys(db, c.get("auth").account.id, hashes);
    if (keys.length !== hashes.length) throw notFound("API key not found");
    const foreign = keys.filter((k) => k.workspaceId !== guardrail.workspaceId);
    if (foreign.length > 0) {
      throw badRequest("Keys can only be assigned to a guardrail of their own workspace", {
        key_hashes: foreign.map((k) => k.hash),
      });
    }
    const assigned = await assignKeys(db, id, hashes, c.get("auth").key.creatorUserId);
    invalidateAuthCache();
    return c.json({ assigned_count: assigned }, 200);
  })
  .openapi(keyRoutes.unassign, async (c) => {
    const { id } = c.req.valid("param");
    const { key_hashes } = c.req.valid("json");
    await requireGuardrail(c, id);
    const db = getDb(c.env.DB);
    const hashes = [...new Set(key_hashes)];
    const keys = await accountKeys(db, c.get("auth").account.id, hashes);
    if (keys.length !== hashes.length) throw notFound("API key not found");
    const removed = await unassignKeys(db, id, hashes);
    invalidateAuthCache();
    return c.json({ unassigned_count: removed }, 200);
  })
  .openapi(keyRoutes.listOne, async (c) => {
    const { id } = c.req.valid("param");
    await requireGuardrail(c, id);
    const page = c.req.valid("query");
    return c.json(
      await listKeyAssignments(getDb(c.env.DB), c.get("auth").account.id, { ...page, guardrailId: id }),
      200,
    );
  })
  .openapi(keyRoutes.listAll, async (c) => {
    const page = c.req.valid("query");
    return c.json(await listKeyAssignments(getDb(c.env.DB), c.get("auth").account.id, page), 200);
  })
  .openapi(memberRoutes.assign, async (c) => {
    const { id } = c.req.valid("param");
    const { member_user_ids } = c.req.valid("json");
    const guardrail = await requireGuardrail(c, id);
    const db = getDb(c.env.DB);
    const userIds = [...new Set(member_user_ids)];
    const members = await workspaceMembers(db, c.get("auth").account.id, guardrail.workspaceId, userIds);
    if (members.length !== userIds.length) throw notFound("Member not found in the guardrail's workspace");
    const assigned = await assignMembers(
      db,
      id,
      guardrail.workspaceId,
      userIds,
      c.get("auth").key.creatorUserId,
    );
    invalidateAuthCache();
    return c.json({ assigned_count: assigned }, 200);
  })
  .openapi(memberRoutes.unassign, async (c) => {
    const { id } = c.req.valid("param");
    const { member_user_ids } = c.req.valid("json");
    const guardrail = await requireGuardrail(c, id);
    const db = getDb(c.env.DB);
    const userIds = [...new Set(member_user_ids)];
    const members = await workspaceMembers(db, c.get("auth").account.id, guardrail.workspaceId, userIds);
    if (members.length !== userIds.length) throw notFound("Member not found in the guardrail's workspace");
    const removed = await unassignMembers(db, id, userIds);
    invalidateAuthCache();
    return c.json({ unassigned_count: removed }, 200);
  })
  .openapi(memberRoutes.listOne, async (c) => {
    const { id } = c.req.valid("param");
    await requireGuardrail(c, id);
    const page = c.req.valid("query");
    return c.json(
      await listMemberAssignments(getDb(c.env.DB), c.get("auth").account.id, { ...page, guardrailId: id }),
      200,
    );
  })
  .openapi(memberRoutes.listAll, async (c) => {
    const page = c.req.valid("query");
    return c.json(await listMemberAssignments(getDb(c.env.DB), c.get("auth").account.id, page), 200);
  });
