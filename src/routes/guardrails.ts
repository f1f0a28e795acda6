// The guardrails API (management keys): create, list, read, update (or materialise the default), delete, assignments.

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorityChanged } from "../billing/authority";
import { getCatalog } from "../catalog/cache";
import { getDb } from "../db/client";
import {
  DEFAULT_GUARDRAIL_NAME,
  deleteGuardrail,
  findAccountGuardrail,
  findAccountWorkspace,
  findDefaultOwner,
  guardrailToWire,
  guardrailValues,
  insertGuardrail,
  listGuardrails,
  updateGuardrail,
} from "../db/guardrails";
import type { AppEnv } from "../env";
import { normaliseModels, normaliseProviders } from "../guardrails/lists";
import { badRequest, conflict, notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { nowIso } from "../lib/time";
import { requireManagementKey } from "../middleware/auth";
import { requireJsonBody } from "../middleware/require-body";
import {
  CreateGuardrailBodySchema,
  GuardrailIdParamSchema,
  GuardrailSchema,
  ListGuardrailsQuerySchema,
  type UpdateGuardrailBody,
  UpdateGuardrailBodySchema,
} from "../schemas/guardrails";
import { guardrailAssignmentsRoutes } from "./guardrail-assignments";

const common = { tags: ["Guardrails"], security: [{ bearer: [] }] };
const managed = { ...common, middleware: requireManagementKey };
const withBody = { ...common, middleware: [requireManagementKey, requireJsonBody] };
const data = z.object({ data: GuardrailSchema });
const ifMatch = z.object({
  "if-match": z.string().optional().openapi({
    description:
      "The guardrail `version` (as returned, optionally quoted) the update applies to, 409 if it changed; `*`: any version, 409 if the workspace default is not configured yet",
  }),
});

const createGuardrail = apiRoute(
  {
    ...withBody,
    method: "post",
    path: "/guardrails",
    operationId: "createGuardrail",
    summary: "Create a guardrail",
    request: { body: jsonBody(CreateGuardrailBodySchema) },
    responses: { 201: jsonContent(data, "The new guardrail") },
  },
  { also: [404, 409] },
);

const listRoute = apiRoute({
  ...managed,
  method: "get",
  path: "/guardrails",
  operationId: "listGuardrails",
  summary: "List the account's guardrails, newest first",
  request: { query: ListGuardrailsQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(GuardrailSchema), total_count: z.int() }), "Guardrails"),
  },
});

const getRoute = apiRoute({
  ...managed,
  method: "get",
  path: "/guardrails/{id}",
  operationId: "getGuardrail",
  summary: "Get a guardrail",
  request: { params: GuardrailIdParamSchema },
  responses: { 200: jsonContent(data, "The guardrail") },
});

const updateRoute = apiRoute(
  {
    ...withBody,
    method: "patch",
    path: "/guardrails/{id}",
    operationId: "updateGuardrail",
    summary: "Update a guardrail, or materialise the workspace default guardrail",
    description:
      "Omitted fields stay; null clears; collections are replaced. `enforce_zdr` fills each enforce_zdr_* field the body omits.",
    request: { params: GuardrailIdParamSchema, headers: ifMatch, body: jsonBody(UpdateGuardrailBodySchema) },
    responses: {
      200: jsonContent(data, "The updated guardrail"),
    },
  },
  { also: [409] },
);

const deleteRoute = apiRoute({
  ...managed,
  method: "delete",
  path: "/guardrails/{id}",
  operationId: "deleteGuardrail",
  summary: "Delete a guardrail and its assignments",
  request: { params: GuardrailIdParamSchema },
  responses: {
    200: jsonContent(z.object({ deleted: z.literal(true) }), "Deleted"),
  },
});

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

/** The version an update applies to; `*` (HTTP's "any current version") asks only that it exist. */
function expectedVersion(header: string | undefined): number | "any" | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "any";
  // If-Match compares strongly (RFC 9110): a weak tag never matches.
  if (/^\s*W\//.test(header)) throw conflict('If-Match needs a strong tag ("3"): a weak one never matches');
  const m = /^\s*"?(\d{1,9})"?\s*$/.exec(header);
  if (!m) throw badRequest('If-Match must be a guardrail version, e.g. If-Match: "3"');
  return Number(m[1]);
}

const etag = (version: number) => ({ ETag: `"${version}"` });

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
    const wanted = expectedVersion(c.req.valid("header")["if-match"]);
    const expected = wanted === "any" ? undefined : wanted;
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    const now = nowIso();
    const values = guardrailValues(await normalised(c, c.req.valid("json")));
    let row = await findAccountGuardrail(db, account.id, id);
    if (!row) {
      // Not configured yet: only the id of a workspace default can be materialised (version 0 until then).
      const owner = await findDefaultOwner(db, account.id, id);
      if (!owner) throw guardrailNotFound();
      if (wanted === "any") throw conflict("Guardrail is not configured yet, so If-Match: * does not match");
      if (expected !== undefined && expected !== 0) throw conflict(`Guardrail version is 0, not ${expected}`);
      const created = await insertGuardrail(
        db,
        { id, accountId: account.id, workspaceId: owner.id, name: DEFAULT_GUARDRAIL_NAME, now },
        values,
      );
      if (created) {
        await authorityChanged(c.env, c.get("auth").account.id);
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
    await authorityChanged(c.env, c.get("auth").account.id);
    return c.json({ data: guardrailToWire(updated) }, 200, etag(updated.version));
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteGuardrail(getDb(c.env.DB), c.get("auth").account.id, id))) throw guardrailNotFound();
    await authorityChanged(c.env, c.get("auth").account.id);
    return c.json({ deleted: true as const }, 200);
  })
  .route("/", guardrailAssignmentsRoutes);
