// The root app: request id, route guard, auth, region ingress, body rules, route mounts, errors, OpenAPI.
import { OpenAPIHono } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./env";
import { ApiError, errorEnvelope } from "./lib/errors";
import { createRouter } from "./lib/openapi";
import { RouteTable } from "./lib/route-table";
import { abuseProtection } from "./middleware/abuse";
import { requireAuth } from "./middleware/auth";
import { jsonBody } from "./middleware/body";
import { enforceRegion } from "./middleware/region";
import { requestId } from "./middleware/request-id";
import { activityRoutes } from "./routes/activity";
import { byokRoutes } from "./routes/byok";
import { chatRoutes } from "./routes/chat";
import { consoleRoutes } from "./routes/console";
import { creditsRoutes } from "./routes/credits";
import { discoveryRoutes } from "./routes/discovery";
import { embeddingsRoutes } from "./routes/embeddings";
import { generationsRoutes } from "./routes/generations";
import { guardrailsRoutes } from "./routes/guardrails";
import { keyRoutes } from "./routes/key";
import { keysRoutes } from "./routes/keys";
import { modelsRoutes } from "./routes/models";
import { presetsRoutes } from "./routes/presets";
import { speechRoutes } from "./routes/speech";
import { videosRoutes } from "./routes/videos";

export const API_PREFIX = "/api/v1";
/** Paths served without an API key. */
const PUBLIC_PATHS = new Set([`${API_PREFIX}/openapi.json`]);

const api = createRouter()
  .route("/", keyRoutes)
  .route("/", keysRoutes)
  .route("/", presetsRoutes)
  .route("/", guardrailsRoutes)
  .route("/", byokRoutes)
  .route("/", chatRoutes)
  .route("/", embeddingsRoutes)
  .route("/", generationsRoutes)
  .route("/", activityRoutes)
  .route("/", speechRoutes)
  // Before videos: GET /videos/models must not be taken for GET /videos/{id}.
  .route("/", modelsRoutes)
  .route("/", discoveryRoutes)
  .route("/", videosRoutes)
  .route("/", creditsRoutes);

const app = new OpenAPIHono<AppEnv>();
const routes = new RouteTable(() => app.routes);

app.use("*", requestId);

app.use("*", async (c, next) => {
  const methods = routes.methodsFor(c.req.path);
  if (methods.length === 0) throw new ApiError(404, `No route for ${c.req.method} ${c.req.path}`);
  if (!methods.includes(c.req.method)) {
    throw new ApiError(405, `Method ${c.req.method} is not allowed on ${c.req.path}`, undefined, {
      Allow: methods.join(", "),
    });
  }
  await next();
});

app.use(`${API_PREFIX}/*`, async (c, next) => {
  if (PUBLIC_PATHS.has(c.req.path)) return next();
  await requireAuth(c, async () => {
    await abuseProtection(c, async () => {
      await enforceRegion(c, async () => {
        await jsonBody(c, next);
      });
    });
  });
});

app.route(API_PREFIX, api);
app.route("/", consoleRoutes);

app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
app.doc31(`${API_PREFIX}/openapi.json`, {
  openapi: "3.1.0",
  info: { title: "Edge model gateway", version: "1.0.0" },
});

app.notFound((c) => c.json(errorEnvelope(404, `No route for ${c.req.method} ${c.req.path}`), 404));

app.onError((err, c) => {
  const auth = c.get("auth");
  const userId = auth ? { user_id: auth.key.creatorUserId } : {};
  if (err instanceof ApiError) {
    for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
    return c.json(
      { ...errorEnvelope(err.status, err.message, err.metadata), ...userId },
      err.status as ContentfulStatusCode,
    );
  }
  if (err instanceof HTTPException && err.status < 500) {
    const status = err.status as ContentfulStatusCode;
    return c.json({ ...errorEnvelope(status, err.message || "Bad request"), ...userId }, status);
  }
  console.error(
    JSON.stringify({
      level: "error",
      request_id: c.get("requestId"),
      path: c.req.path,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    }),
  );
  return c.json({ ...errorEnvelope(500, "Internal server error"), ...userId }, 500);
});

export default app;
