// The workspaces API, read-only: the account's workspaces and what applies in each (its default
// guardrail's id above all, which PATCH /guardrails/{id} configures). Workspaces are made by the
// operator (`npm run admin`); the gateway has none of OpenRouter's per-workspace logging or defaults,
// so those fields say so (null, false, 0).
import { z } from "@hono/zod-openapi";
import { and, count, desc, eq, isNull, or } from "drizzle-orm";
import { type Db, getDb, tables } from "../db/client";
import { notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { requireManagementKey } from "../middleware/auth";
import {
  type Workspace,
  WorkspaceIdParamSchema,
  WorkspacePageQuerySchema,
  WorkspaceSchema,
} from "../schemas/workspaces";

const { workspaces, guardrails } = tables;

const common = {
  tags: ["Workspaces"],
  security: [{ bearer: [] }],
  middleware: requireManagementKey,
};

const list = apiRoute({
  ...common,
  method: "get",
  path: "/workspaces",
  operationId: "listWorkspaces",
  summary: "List the account's workspaces, newest first",
  description: "Management key required.",
  request: { query: WorkspacePageQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(WorkspaceSchema), total_count: z.int() }), "Workspaces"),
  },
});

const get = apiRoute({
  ...common,
  method: "get",
  path: "/workspaces/{id}",
  operationId: "getWorkspace",
  summary: "Get a workspace by id or slug",
  description: "Management key required. Another account's workspace answers 404, as an unknown one does.",
  request: { params: WorkspaceIdParamSchema },
  responses: { 200: jsonContent(z.object({ data: WorkspaceSchema }), "The workspace") },
});

/** A workspace with its default guardrail's row id, null while that guardrail is not configured. */
const withDefault = (db: Db) =>
  db
    .select({ workspace: workspaces, configured: guardrails.id })
    .from(workspaces)
    .leftJoin(guardrails, eq(guardrails.id, workspaces.defaultGuardrailId));

function toWire({
  workspace: row,
  configured,
}: {
  workspace: typeof workspaces.$inferSelect;
  configured: string | null;
}): Workspace {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: null,
    default_guardrail_id: row.defaultGuardrailId,
    default_guardrail_configured: configured !== null,
    default_text_model: null,
    default_image_model: null,
    default_provider_sort: null,
    io_logging_api_key_ids: null,
    io_logging_sampling_rate: 0,
    is_data_discount_logging_enabled: false,
    is_observability_broadcast_enabled: false,
    is_observability_io_logging_enabled: false,
    created_by: null,
    created_at: row.createdAt,
    updated_at: null,
  };
}

export const workspacesRoutes = createRouter()
  .openapi(list, async (c) => {
    const { offset, limit } = c.req.valid("query");
    const db = getDb(c.env.DB);
    const mine = and(eq(workspaces.accountId, c.get("auth").account.id), isNull(workspaces.deletedAt));
    const [rows, [total]] = await Promise.all([
      withDefault(db)
        .where(mine)
        .orderBy(desc(workspaces.createdAt), desc(workspaces.id))
        .limit(limit)
        .offset(offset),
      db.select({ n: count() }).from(workspaces).where(mine),
    ]);
    return c.json({ data: rows.map(toWire), total_count: total?.n ?? 0 }, 200);
  })
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const row = await withDefault(getDb(c.env.DB))
      .where(
        and(
          eq(workspaces.accountId, c.get("auth").account.id),
          isNull(workspaces.deletedAt),
          or(eq(workspaces.id, id), eq(workspaces.slug, id)),
        ),
      )
      .get();
    if (!row) throw notFound("Workspace not found");
    return c.json({ data: toWire(row) }, 200);
  });
