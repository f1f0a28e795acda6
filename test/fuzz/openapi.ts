// Reads the served OpenAPI document and lists every operation the fuzz suite drives.
import { API_PREFIX } from "../../src/app";
import { call } from "../helpers/http";

/** The JSON Schema subset the document uses (zod's output for OpenAPI 3.1). */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  /** The path template under the API prefix, e.g. `/keys/{hash}`. */
  path: string;
  parameters: Parameter[];
  body?: { required: boolean; schema: JsonSchema };
  secured: boolean;
  /** The response statuses the document lists. */
  statuses: number[];
  /** Calls a provider: a failed upstream may legitimately answer 502/503/504/524/529. */
  inference: boolean;
}

interface RawOperation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  security?: unknown[];
  responses?: Record<string, unknown>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, RawOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

const OUTSIDE_THE_API = new Set(["/", "/health"]);

const INFERENCE_PATHS = new Set([
  "/chat/completions",
  "/responses",
  "/messages",
  "/messages/count_tokens",
  "/embeddings",
  "/audio/speech",
  "/videos",
]);

export async function loadDocument(): Promise<OpenApiDocument> {
  const res = await call("/openapi.json");
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return (await res.json()) as OpenApiDocument;
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [fullPath, methods] of Object.entries(doc.paths)) {
    // `/` and `/health` take no input and answer the same to anyone: test/openapi-doc.test.ts covers them.
    if (OUTSIDE_THE_API.has(fullPath)) continue;
    if (!fullPath.startsWith(API_PREFIX)) throw new Error(`path outside ${API_PREFIX}: ${fullPath}`);
    const path = fullPath.slice(API_PREFIX.length);
    for (const [method, raw] of Object.entries(methods)) {
      const upper = method.toUpperCase();
      const json = raw.requestBody?.content["application/json"];
      ops.push({
        method: upper,
        path,
        parameters: raw.parameters ?? [],
        body: json ? { required: raw.requestBody?.required === true, schema: json.schema } : undefined,
        secured: (raw.security?.length ?? 0) > 0,
        statuses: Object.keys(raw.responses ?? {}).map(Number),
        inference: upper === "POST" && INFERENCE_PATHS.has(path),
      });
    }
  }
  return ops;
}

/** Resolves a local `$ref` (`#/components/schemas/Name`); other schemas come back as they are. */
export function resolver(doc: OpenApiDocument): (schema: JsonSchema) => JsonSchema {
  return (schema) => {
    let s = schema;
    for (let hops = 0; s.$ref; hops++) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(s.$ref)?.[1];
      const target = name ? doc.components?.schemas?.[name] : undefined;
      if (!target || hops > 16) throw new Error(`unresolvable $ref ${s.$ref}`);
      s = target;
    }
    return s;
  };
}

export const operationName = (op: Pick<Operation, "method" | "path">) => `${op.method} ${op.path}`;
