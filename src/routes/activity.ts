// GET /activity: an account's daily usage per model and provider; GET /generations: its recent generation records.
import { getCatalog } from "../catalog/cache";
import { findModel } from "../catalog/types";
import { activityWindowStart, listGenerations, nextDay, readActivity } from "../db/activity";
import { getDb } from "../db/client";
import { generationToWire } from "../db/generations";
import { findAccountWorkspace } from "../db/guardrails";
import { badRequest, notFound } from "../lib/errors";
import { microsToUsd } from "../lib/money";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { requireManagementKey } from "../middleware/auth";
import {
  ActivityQuerySchema,
  ActivityResponseSchema,
  GenerationListQuerySchema,
  GenerationListSchema,
} from "../schemas/activity";

const common = { method: "get" as const, security: [{ bearer: [] }], middleware: requireManagementKey };

const getActivity = apiRoute({
  operationId: "getUserActivity",
  ...common,
  path: "/activity",
  tags: ["Analytics"],
  summary: "Usage per day, model and provider endpoint over the last 30 UTC days",
  description:
    "Sums the account's generation records: requests, tokens, credit spend (`usage`) and spend on the account's own provider keys (`byok_usage_inference`), in USD. The window is today (UTC, still running) and the 29 days before it; `date` narrows it to one of those days. Management key only.",
  request: { query: ActivityQuerySchema },
  responses: {
    200: jsonContent(ActivityResponseSchema, "Activity rows, newest day first"),
  },
});

const listGenerationsRoute = apiRoute({
  operationId: "listGenerations",
  ...common,
  path: "/generations",
  tags: ["Generations"],
  summary: "List the account's generation records, newest first (gateway extension)",
  description:
    "Not an OpenRouter route: the console's log of recent requests. Each item is what `GET /generation` answers for it, plus its status and the hash of the key that made it. Filters combine; pages follow `next_offset`. Management key only.",
  request: { query: GenerationListQuerySchema },
  responses: {
    200: jsonContent(GenerationListSchema, "Generation records"),
  },
});

export const activityRoutes = createRouter()
  .openapi(getActivity, async (c) => {
    const q = c.req.valid("query");
    const account = c.get("auth").account;
    const from = activityWindowStart(new Date());
    const until = nextDay(new Date().toISOString().slice(0, 10));
    if (q.date && (q.date < from || q.date >= until)) {
      throw badRequest(`date must be within the last 30 UTC days (${from} to today)`);
    }
    if (q.workspace_id) {
      const ws = await findAccountWorkspace(getDb(c.env.DB), account.id, q.workspace_id);
      if (!ws) throw notFound(`Workspace '${q.workspace_id}' not found`);
    }
    const byWorkspace = q.group_by === "workspace";
    const [rows, catalog] = await Promise.all([
      readActivity(c.env.DB, {
        accountId: account.id,
        from: q.date ?? from,
        until: q.date ? nextDay(q.date) : until,
        keyHash: q.api_key_hash,
        workspaceId: q.workspace_id,
        userId: q.user_id,
        byWorkspace,
      }),
      getCatalog(c.env.DB),
    ]);
    const data = rows.map((r) => ({
      date: r.date,
      model: r.model,
      // A model since dropped from the catalog keeps its slug.
      model_permaslug: findModel(catalog, r.model)?.canonicalSlug ?? r.model,
      endpoint_id: r.endpointId,
      provider_name: r.provider,
      requests: r.requests,
      prompt_tokens: r.promptTokens,
      completion_tokens: r.completionTokens,
      reasoning_tokens: r.reasoningTokens,
      usage: microsToUsd(r.creditMicros),
      byok_usage_inference: microsToUsd(r.byokMicros),
      ...(byWorkspace ? { workspace_id: r.workspaceId } : {}),
    }));
    return c.json({ data }, 200);
  })
  .openapi(listGenerationsRoute, async (c) => {
    const q = c.req.valid("query");
    if (q.api_key_hash && q.key_hash && q.api_key_hash !== q.key_hash) {
      throw badRequest("api_key_hash and key_hash name the same filter: give one");
    }
    const [{ rows, more }, catalog] = await Promise.all([
      listGenerations(c.env.DB, {
        accountId: c.get("auth").account.id,
        model: q.model,
        status: q.status,
        keyHash: q.api_key_hash ?? q.key_hash,
        limit: q.limit,
        offset: q.offset,
      }),
      getCatalog(c.env.DB),
    ]);
    const permaslug = (slug: string) => findModel(catalog, slug)?.canonicalSlug ?? slug;
    const data = rows.map((row) => ({
      ...generationToWire(row, permaslug),
      status: row.status,
      api_key_hash: row.keyHash,
    }));
    return c.json({ data, next_offset: more ? q.offset + q.limit : null }, 200);
  });
