// The BYOK API (management keys): list, create, read, update and delete upstream provider credentials.
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { raiseAuthority } from "../billing/authority";
import { getCatalog } from "../catalog/cache";
import {
  type ByokValues,
  byokToWire,
  deleteByok,
  findAccountByok,
  insertByok,
  knownKeyHashes,
  knownUserIds,
  listByok,
  updateByok,
} from "../db/byok";
import { getDb } from "../db/client";
import { findAccountWorkspace } from "../db/guardrails";
import type { AppEnv, Bindings } from "../env";
import { catalogProviders, normaliseModels } from "../guardrails/lists";
import { invalidateByokCache } from "../inference/context";
import { encryptByokKey, maskKey, resealedColumns } from "../lib/byok-crypto";
import { badRequest, notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { nowIso } from "../lib/time";
import { requireManagementKey } from "../middleware/auth";
import { requireJsonBody } from "../middleware/require-body";
import {
  ByokCredentialSchema,
  ByokIdParamSchema,
  CreateByokBodySchema,
  ListByokQuerySchema,
  type UpdateByokBody,
  UpdateByokBodySchema,
} from "../schemas/byok";

const common = { tags: ["BYOK"], security: [{ bearer: [] }] };
const managed = { ...common, middleware: requireManagementKey };
const withBody = { ...common, middleware: [requireManagementKey, requireJsonBody] };
const data = z.object({ data: ByokCredentialSchema });

const listRoute = apiRoute({
  ...managed,
  method: "get",
  path: "/byok",
  operationId: "listBYOKKeys",
  summary: "List BYOK credentials of a workspace (default: the account's default workspace)",
  description: "Ordered by sort_order, then created_at. `limit` defaults to 50.",
  request: { query: ListByokQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(ByokCredentialSchema), total_count: z.int() }), "Credentials"),
  },
});

const createRouteDef = apiRoute(
  {
    ...withBody,
    method: "post",
    path: "/byok",
    operationId: "createBYOKKey",
    summary: "Store an upstream provider key (encrypted at rest; never returned)",
    request: { body: jsonBody(CreateByokBodySchema) },
    responses: { 201: jsonContent(data, "The new credential") },
  },
  { also: [404] },
);

const getRoute = apiRoute({
  ...managed,
  method: "get",
  path: "/byok/{id}",
  operationId: "getBYOKKey",
  summary: "Get a BYOK credential",
  request: { params: ByokIdParamSchema },
  responses: { 200: jsonContent(data, "The credential") },
});

const updateRoute = apiRoute({
  ...withBody,
  method: "patch",
  path: "/byok/{id}",
  operationId: "updateBYOKKey",
  summary: "Update a BYOK credential (send `key` to replace the stored key)",
  request: { params: ByokIdParamSchema, body: jsonBody(UpdateByokBodySchema) },
  responses: { 200: jsonContent(data, "The updated credential") },
});

const deleteRoute = apiRoute({
  ...managed,
  method: "delete",
  path: "/byok/{id}",
  operationId: "deleteBYOKKey",
  summary: "Delete a BYOK credential",
  request: { params: ByokIdParamSchema },
  responses: {
    200: jsonContent(z.object({ deleted: z.literal(true) }), "Deleted"),
  },
});

const credentialNotFound = () => notFound("BYOK credential not found");

/**
 * A credential added, changed or deleted: this isolate reads the workspace's credentials again now,
 * and every other one at its next admission, which the raised authority sends back to re-plan under
 * the re-read key and credentials (a deleted key is never used past that; see billing/authority.ts).
 */
async function byokChanged(env: Bindings, accountId: string, workspaceId: string): Promise<void> {
  invalidateByokCache(workspaceId);
  await raiseAuthority(env, accountId);
}

/** The workspace a request targets: the one named (of the caller's account), else the account default. */
async function targetWorkspace(c: Context<AppEnv>, workspaceId: string | undefined): Promise<string> {
  const { account } = c.get("auth");
  const db = getDb(c.env.DB);
  if (workspaceId) {
    const ws = await findAccountWorkspace(db, account.id, workspaceId);
    if (!ws || ws.deletedAt) throw notFound(`Workspace '${workspaceId}' not found`);
    return ws.id;
  }
  const fallback = account.defaultWorkspaceId;
  const ws = fallback ? await findAccountWorkspace(db, account.id, fallback) : null;
  if (!ws || ws.deletedAt) {
    throw badRequest("The account's default workspace was deleted: pass workspace_id to choose a workspace");
  }
  return ws.id;
}

async function checkProvider(c: Context<AppEnv>, provider: string): Promise<void> {
  const known = catalogProviders(await getCatalog(c.env.DB));
  if (!known.has(provider)) {
    throw badRequest(`Unknown provider '${provider}'; known providers: ${[...known].sort().join(", ")}`);
  }
}

/** Restriction lists checked against the account (keys, users) and the catalog (models). */
async function restrictionValues(c: Context<AppEnv>, body: UpdateByokBody): Promise<ByokValues> {
  const { account } = c.get("auth");
  const db = getDb(c.env.DB);
  if (body.allowed_api_key_hashes) {
    const known = await knownKeyHashes(db, account.id, body.allowed_api_key_hashes);
    const unknown = body.allowed_api_key_hashes.filter((h) => !known.has(h));
    if (unknown.length > 0) throw badRequest("allowed_api_key_hashes: not keys of this account", { unknown });
  }
  if (body.allowed_user_ids) {
    const known = await knownUserIds(db, account.id, body.allowed_user_ids);
    const unknown = body.allowed_user_ids.filter((u) => !known.has(u));
    if (unknown.length > 0) throw badRequest("allowed_user_ids: not users of this account", { unknown });
  }
  const models = body.allowed_models
    ? normaliseModels(await getCatalog(c.env.DB), "allowed_models", body.allowed_models)
    : body.allowed_models;
  const values: ByokValues = {
    name: body.name ?? undefined,
    disabled: body.disabled,
    isByokOnly: body.is_byok_only,
    isFallback: body.is_fallback,
    isRequired: body.is_required,
    sortOrder: body.sort_order,
    allowedApiKeyHashes:
      body.allowed_api_key_hashes === undefined ? undefined : [...new Set(body.allowed_api_key_hashes ?? [])],
    allowedModels: models,
    allowedUserIds:
      body.allowed_user_ids === undefined ? undefined : [...new Set(body.allowed_user_ids ?? [])],
    declaredZdr: body.declared_zdr,
  };
  // null restrictions clear (unrestricted); the Set copies above must keep that null.
  if (body.allowed_api_key_hashes === null) values.allowedApiKeyHashes = null;
  if (body.allowed_user_ids === null) values.allowedUserIds = null;
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as ByokValues;
}

export const byokRoutes = createRouter()
  .openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const workspaceId = await targetWorkspace(c, q.workspace_id);
    if (q.provider) await checkProvider(c, q.provider);
    const result = await listByok(getDb(c.env.DB), {
      accountId: c.get("auth").account.id,
      workspaceId,
      provider: q.provider,
      offset: q.offset,
      limit: q.limit,
    });
    return c.json(result, 200);
  })
  .openapi(createRouteDef, async (c) => {
    const { key, provider, workspace_id, ...body } = c.req.valid("json");
    const workspaceId = await targetWorkspace(c, workspace_id);
    await checkProvider(c, provider);
    const values = await restrictionValues(c, body);
    const id = crypto.randomUUID();
    const sealed = await encryptByokKey(c.env, { workspaceId, provider, credentialId: id }, key);
    const now = nowIso();
    const row = await insertByok(getDb(c.env.DB), {
      ...values,
      id,
      accountId: c.get("auth").account.id,
      workspaceId,
      provider,
      name: body.name ?? provider,
      label: maskKey(key),
      ...sealed,
      createdAt: now,
      updatedAt: now,
    });
    await byokChanged(c.env, c.get("auth").account.id, workspaceId);
    return c.json({ data: byokToWire(row) }, 201);
  })
  .openapi(getRoute, async (c) => {
    const { id } = c.req.valid("param");
    const row = await findAccountByok(getDb(c.env.DB), c.get("auth").account.id, id);
    if (!row) throw credentialNotFound();
    return c.json({ data: byokToWire(row) }, 200);
  })
  .openapi(updateRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { key, ...body } = c.req.valid("json");
    const accountId = c.get("auth").account.id;
    const db = getDb(c.env.DB);
    const row = await findAccountByok(db, accountId, id);
    if (!row) throw credentialNotFound();
    const values = await restrictionValues(c, body);
    if (body.name === null) values.name = row.provider;
    Object.assign(values, await resealedColumns(c.env, row, key));
    const updated = await updateByok(db, accountId, id, { ...values, updatedAt: nowIso() });
    if (!updated) throw credentialNotFound();
    await byokChanged(c.env, accountId, updated.workspaceId);
    return c.json({ data: byokToWire(updated) }, 200);
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    const deleted = await deleteByok(getDb(c.env.DB), c.get("auth").account.id, id);
    if (!deleted) throw credentialNotFound();
    await byokChanged(c.env, c.get("auth").account.id, deleted.workspaceId);
    return c.json({ deleted: true as const }, 200);
  });
