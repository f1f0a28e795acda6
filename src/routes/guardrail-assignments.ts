// Guardrail assignments (management keys): bulk assign/unassign API keys and members, and list them.

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorityChanged } from "../billing/authority";
import { getDb } from "../db/client";
import {
  accountKeys,
  assignKeys,
  assignMembers,
  findAccountGuardrail,
  listKeyAssignments,
  listMemberAssignments,
  unassignKeys,
  unassignMembers,
  workspaceMembers,
} from "../db/guardrails";
import type { AppEnv } from "../env";
import { badRequest, notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { requireManagementKey } from "../middleware/auth";
import { requireJsonBody } from "../middleware/require-body";
import {
  GuardrailIdParamSchema,
  GuardrailPageQuerySchema,
  KeyAssignmentSchema,
  KeyHashesBodySchema,
  MemberAssignmentSchema,
  MemberIdsBodySchema,
} from "../schemas/guardrails";

const common = { tags: ["Guardrails"], security: [{ bearer: [] }] };
const managed = { ...common, middleware: requireManagementKey };
const withBody = { ...common, middleware: [requireManagementKey, requireJsonBody] };

const pageOf = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), total_count: z.int() });

const assignRoute = <B extends z.ZodType>(
  path: string,
  operationId: string,
  summary: string,
  body: B,
  count: string,
) =>
  apiRoute({
    ...withBody,
    method: "post",
    path,
    operationId,
    summary,
    request: { params: GuardrailIdParamSchema, body: jsonBody(body) },
    responses: { 200: jsonContent(z.object({ [count]: z.int() }), summary) },
  });

const listOneRoute = <T extends z.ZodType>(path: string, operationId: string, summary: string, item: T) =>
  apiRoute({
    ...managed,
    method: "get",
    path,
    operationId,
    summary,
    request: { params: GuardrailIdParamSchema, query: GuardrailPageQuerySchema },
    responses: { 200: jsonContent(pageOf(item), "Assignments") },
  });

const listAllRoute = <T extends z.ZodType>(path: string, operationId: string, summary: string, item: T) =>
  apiRoute({
    ...managed,
    method: "get",
    path,
    operationId,
    summary,
    request: { query: GuardrailPageQuerySchema },
    responses: { 200: jsonContent(pageOf(item), "Assignments") },
  });

const keyRoutes = {
  assign: assignRoute(
    "/guardrails/{id}/assignments/keys",
    "bulkAssignKeysToGuardrail",
    "Assign API keys to a guardrail",
    KeyHashesBodySchema,
    "assigned_count",
  ),
  unassign: assignRoute(
    "/guardrails/{id}/assignments/keys/remove",
    "bulkUnassignKeysFromGuardrail",
    "Unassign API keys from a guardrail",
    KeyHashesBodySchema,
    "unassigned_count",
  ),
  listOne: listOneRoute(
    "/guardrails/{id}/assignments/keys",
    "listGuardrailKeyAssignments",
    "List a guardrail's key assignments",
    KeyAssignmentSchema,
  ),
  listAll: listAllRoute(
    "/guardrails/assignments/keys",
    "listKeyAssignments",
    "List the key assignments of the account's guardrails",
    KeyAssignmentSchema,
  ),
};
const memberRoutes = {
  assign: assignRoute(
    "/guardrails/{id}/assignments/members",
    "bulkAssignMembersToGuardrail",
    "Assign members to a guardrail",
    MemberIdsBodySchema,
    "assigned_count",
  ),
  unassign: assignRoute(
    "/guardrails/{id}/assignments/members/remove",
    "bulkUnassignMembersFromGuardrail",
    "Unassign members from a guardrail",
    MemberIdsBodySchema,
    "unassigned_count",
  ),
  listOne: listOneRoute(
    "/guardrails/{id}/assignments/members",
    "listGuardrailMemberAssignments",
    "List a guardrail's member assignments",
    MemberAssignmentSchema,
  ),
  listAll: listAllRoute(
    "/guardrails/assignments/members",
    "listMemberAssignments",
    "List the member assignments of the account's guardrails",
    MemberAssignmentSchema,
  ),
};

async function requireGuardrail(c: Context<AppEnv>, id: string) {
  const row = await findAccountGuardrail(getDb(c.env.DB), c.get("auth").account.id, id);
  if (!row) throw notFound("Guardrail not found");
  return row;
}

/** The guardrail and the distinct members named, all verified to be in the guardrail's workspace. */
async function memberTargets(c: Context<AppEnv>, id: string, memberUserIds: string[]) {
  const guardrail = await requireGuardrail(c, id);
  const db = getDb(c.env.DB);
  const userIds = [...new Set(memberUserIds)];
  const members = await workspaceMembers(db, c.get("auth").account.id, guardrail.workspaceId, userIds);
  if (members.length !== userIds.length) throw notFound("Member not found in the guardrail's workspace");
  return { guardrail, db, userIds };
}

export const guardrailAssignmentsRoutes = createRouter()
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
    if (assigned === null) throw notFound("Guardrail not found");
    await authorityChanged(c.env, c.get("auth").account.id);
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
    await authorityChanged(c.env, c.get("auth").account.id);
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
    const { guardrail, db, userIds } = await memberTargets(c, id, c.req.valid("json").member_user_ids);
    const assigned = await assignMembers(
      db,
      id,
      guardrail.workspaceId,
      userIds,
      c.get("auth").key.creatorUserId,
    );
    if (assigned === null) throw notFound("Guardrail not found");
    await authorityChanged(c.env, c.get("auth").account.id);
    return c.json({ assigned_count: assigned }, 200);
  })
  .openapi(memberRoutes.unassign, async (c) => {
    const { id } = c.req.valid("param");
    const { db, userIds } = await memberTargets(c, id, c.req.valid("json").member_user_ids);
    const removed = await unassignMembers(db, id, userIds);
    await authorityChanged(c.env, c.get("auth").account.id);
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
