// The root app: request id and log line, route guard, CORS, auth, region ingress, body rules, route
// mounts, errors, the OpenAPI document and its reference page.
import { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./env";
import { ByokConfigError } from "./lib/byok-crypto";
import { ApiError, anthropicErrorEnvelope, errorEnvelope } from "./lib/errors";
import { log } from "./lib/log";
import { createRouter } from "./lib/openapi";
import { documentOf, registerComponents } from "./lib/openapi-document";
import { RouteTable } from "./lib/route-table";
import { abuseProtection } from "./middleware/abuse";
import { requireAuth } from "./middleware/auth";
import { bodyValidationFailure, jsonBody } from "./middleware/body";
import { enforceRegion } from "./middleware/region";
import { requestId, setHeader } from "./middleware/request-id";
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
import { MESSAGES_PATH, messagesRoutes } from "./routes/messages";
import { COUNT_TOKENS_PATH, countTokensRoutes } from "./routes/messages-count-tokens";
import { API_PREFIX, DOCS_PATH, DOCUMENT_PATH, metaRoutes } from "./routes/meta";
import { modelsRoutes } from "./routes/models";
import { presetsRoutes } from "./routes/presets";
import { responsesRoutes } from "./routes/responses";
import { speechRoutes } from "./routes/speech";
import { videosRoutes } from "./routes/videos";
import { workspacesRoutes } from "./routes/workspaces";

export { API_PREFIX } from "./routes/meta";

/** Paths under the API prefix served without an API key (`/` and `/health` are outside it). */
const PUBLIC_PATHS = new Set([API_PREFIX, DOCUMENT_PATH, DOCS_PATH]);

const api = createRouter()
  .route("/", keyRoutes)
  .route("/", keysRoutes)
  .route("/", presetsRoutes)
  .route("/", guardrailsRoutes)
  .route("/", workspacesRoutes)
  .route("/", byokRoutes)
  .route("/", chatRoutes)
  .route("/", responsesRoutes)
  .route("/", messagesRoutes)
  .route("/", countTokensRoutes)
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
// Anthropic's SDK reads the request id from `request-id` (`_request_id`, `APIError.requestID`).
for (const path of [MESSAGES_PATH, COUNT_TOKENS_PATH]) {
  app.use(`${API_PREFIX}${path}`, async (c, next) => {
    await next();
    setHeader(c, "request-id", c.get("requestId"));
  });
}

/** A browser's CORS preflight: OPTIONS with an Origin, answered by `browsers` below (its path served). */
const isPreflight = (req: { method: string; header(name: string): string | undefined }) =>
  req.method === "OPTIONS" && req.header("origin") !== undefined;

/**
 * Browsers may call the API from any origin with a key in a header (no cookies are read, so no
 * credentials are allowed): a preflight is answered before auth with the methods the path serves, and
 * every answer (404 and 405 included, so the page reads the error rather than a CORS failure) exposes
 * the headers a client reads. Only requests that carry an Origin pay for it (SDKs on servers send none).
 */
const browsers = cors({
  origin: "*",
  maxAge: 86_400,
  allowMethods: (_origin, c) => [...routes.methodsFor(c.req.path)],
  exposeHeaders: [
    "X-Request-Id",
    "X-Generation-Id",
    "Server-Timing",
    "Retry-After",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
  ],
});
app.use(`${API_PREFIX}/*`, (c, next) => {
  if (c.req.header("origin") === undefined) return next();
  // A preflight of a path nothing serves is its 404, readable by the page.
  if (isPreflight(c.req) && routes.methodsFor(c.req.path).length === 0) {
    c.header("Access-Control-Allow-Origin", "*");
    return next();
  }
  return browsers(c, next);
});

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
app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
  type: "apiKey",
  in: "header",
  name: "x-api-key",
  description: "The API key in `x-api-key` (Anthropic clients); used when no Authorization header is sent",
});
app.route("/", metaRoutes(documentOf(app)));
registerComponents(app.openAPIRegistry);

app.notFound((c) => c.json(errorEnvelope(404, `No route for ${c.req.method} ${c.req.path}`), 404));

/** Paths whose clients speak the Anthropic Messages API: their errors use its envelope. */
const ANTHROPIC_PATHS = new Set([`${API_PREFIX}${MESSAGES_PATH}`, `${API_PREFIX}${COUNT_TOKENS_PATH}`]);

app.onError((rawErr, c) => {
  const err = bodyValidationFailure(rawErr, c) ?? rawErr;
  const auth = c.get("auth");
  const userId = auth ? { user_id: auth.key.creatorUserId } : {};
  const envelope = (status: number, message: string, metadata?: Record<string, unknown>) =>
    ANTHROPIC_PATHS.has(c.req.path)
      ? anthropicErrorEnvelope(status, message, metadata, c.get("requestId"))
      : { ...errorEnvelope(status, message, metadata), ...userId };
  if (err instanceof ApiError) {
    for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
    return c.json(envelope(err.status, err.message, err.metadata), err.status as ContentfulStatusCode);
  }
  if (err instanceof ByokConfigError) {
    // Storing or opening a provider key needs the master keys: the operator's secret is wrong.
    log("error", {
      message: "BYOK_MASTER_KEYS is misconfigured",
      request_id: c.get("requestId"),
      error: err.message,
    });
    return c.json(
      envelope(
        503,
        "Provider keys cannot be stored or opened: the gateway's BYOK encryption keys are misconfigured (its operator must correct BYOK_MASTER_KEYS)",
      ),
      503,
    );
  }
  if (err instanceof HTTPException && err.status < 500) {
    const status = err.status as ContentfulStatusCode;
    return c.json(envelope(status, err.message || "Bad request"), status);
  }
  // The detail goes into the request's one log line (lib/request-log.ts), never to the caller.
  const trace = c.get("trace");
  const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const stack = err instanceof Error ? err.stack : undefined;
  if (trace) Object.assign(trace, { error, stack });
  else log("error", { message: "unexpected error", request_id: c.get("requestId"), error, stack });
  if (isTransient(err)) {
    // The ledger or another platform service did not answer (a Durable Object reset by a deploy, a
    // connection lost): the caller may retry, as after a 503 from a provider.
    c.header("Retry-After", "1");
    return c.json(envelope(503, "A service the gateway depends on could not be reached; retry shortly"), 503);
  }
  return c.json(envelope(500, "Internal server error"), 500);
});

/**
 * Errors of the platform's own services that a retry may not meet: Cloudflare marks them `retryable`
 * (a Durable Object reset or overloaded, a connection lost); workerd's text says so locally, and a
 * regional `wrangler dev` whose global worker (the ledger's home) is not running says it is not found.
 */
function isTransient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if ((err as { retryable?: unknown }).retryable === true) return true;
  return /Network connection lost|Durable Object reset|Durable Object is overloaded|internal error; reference|not found\. Make sure it is running locally/i.test(
    err.message,
  );
}

export default app;
