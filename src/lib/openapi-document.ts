// The OpenAPI document's top level (info, servers, security, tags) and its shared components; the
// document itself is generated once per isolate from the routes' zod schemas.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { REGIONS } from "../../regions";
import { HEADER_COMPONENTS } from "./openapi-responses";

type DocumentConfig = Parameters<OpenAPIHono["getOpenAPI31Document"]>[0];
type Document = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;

const TAGS: Array<{ name: string; description: string }> = [
  { name: "Gateway", description: "Discovery, health and this reference; no API key needed" },
  { name: "API keys", description: "The calling key, and the account's keys (management keys)" },
  { name: "Credits", description: "The account's credit balance (management keys)" },
  { name: "Chat", description: "Chat completions, streamed or not, from any provider of the model" },
  { name: "Embeddings", description: "Embeddings and the models that make them" },
  { name: "Speech", description: "Text to speech, streamed straight through" },
  { name: "Video generation", description: "Video jobs, their content, and completion webhooks" },
  { name: "Generations", description: "The record of each inference request" },
  { name: "Models", description: "The model catalog" },
  { name: "Presets", description: "Named, versioned request configurations" },
  {
    name: "Guardrails",
    description: "Policies on keys and members, and their assignments (management keys)",
  },
  { name: "BYOK", description: "The account's own provider keys, sealed at rest (management keys)" },
  {
    name: "Workspaces",
    description: "The account's workspaces and their default guardrails (management keys)",
  },
];

export const DOCUMENT_CONFIG: DocumentConfig = {
  openapi: "3.1.0",
  info: {
    title: "Edge model gateway",
    version: "1.0.0",
    description:
      "An OpenRouter-compatible gateway in front of many AI model providers. Name a model; the gateway routes the request to a provider under the key's policy, bills it " +
      "against the account's credits or its own provider keys, and answers in one common shape. Every " +
      "error is `{error: {code, message, metadata?}}` with `code` equal to the HTTP status; every " +
      "response carries `X-Request-Id`.",
    // Not published under an open-source license: the name says so (no SPDX identifier applies).
    license: { name: "Proprietary" },
  },
  servers: Object.values(REGIONS).map((r) => ({
    url: `https://${r.hostname}`,
    description: `The ${r.name} data region`,
  })),
  security: [{ bearer: [] }],
  tags: TAGS,
};

/** Components every route refers to: the bearer scheme and the shared response headers. */
export function registerComponents(registry: OpenAPIHono["openAPIRegistry"]): void {
  registry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An API key (`sk-gw-v1-...`); management operations need a management key",
  });
  for (const [name, header] of Object.entries(HEADER_COMPONENTS)) {
    registry.registerComponent("headers", name, header);
  }
}

/** The document, generated on first use and kept for the isolate's life (the routes never change). */
export function documentOf(app: { getOpenAPI31Document(config: DocumentConfig): Document }): () => Document {
  let doc: Document | undefined;
  return () => {
    doc ??= withoutNullParameters(app.getOpenAPI31Document(DOCUMENT_CONFIG));
    return doc;
  };
}

type Parameter = { in?: string; schema?: { type?: string | string[] } };

/**
 * A query or path parameter is text or absent, never null: the generator writes a coerced number with
 * a default as `["integer", "null"]`, which a client generator would read as "send null".
 */
function withoutNullParameters(doc: Document): Document {
  for (const ops of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(ops as Record<string, { parameters?: Parameter[] }>)) {
      for (const p of op?.parameters ?? []) {
        const type = p.schema?.type;
        if (!Array.isArray(type) || !type.includes("null")) continue;
        const rest = type.filter((t) => t !== "null");
        p.schema!.type = rest.length === 1 ? rest[0] : rest;
      }
    }
  }
  return doc;
}
