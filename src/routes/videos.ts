// Video generation routes: submit, poll, content, cancel, and the workspace's webhook settings.
import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { AuthContext } from "../db/auth-records";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { attributionOf, sessionIdOf, underCurrentPolicy } from "../inference/pipeline";
import { ApiError, conflict, notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { requireManagementKey } from "../middleware/auth";
import { toUpstreamError, withoutSecrets } from "../providers/errors";
import {
  CancelBodySchema,
  ContentQuerySchema,
  IdempotencyHeaderSchema,
  RotatedSecretSchema,
  UpdateWebhookSettingsSchema,
  VideoIdParamSchema,
  VideoJobListQuerySchema,
  VideoJobListSchema,
  VideoJobSchema,
  VideoRequestSchema,
  WebhookSettingsSchema,
} from "../schemas/videos";
import { findWorkspaceJob, jobToWire, listWorkspaceJobs } from "../videos/store";
import { submitVideo } from "../videos/submit";
import { connect } from "../videos/upstream";
import { ROTATION_GRACE_MS, rotateWorkspaceSecret } from "../webhooks/secrets";

const common = { tags: ["Video generation"], security: [{ bearer: [] }] };
const managed = { tags: ["Video generation"], security: [{ bearer: [] }], middleware: requireManagementKey };

const getWebhook = apiRoute({
  ...managed,
  method: "get",
  path: "/videos/webhook",
  operationId: "getVideoWebhook",
  summary: "The workspace's default completion webhook",
  responses: {
    200: jsonContent(z.object({ data: WebhookSettingsSchema }), "Settings"),
  },
});

const putWebhook = apiRoute({
  ...managed,
  method: "put",
  path: "/videos/webhook",
  operationId: "updateVideoWebhook",
  summary: "Set or clear the workspace's default completion webhook URL",
  request: { body: jsonBody(UpdateWebhookSettingsSchema) },
  responses: {
    200: jsonContent(z.object({ data: WebhookSettingsSchema }), "Settings"),
  },
});

const rotateSecret = apiRoute({
  ...managed,
  method: "post",
  path: "/videos/webhook/secret",
  operationId: "rotateVideoWebhookSecret",
  summary: "Create or rotate the webhook signing secret (shown only in this response)",
  responses: {
    200: jsonContent(z.object({ data: RotatedSecretSchema }), "The new secret"),
  },
});

const submit = apiRoute(
  {
    ...common,
    method: "post",
    path: "/videos",
    operationId: "createVideos",
    summary: "Submit a video generation job",
    request: { body: jsonBody(VideoRequestSchema), headers: IdempotencyHeaderSchema },
    responses: {
      200: jsonContent(VideoJobSchema, "The accepted job, status pending"),
    },
  },
  { also: [402, 404, 409, 503] },
);

const list = apiRoute({
  ...common,
  method: "get",
  path: "/videos",
  operationId: "listVideos",
  summary: "List this workspace's video jobs, newest first (gateway extension)",
  description:
    "Not an OpenRouter route: the console's list of jobs. The jobs any key of the caller's workspace submitted, each as polling answers it plus its model, provider and times.",
  request: { query: VideoJobListQuerySchema },
  responses: { 200: jsonContent(VideoJobListSchema, "Video jobs") },
});

const poll = apiRoute({
  ...common,
  method: "get",
  path: "/videos/{id}",
  operationId: "getVideos",
  summary: "Poll a video job",
  request: { params: VideoIdParamSchema },
  responses: { 200: jsonContent(VideoJobSchema, "The job") },
});

const content = apiRoute(
  {
    ...common,
    method: "get",
    path: "/videos/{id}/content",
    operationId: "listVideosContent",
    summary: "Stream the finished video",
    request: { params: VideoIdParamSchema, query: ContentQuerySchema },
    responses: {
      200: {
        description: "The video",
        content: { "video/mp4": { schema: z.string().openapi({ format: "binary" }) } },
      },
    },
  },
  { also: [409, 502] },
);

const cancel = apiRoute(
  {
    ...common,
    method: "post",
    path: "/videos/{id}/cancel",
    operationId: "cancelVideos",
    summary: "Cancel an unfinished video job (its reservation is released)",
    // The body is optional but still validated (before the handler runs): a malformed request must
    // be answered 400 without cancelling anything.
    request: {
      params: VideoIdParamSchema,
      body: { required: false, content: { "application/json": { schema: CancelBodySchema } } },
    },
    responses: {
      200: jsonContent(VideoJobSchema, "The cancelled job"),
    },
  },
  { also: [409] },
);

async function webhookSettings(d1: D1Database, workspaceId: string) {
  const row = await getDb(d1)
    .select({ url: tables.workspaces.videoWebhookUrl, secret: tables.workspaces.webhookSecretCiphertext })
    .from(tables.workspaces)
    .where(eq(tables.workspaces.id, workspaceId))
    .get();
  if (!row) throw notFound("Workspace not found");
  return { url: row.url, secret_configured: row.secret != null };
}

/** Whose jobs a request may see: its key's workspace's. */
const callerOf = (auth: AuthContext) => ({ accountId: auth.account.id, workspaceId: auth.key.workspaceId });

const jobStub = (env: Bindings, id: string) => env.VIDEO_JOBS.get(env.VIDEO_JOBS.idFromName(id));

// The static /videos/webhook paths are registered before /videos/{id} so they win the match.
export const videosRoutes = createRouter()
  .openapi(getWebhook, async (c) => {
    return c.json({ data: await webhookSettings(c.env.DB, c.get("auth").key.workspaceId) }, 200);
  })
  .openapi(putWebhook, async (c) => {
    const { url } = c.req.valid("json");
    const workspaceId = c.get("auth").key.workspaceId;
    await getDb(c.env.DB)
      .update(tables.workspaces)
      .set({ videoWebhookUrl: url })
      .where(eq(tables.workspaces.id, workspaceId));
    return c.json({ data: await webhookSettings(c.env.DB, workspaceId) }, 200);
  })
  .openapi(rotateSecret, async (c) => {
    const workspaceId = c.get("auth").key.workspaceId;
    const before = await webhookSettings(c.env.DB, workspaceId);
    const secret = await rotateWorkspaceSecret(c.env, workspaceId);
    const previousValidUntil = before.secret_configured
      ? new Date(Date.now() + ROTATION_GRACE_MS).toISOString()
      : null;
    c.header("Cache-Control", "no-store");
    return c.json({ data: { secret, previous_valid_until: previousValidUntil } }, 200);
  })
  .openapi(submit, async (c) => {
    const key = c.req.valid("header")["idempotency-key"];
    const body = c.req.valid("json");
    const headers = {
      sessionId: sessionIdOf(c.req.header("x-session-id"), body.session_id),
      requestId: c.get("requestId"),
      ...attributionOf(c.req.raw.headers),
    };
    const job = await underCurrentPolicy(c, () =>
      submitVideo(c.env, c.get("auth"), body, key, c.executionCtx, headers),
    );
    return c.json(job, 200);
  })
  .openapi(list, async (c) => {
    const page = c.req.valid("query");
    const { rows, more } = await listWorkspaceJobs(c.env.DB, callerOf(c.get("auth")), page);
    const data = rows.map((row) => ({
      ...jobToWire(row),
      model: row.model,
      provider_name: row.provider,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
    }));
    return c.json({ data, next_offset: more ? page.offset + page.limit : null }, 200);
  })
  .openapi(poll, async (c) => {
    const row = await findWorkspaceJob(c.env.DB, callerOf(c.get("auth")), c.req.valid("param").id);
    if (!row) throw notFound("Video job not found");
    return c.json(jobToWire(row), 200);
  })
  .openapi(content, async (c) => {
    const { id } = c.req.valid("param");
    const index = c.req.valid("query").index ?? 0;
    const row = await findWorkspaceJob(c.env.DB, callerOf(c.get("auth")), id);
    if (!row) throw notFound("Video job not found");
    if (row.status !== "completed")
      throw conflict(`The video job is ${row.status}; content exists only once it is completed`);
    const job = await jobStub(c.env, id).contentTarget();
    if (!job) throw new ApiError(500, "The video job has no record of its provider");
    const current = job.current;
    let sent: string[] = [];
    try {
      // No deadline: the body streams for as long as the client reads; a client that leaves aborts it.
      const { adapter, call } = await connect(c.env, job.workspaceId, job.region, current, c.req.raw.signal);
      sent = [call.credential.apiKey];
      const upstream = await adapter.content(current.upstreamJobId, index, call);
      const headers = new Headers({ "Content-Type": upstream.headers.get("Content-Type") ?? "video/mp4" });
      const length = upstream.headers.get("Content-Length");
      if (length) headers.set("Content-Length", length);
      return new Response(upstream.body, { status: 200, headers });
    } catch (err) {
      const error = withoutSecrets(toUpstreamError(err, current.provider, false), sent);
      if (error.status === 404) throw notFound("The provider no longer has this video");
      throw new ApiError(502, error.message, { provider_name: current.provider });
    }
  })
  .openapi(cancel, async (c) => {
    const { id } = c.req.valid("param");
    const row = await findWorkspaceJob(c.env.DB, callerOf(c.get("auth")), id);
    if (!row) throw notFound("Video job not found");
    const outcome = await jobStub(c.env, id).cancel();
    if (!outcome.ok) throw conflict(`The video job is already ${outcome.status}`);
    const fresh = await findWorkspaceJob(c.env.DB, callerOf(c.get("auth")), id);
    return c.json(jobToWire(fresh ?? row), 200);
  });
