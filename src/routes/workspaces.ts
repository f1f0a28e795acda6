// The workspaces API, read-only: the account's workspaces and what applies in each (its default
// guardrail's id above all, which PATCH /guardrails/{id} configures). Workspaces are made by the
// operator (`npm run admin`); the gateway has none of OpenRouter's per-workspace logging or defaults,
// so those fields say so (null, false, 0).
import { z } from "@hono/zod-openapi";
import { and, count, desc, eq, inArray, isNull, or } from "drizzle-orm";
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

type Row = typeof workspaces.$inferSelect;

function toWire(row: Row, configured: Set<string>): Workspace {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: null,
    default_guardrail_id: row.defaultGuardrailId,
    default_guardrail_configured: configured.has(row.defaultGuardrailId),
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

/** Which of the workspaces' default guardrails have been configured (have a row). */
async function configuredDefaults(db: Db, rows: Row[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const found = await db
    .select({ id: guardrails.id })
    .from(guardrails)
    .where(
      inArray(
        guardrails.id,
        rows.map((r) => r.defaultGuardrailId),
      ),
    );
  return new Set(found.map((g) => g.id));
}

export const workspacesRoutes = createRouter()
  .openapi(list, async (c) => {
    const { offset, limit } = c.req.valid("query");
    const db = getDb(c.env.DB);
    const mine = and(eq(workspaces.accountId, c.get("auth").account.id), isNull(workspaces.deletedAt));
    const [rows, [total]] = await Promise.all([
      db
        .select()
        .from(workspaces)
        .where(mine)
        .orderBy(desc(workspaces.createdAt), desc(workspaces.id))
        .limit(limit)
        .offset(offset),
      db.select({ n: count() }).from(workspaces).where(mine),
    ]);
    const configured = await configuredDefaults(db, rows);
    return c.json({ data: rows.map((r) => toWire(r, configured)), total_count: total?.n ?? 0 }, 200);
  })
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const db = getDb(c.env.DB);
    const row = await db
      .select()
      .from(workspaces)
      .where(
        and(
          eq(workspaces.accountId, c.get("auth").account.id),
          isNull(workspaces.deletedAt),
          or(eq(workspaces.id, id), eq(workspaces.slug, id)),
        ),
      )
      .get();
    if (!row) throw notFound("Workspace not found");
    return c.json({ data: toWire(row, await configuredDefaults(db, [row])) }, 200);
  });
