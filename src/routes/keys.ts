// The keys API (management keys): create, list, read, update and delete API keys of the account.

import { z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { DATA_REGIONS } from "../../regions";
import { authorityChanged } from "../billing/authority";
import { readKeyUsage } from "../billing/usage";
import {
  apiKeyToWire,
  findAccountKey,
  leavesAManagementKey,
  listAccountKeys,
  revokedByOperator,
} from "../db/api-keys";
import { type Db, getDb, tables } from "../db/client";
import { findAccountWorkspace } from "../db/guardrails";
import { newApiKey } from "../lib/api-keys";
import { badRequest, conflict, notFound } from "../lib/errors";
import { usdToMicros } from "../lib/money";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { nowIso, toIso } from "../lib/time";
import { requireManagementKey } from "../middleware/auth";
import {
  ApiKeySchema,
  CreateKeyBodySchema,
  KeyHashParamSchema,
  ListKeysQuerySchema,
  UpdateKeyBodySchema,
} from "../schemas/keys";

const { apiKeys, workspaces, users, guardrailKeyAssignments } = tables;
const common = { tags: ["API keys"], security: [{ bearer: [] }], middleware: requireManagementKey };

const createKey = apiRoute(
  {
    ...common,
    method: "post",
    path: "/keys",
    operationId: "createKeys",
    summary: "Create an API key (the plaintext key is returned only here)",
    request: { body: jsonBody(CreateKeyBodySchema) },
    responses: {
      201: jsonContent(z.object({ data: ApiKeySchema, key: z.string() }), "The new key"),
    },
  },
  { also: [404] },
);

const listKeys = apiRoute({
  ...common,
  method: "get",
  path: "/keys",
  operationId: "list",
  summary: "List the account's API keys",
  request: { query: ListKeysQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(ApiKeySchema) }), "Keys, newest first, 100 per page"),
  },
});

const getKey = apiRoute({
  ...common,
  method: "get",
  path: "/keys/{hash}",
  operationId: "getKey",
  summary: "Get an API key by hash",
  request: { params: KeyHashParamSchema },
  responses: {
    200: jsonContent(z.object({ data: ApiKeySchema }), "The key"),
  },
});

const updateKey = apiRoute(
  {
    ...common,
    method: "patch",
    path: "/keys/{hash}",
    operationId: "updateKeys",
    summary: "Update an API key",
    request: { params: KeyHashParamSchema, body: jsonBody(UpdateKeyBodySchema) },
    responses: {
      200: jsonContent(z.object({ data: ApiKeySchema }), "The updated key"),
    },
  },
  { also: [409] },
);

const deleteKey = apiRoute(
  {
    ...common,
    method: "delete",
    path: "/keys/{hash}",
    operationId: "deleteKeys",
    summary: "Delete an API key",
    request: { params: KeyHashParamSchema },
    responses: {
      200: jsonContent(z.object({ deleted: z.literal(true) }), "Deleted"),
    },
  },
  { also: [409] },
);

/** Why a key was not updated or deleted: it is not the account's, or it is its last management key. */
async function missingOrLast(db: Db, accountId: string, hash: string) {
  if (!(await findAccountKey(db, accountId, hash))) return notFound("API key not found");
  return conflict(
    "This is the account's last enabled management key without an expiry: create another before disabling, deleting or setting an expiry on it",
  );
}

export const keysRoutes = createRouter()
  .openapi(createKey, async (c) => {
    const body = c.req.valid("json");
    const { account, key: caller } = c.get("auth");
    const db = getDb(c.env.DB);
    const workspaceId = body.workspace_id ?? caller.workspaceId;
    const workspace = await db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(and(eq(workspaces.id, workspaceId), eq(workspaces.accountId, account.id)))
      .get();
    if (!workspace) throw notFound(`Workspace '${workspaceId}' not found`);
    if (body.creator_user_id) {
      const user = await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.id, body.creator_user_id), eq(users.accountId, account.id)))
        .get();
      if (!user) throw badRequest(`creator_user_id '${body.creator_user_id}' is not a user of this account`);
    }
    const { key, hash, label } = await newApiKey();
    const now = nowIso();
    const row = await db
      .insert(apiKeys)
      .values({
        hash,
        label,
        accountId: account.id,
        workspaceId,
        name: body.name,
        limitMicros: body.limit == null ? null : usdToMicros(body.limit),
        limitReset: body.limit_reset ?? null,
        includeByokInLimit: body.include_byok_in_limit ?? false,
        expiresAt: toIso(body.expires_at),
        allowedDataRegions: body.allowed_data_regions ?? [...DATA_REGIONS],
        creatorUserId: body.creator_user_id ?? caller.creatorUserId,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get();
    return c.json({ data: apiKeyToWire(row, undefined), key }, 201);
  })
  .openapi(listKeys, async (c) => {
    const q = c.req.valid("query");
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    // Another account's workspace is not found, as on GET /guardrails and GET /byok (not an empty page).
    if (q.workspace_id && !(await findAccountWorkspace(db, account.id, q.workspace_id))) {
      throw notFound(`Workspace '${q.workspace_id}' not found`);
    }
    const rows = await listAccountKeys(db, account.id, {
      includeDisabled: q.include_disabled,
      offset: q.offset,
      limit: q.limit,
      workspaceId: q.workspace_id,
    });
    const usage = await readKeyUsage(
      c.env,
      account.id,
      rows.map((r) => r.hash),
    );
    return c.json({ data: rows.map((r) => apiKeyToWire(r, usage[r.hash])) }, 200);
  })
  .openapi(getKey, async (c) => {
    const { hash } = c.req.valid("param");
    const { account } = c.get("auth");
    const row = await findAccountKey(getDb(c.env.DB), account.id, hash);
    if (!row) throw notFound("API key not found");
    const usage = await readKeyUsage(c.env, account.id, [hash]);
    return c.json({ data: apiKeyToWire(row, usage[hash]) }, 200);
  })
  .openapi(updateKey, async (c) => {
    const { hash } = c.req.valid("param");
    const body = c.req.valid("json");
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    if (body.disabled === false && (await revokedByOperator(db, account.id, hash))) {
      throw conflict(
        "This key was revoked by the operator (npm run admin -- keys revoke) and cannot be enabled again; create a new key",
      );
    }
    // The usage the answer reports, read before the change: with the ledger unreachable the update is a
    // 503 that changed nothing (read after it, the change was stored and the caller told it failed).
    const usage = await readKeyUsage(c.env, account.id, [hash]);
    const row = await db
      .update(apiKeys)
      .set({
        name: body.name,
        disabled: body.disabled,
        limitMicros:
          body.limit === undefined ? undefined : body.limit === null ? null : usdToMicros(body.limit),
        limitReset: body.limit_reset,
        includeByokInLimit: body.include_byok_in_limit,
        expiresAt: body.expires_at === undefined ? undefined : toIso(body.expires_at),
        allowedDataRegions: body.allowed_data_regions,
        updatedAt: nowIso(),
      })
      .where(
        and(
          eq(apiKeys.accountId, account.id),
          eq(apiKeys.hash, hash),
          // An expiry on the last management key locks the account out as surely, only later.
          body.disabled || body.expires_at != null ? leavesAManagementKey(account.id, hash) : undefined,
        ),
      )
      .returning()
      .get();
    if (!row) throw await missingOrLast(db, account.id, hash);
    await authorityChanged(c.env, c.get("auth").account.id);
    return c.json({ data: apiKeyToWire(row, usage[hash]) }, 200);
  })
  .openapi(deleteKey, async (c) => {
    const { hash } = c.req.valid("param");
    const { account } = c.get("auth");
    const db = getDb(c.env.DB);
    const deleted = await db
      .delete(apiKeys)
      .where(
        and(
          eq(apiKeys.accountId, account.id),
          eq(apiKeys.hash, hash),
          leavesAManagementKey(account.id, hash),
        ),
      )
      .returning({ hash: apiKeys.hash });
    if (deleted.length === 0) throw await missingOrLast(db, account.id, hash);
    await db.delete(guardrailKeyAssignments).where(eq(guardrailKeyAssignments.keyHash, hash));
    await authorityChanged(c.env, c.get("auth").account.id);
    return c.json({ deleted: true as const }, 200);
  });
