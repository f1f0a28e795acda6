// The public routes: the root's pointers to the docs, health, the OpenAPI document and its reference page.
// None needs an API key; none touches D1 or a Durable Object.
import { z } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import type { AppEnv } from "../env";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { DOCUMENT_CONFIG } from "../lib/openapi-document";

export const API_PREFIX = "/api/v1";
export const DOCS_PATH = `${API_PREFIX}/docs`;
export const DOCUMENT_PATH = `${API_PREFIX}/openapi.json`;

/** The page and the document change only with a deploy: browsers and caches may keep them a while. */
const CACHEABLE = "public, max-age=300";

const common = { tags: ["Gateway"], security: [] };

const IndexSchema = z
  .object({
    name: z.string(),
    region: z.string().openapi({ description: "The data region of the deployment that answered" }),
    api: z.url().openapi({ description: "The API's base URL" }),
    docs: z.url().openapi({ description: "The interactive API reference" }),
    openapi: z.url().openapi({ description: "The OpenAPI document" }),
    health: z.url(),
  })
  .openapi("GatewayIndex");

const HealthSchema = z
  .object({ status: z.literal("ok"), region: z.string() })
  .openapi("Health", { description: "The Worker is up; it checks no database or Durable Object" });

const indexRoute = (path: string, operationId: string) =>
  apiRoute({
    ...common,
    method: "get",
    path,
    operationId,
    summary: "Where the API, its reference and its health check are",
    responses: { 200: jsonContent(IndexSchema, "Links to the API, its docs and health") },
  });

const health = apiRoute({
  ...common,
  method: "get",
  path: "/health",
  operationId: "getHealth",
  summary: "Liveness: answers without an API key and without touching storage",
  responses: { 200: jsonContent(HealthSchema, "The Worker is up") },
});

const document = apiRoute({
  ...common,
  method: "get",
  path: DOCUMENT_PATH,
  operationId: "getOpenApiDocument",
  summary: "This OpenAPI 3.1 document",
  responses: {
    200: jsonContent(z.record(z.string(), z.unknown()), "The OpenAPI 3.1 document"),
  },
});

const docs = apiRoute({
  ...common,
  method: "get",
  path: DOCS_PATH,
  operationId: "getApiReference",
  summary: "The interactive API reference (Scalar), rendered from this document",
  responses: {
    200: {
      description: "An HTML page that loads the Scalar viewer and this document",
      content: { "text/html": { schema: z.string() } },
    },
  },
});

function index(url: string, region: string) {
  const origin = new URL(url).origin;
  return {
    name: "Edge model gateway",
    region,
    api: `${origin}${API_PREFIX}`,
    docs: `${origin}${DOCS_PATH}`,
    openapi: `${origin}${DOCUMENT_PATH}`,
    health: `${origin}/health`,
  };
}

/** The page tries requests against the deployment that served it first (local runs included), then the regions. */
const reference = Scalar<AppEnv>((c) => ({
  url: DOCUMENT_PATH,
  pageTitle: "Edge model gateway API reference",
  servers: [
    { url: new URL(c.req.url).origin, description: "This deployment" },
    ...(DOCUMENT_CONFIG.servers ?? []),
  ],
}));

/** `document` gives the generated OpenAPI document (built once per isolate by the caller). */
export function metaRoutes(getDocument: () => unknown) {
  let json: string | undefined;
  return createRouter()
    .openapi(indexRoute("/", "getIndex"), (c) => c.json(index(c.req.url, c.env.REGION), 200))
    .openapi(indexRoute(API_PREFIX, "getApiIndex"), (c) => c.json(index(c.req.url, c.env.REGION), 200))
    .openapi(health, (c) => {
      c.header("Cache-Control", "no-store");
      return c.json({ status: "ok" as const, region: c.env.REGION }, 200);
    })
    .openapi(document, (c) => {
      json ??= JSON.stringify(getDocument());
      c.header("Cache-Control", CACHEABLE);
      c.header("Content-Type", "application/json; charset=UTF-8");
      return c.body(json, 200) as never;
    })
    .openapi(docs, async (c) => {
      c.header("Cache-Control", CACHEABLE);
      // Scalar's handler always answers (it never calls `next`).
      return (await reference(c, async () => {})) as Response;
    });
}
