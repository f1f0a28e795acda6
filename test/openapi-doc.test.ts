// The OpenAPI document: every served route is in it with an operationId (the SDK's name where it has
// one), the shared statuses and headers are declared, statuses the routes really answer are listed,
// and the public routes (index, health, reference page) answer without a key.
/// <reference types="vite/client" />
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { REGIONS } from "../regions";
import app, { API_PREFIX } from "../src/app";
import { SHARED_STATUSES } from "../src/lib/openapi-responses";
import { createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";

interface Op {
  operationId?: string;
  security?: unknown[];
  responses: Record<string, { headers?: Record<string, { $ref: string }> }>;
}
interface Doc {
  servers: Array<{ url: string }>;
  security: unknown[];
  info: { license?: { name: string } };
  paths: Record<string, Record<string, Op>>;
  components: { headers: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

const SDK_FUNCS = import.meta.glob<string>("../node_modules/@openrouter/sdk/esm/funcs/*.js", {
  query: "?raw",
  import: "default",
  eager: true,
});

/** `@openrouter/sdk`'s operationID for each "METHOD /path" it calls. */
function sdkOperationIds(): Map<string, string> {
  const ids = new Map<string, string>();
  for (const text of Object.values(SDK_FUNCS)) {
    const id = /operationID: "([^"]+)"/.exec(text)?.[1];
    const path = /pathToFunc\("([^"]+)"/.exec(text)?.[1];
    const method = /method: "([A-Z]+)"/.exec(text)?.[1];
    if (id && path && method) ids.set(`${method} ${path.replace(/\{[^}]+\}/g, "{}")}`, id);
  }
  return ids;
}

async function documentOf(): Promise<Doc> {
  const res = await call("/openapi.json");
  expect(res.status).toBe(200);
  return (await res.json()) as Doc;
}

const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );

const toTemplate = (honoPath: string) => honoPath.replace(/:([A-Za-z_]+)/g, "{$1}");

describe("the OpenAPI document", () => {
  it("lists every route the app serves, each method with its operation", async () => {
    const doc = await documentOf();
    // The console is a web page (src/console), not an API operation.
    const served = app.routes.filter((r) => r.method !== "ALL" && !r.path.startsWith("/console"));
    expect(served.length).toBeGreaterThan(40);
    const missing = served
      .map((r) => `${r.method} ${toTemplate(r.path)}`)
      .filter((name) => {
        const [method, path] = name.split(" ") as [string, string];
        return !doc.paths[path]?.[method.toLowerCase()];
      });
    expect(missing).toEqual([]);
  });

  it("names every operation once, as @openrouter/sdk names it where the SDK has it", async () => {
    const doc = await documentOf();
    const sdk = sdkOperationIds();
    expect(sdk.size).toBeGreaterThan(50);
    const ids = operations(doc).map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    let matched = 0;
    for (const { method, path, op } of operations(doc)) {
      const sdkId = sdk.get(`${method} ${path.slice(API_PREFIX.length).replace(/\{[^}]+\}/g, "{}")}`);
      if (!sdkId) continue;
      matched++;
      expect(`${method} ${path} ${op.operationId}`).toBe(`${method} ${path} ${sdkId}`);
    }
    expect(matched).toBeGreaterThan(35);
  });

  it("has a server per regional hostname, bearer security by default, and a license", async () => {
    const doc = await documentOf();
    expect(doc.servers.map((s) => s.url).sort()).toEqual(
      Object.values(REGIONS)
        .map((r) => `https://${r.hostname}`)
        .sort(),
    );
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.info.license?.name).toBeTruthy();
    // The public routes opt out of the default.
    expect(doc.paths["/health"]?.get?.security).toEqual([]);
    expect(doc.paths[`${API_PREFIX}/docs`]?.get?.security).toEqual([]);
  });

  it("declares the shared statuses and headers on every operation from the one declaration", async () => {
    const doc = await documentOf();
    for (const { method, path, op } of operations(doc)) {
      const statuses = Object.keys(op.responses).map(Number);
      const name = `${method} ${path}`;
      for (const s of SHARED_STATUSES.every) expect(statuses, name).toContain(s);
      if ((op.security?.length ?? 1) > 0)
        for (const s of SHARED_STATUSES.secured) expect(statuses, name).toContain(s);
      if (/\{/.test(path)) for (const s of SHARED_STATUSES.params) expect(statuses, name).toContain(s);
      if (["POST", "PUT", "PATCH"].includes(method)) expect(statuses, name).toContain(413);
      for (const [status, response] of Object.entries(op.responses)) {
        expect(response.headers?.["X-Request-Id"], `${name} ${status}`).toEqual({
          $ref: "#/components/headers/RequestId",
        });
      }
      if (op.responses["429"]) {
        expect(Object.keys(op.responses["429"].headers ?? {})).toEqual(
          expect.arrayContaining([
            "Retry-After",
            "X-RateLimit-Limit",
            "X-RateLimit-Remaining",
            "X-RateLimit-Reset",
          ]),
        );
      }
      expect(Object.keys(op.responses["405"]?.headers ?? {}), name).toContain("Allow");
    }
    for (const path of ["/chat/completions", "/embeddings", "/audio/speech"]) {
      const op = doc.paths[`${API_PREFIX}${path}`]!.post!;
      for (const s of SHARED_STATUSES.inference)
        expect(Object.keys(op.responses).map(Number), path).toContain(s);
      expect(Object.keys(op.responses["200"]!.headers!)).toEqual(
        expect.arrayContaining(["X-Request-Id", "X-Generation-Id", "Server-Timing"]),
      );
      // Errors after providers were tried name the record; refusals before any attempt do not.
      for (const s of ["502", "503", "524"])
        expect(Object.keys(op.responses[s]!.headers!), `${path} ${s}`).toContain("X-Generation-Id");
      expect(Object.keys(op.responses["402"]!.headers!), path).not.toContain("X-Generation-Id");
    }
    for (const name of ["RequestId", "GenerationId", "ServerTiming", "RetryAfter", "RateLimitReset"]) {
      expect(doc.components.headers[name], name).toBeDefined();
    }
  });

  it("lists the statuses these requests really answer", async () => {
    const doc = await documentOf();
    const acct = await createAccount({ creditsUsd: 1 });
    const declared = (method: string, path: string) =>
      Object.keys(doc.paths[`${API_PREFIX}${path}`]?.[method]?.responses ?? {}).map(Number);
    const cases: Array<[string, string, Promise<Response>]> = [
      ["get", "/keys", call(`/keys?workspace_id=${crypto.randomUUID()}`, { key: acct.managementKey })],
      ["get", "/keys", call("/keys", { key: acct.apiKey })],
      ["get", "/keys", call("/keys")],
      [
        "post",
        "/keys",
        call("/keys", { method: "POST", key: acct.managementKey, body: "x".repeat(2 << 20) }),
      ],
      ["post", "/keys", call("/keys", { method: "POST", key: acct.managementKey, body: "{" })],
      ["get", "/keys/{hash}", call(`/keys/${"0".repeat(64)}`, { key: acct.managementKey })],
      ["get", "/key", call("/key", { key: acct.apiKey, region: "europe", headers: {} })],
      [
        "post",
        "/embeddings",
        call("/embeddings", { method: "POST", key: acct.apiKey, body: { model: "no/such", input: "x" } }),
      ],
      [
        "post",
        "/embeddings",
        call("/embeddings", {
          method: "POST",
          key: acct.apiKey,
          body: { model: "sandbox/embed-always-503", input: "x" },
        }),
      ],
    ];
    for (const [method, path, pending] of cases) {
      const res = await pending;
      expect(declared(method, path), `${method.toUpperCase()} ${path} answered ${res.status}`).toContain(
        res.status,
      );
    }
    // A wrong method answers 405 with Allow, and 405 is declared on the path's operations.
    const wrong = await call("/key", { method: "DELETE", key: acct.apiKey });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("Allow")).toContain("GET");
    expect(declared("get", "/key")).toContain(405);
  });

  it("writes every pattern as a JSON Schema regex a validator can use: no JavaScript flags, each one compiles", async () => {
    const doc = await documentOf();
    const patterns: string[] = [];
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === "object") {
        for (const [k, v] of Object.entries(node)) {
          if (k === "pattern" && typeof v === "string") patterns.push(v);
          else walk(v);
        }
      }
    };
    walk(doc);
    expect(patterns.length).toBeGreaterThan(0);
    for (const p of patterns) {
      // A flag (`/i`) cannot travel in JSON Schema: one that leaked makes the pattern match nothing.
      expect(p, p).not.toMatch(/\/[dgimsuvy]+$/);
      expect(() => new RegExp(p, "u"), p).not.toThrow();
    }
    const models = (
      doc.paths as Record<
        string,
        Record<string, { parameters?: Array<{ name: string; schema: { pattern?: string } }> }>
      >
    )["/api/v1/models"]!.get!;
    const authors = models.parameters!.find((x) => x.name === "model_authors")!.schema.pattern!;
    expect(new RegExp(authors).test("sandbox,OpenAI")).toBe(true);
  });

  it("states the bounds the server checks: speech input length, query offsets as plain integers", async () => {
    interface Schema {
      $ref?: string;
      type?: string | string[];
      maxLength?: number;
      properties?: Record<string, Schema>;
    }
    interface Operation {
      parameters?: Array<{ in: string; name: string; schema?: Schema }>;
      requestBody?: { content: Record<string, { schema: Schema }> };
    }
    const raw = (await (await call("/openapi.json")).json()) as {
      paths: Record<string, Record<string, Operation>>;
      components: { schemas: Record<string, Schema> };
    };
    const resolve = (schema: Schema) =>
      schema.$ref ? raw.components.schemas[schema.$ref.split("/").pop()!]! : schema;
    const speech = resolve(
      raw.paths[`${API_PREFIX}/audio/speech`]!.post!.requestBody!.content["application/json"]!.schema,
    );
    expect(speech.properties?.input?.maxLength).toBe(100_000);
    for (const [path, ops] of Object.entries(raw.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? []) {
          if (p.in !== "query") continue;
          const type = p.schema?.type;
          expect(Array.isArray(type) && type.includes("null"), `${method} ${path} ?${p.name}`).toBe(false);
        }
      }
    }
  });

  it("is served without a key, cacheable", async () => {
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(res.headers.get("Cache-Control")).toMatch(/public, max-age=\d+/);
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
  });
});

describe("the API reference page", () => {
  it("GET /api/v1/docs: HTML that renders this document, without a key, cacheable", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Cache-Control")).toMatch(/public, max-age=\d+/);
    const html = await res.text();
    expect(html).toContain("<title>Edge model gateway API reference</title>");
    expect(html).toContain(`"url": "${API_PREFIX}/openapi.json"`);
    expect(html).toContain("createApiReference");
    // "Try it" goes to the deployment that served the page first, then to the regional hostnames.
    expect(html).toContain('"url": "http://gateway.test"');
    expect(html).toContain('"url": "https://eu.gateway.example.com"');
  });
});

describe("the index and health routes", () => {
  it("GET / and GET /api/v1 point at the docs, the document and health", async () => {
    for (const path of ["/", API_PREFIX]) {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request(`http://gateway.test${path}`),
        { ...env, REGION: "europe" },
        ctx,
      );
      await waitOnExecutionContext(ctx);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toEqual({
        name: "Edge model gateway",
        region: "europe",
        api: "http://gateway.test/api/v1",
        docs: "http://gateway.test/api/v1/docs",
        openapi: "http://gateway.test/api/v1/openapi.json",
        health: "http://gateway.test/health",
      });
    }
  });

  it("GET /health answers without a key and touches no D1 or Durable Object", async () => {
    const touched: string[] = [];
    const guarded = new Proxy(
      { ...env, REGION: "us" },
      {
        get(target, name, receiver) {
          if (name === "DB" || name === "LEDGER" || name === "VIDEO_JOBS") touched.push(String(name));
          return Reflect.get(target, name, receiver);
        },
      },
    );
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request("http://gateway.test/health"), guarded, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", region: "us" });
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(touched).toEqual([]);
  });
});
