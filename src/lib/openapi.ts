// Routers share one validation hook, so every zod failure becomes a 400 envelope naming the field;
// routes are declared with `apiRoute`, which adds the shared error statuses and response headers.
import { createRoute, OpenAPIHono, type RouteConfig, type z } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { ErrorEnvelopeSchema } from "../schemas/common";
import { badRequest } from "./errors";
import { type OperationTraits, withSharedResponses } from "./openapi-responses";
import { explainedIssue } from "./zod-issues";

const TARGET_NAMES: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

export function describeZodError(target: string, error: z.ZodError): string {
  const where = TARGET_NAMES[target] ?? target;
  const issues = error.issues.slice(0, 5).map((raw) => {
    const issue = explainedIssue(raw);
    const path = issue.path.length ? `${where}.${issue.path.map(String).join(".")}` : where;
    return `${path}: ${issue.message}`;
  });
  return `Invalid request: ${issues.join("; ")}`;
}

/** A query parameter the schema refused whose value came as a list (it was given more than once). */
function repeatedParameter(data: unknown, error: z.ZodError): string | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const query = data as Record<string, unknown>;
  for (const issue of error.issues) {
    const name = issue.path[0];
    if (typeof name === "string" && Array.isArray(query[name])) return name;
  }
  return undefined;
}

export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      c.set("bodyJudged", true);
      if (!result.success) {
        // The validator hands the hook the input too (`data`), though its failure type does not say so.
        const input = (result as { data?: unknown }).data;
        const repeated = result.target === "query" ? repeatedParameter(input, result.error) : undefined;
        // No query parameter takes a list: one given twice reached the schema as two values.
        if (repeated !== undefined) throw badRequest(`Query parameter '${repeated}' is given more than once`);
        throw badRequest(describeZodError(result.target, result.error), {
          issues: result.error.issues.slice(0, 20).map((raw) => {
            const i = explainedIssue(raw);
            return { path: i.path.map(String), message: i.message };
          }),
        });
      }
    },
  });
}

/**
 * `createRoute` with an `operationId` required, and the error statuses and headers the gateway's shared
 * layers answer (lib/openapi-responses.ts) added to the route's own responses. Inference routes pass
 * `{ inference: true }`; statuses only this route answers go in `also`.
 */
export function apiRoute<
  P extends string,
  R extends Omit<RouteConfig, "path"> & { path: P; operationId: string },
>(config: R, traits: OperationTraits = {}) {
  return createRoute({ ...config, responses: withSharedResponses(config, traits) }) as ReturnType<
    typeof createRoute<P, R>
  >;
}

/** Error responses with the envelope schema, for a route not declared with `apiRoute`. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: `Error ${s}`, content: { "application/json": { schema: ErrorEnvelopeSchema } } },
    ]),
  );
}

export function jsonContent<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } };
}
