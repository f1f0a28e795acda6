// One arbitrary per operation: method, path parameters, query, headers and body, valid-looking or hostile.
import fc from "fast-check";
import type { DataRegion } from "../../regions";
import { BODY_LIMITS } from "../../src/middleware/body";
import { hints, pick } from "./domain";
import type { Fixture, FuzzAccount } from "./fixture";
import { type BodyCase, mutatedValueBody, rawBody, validBody } from "./mutations";
import type { Operation, Parameter } from "./openapi";
import { arbitraryOf, type SchemaContext } from "./schema-arbitrary";

/** Who the request claims to be. */
export type Caller =
  | "management-a"
  | "regular-a"
  | "management-b"
  | "regular-b"
  | "disabled-a"
  | "expired-a"
  | "unknown"
  | "malformed"
  | "none";

export interface FuzzCase {
  method: string;
  /** Path and query under the API prefix, as sent. */
  url: string;
  headers: Record<string, string>;
  body: BodyCase | undefined;
  caller: Caller;
  /** Whose resource the path or query names, when it names a fixture resource. */
  target: "a" | "b" | null;
  /** The accounts whose resources the body names (ids, key hashes, user ids, `@preset/<slug>`). */
  mentions: Array<"a" | "b">;
  /** The regional deployment the request arrives through. */
  region: DataRegion;
}

type Target = "a" | "b" | null;

/** Operations that create the resource their path names: any account may use any name there. */
const CREATES_BY_NAME = new Set([
  "POST /presets/{slug}/responses",
  "POST /presets/{slug}/chat/completions",
  "POST /presets/{slug}/messages",
]);

/** Hostile strings for any path segment or query value. */
const hostileText = fc.oneof(
  pick([
    "",
    ".",
    "..",
    "%2e%2e",
    "%00",
    "%2F",
    "..%2F..%2Fkeys",
    "%",
    "%zz",
    "%E2%80%AE",
    "null",
    "undefined",
    "0",
    "-1",
    "1e309",
    "NaN",
    "true",
    "[]",
    "{}",
    "__proto__",
    "constructor",
    "' OR 1=1 --",
    "a;b",
    "a,b",
  ]),
  fc.constantFrom(300, 10_000).map((n) => "x".repeat(n)),
  fc.string({ maxLength: 30, unit: "binary" }).map(encodeURIComponent),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
);

interface PathValue {
  segment: string;
  target: Target;
}

/** Paths naming a catalog model (`/model/{author}/{slug}`, `/models/{author}/{slug}/endpoints`). */
const namesCatalogModel = (path: string) => path.startsWith("/models/") || path.startsWith("/model/");

function pathParam(
  op: Operation,
  param: Parameter,
  fx: Fixture,
  ctx: SchemaContext,
): fc.Arbitrary<PathValue> {
  const own = (acct: FuzzAccount, tag: "a" | "b"): string[] => {
    // A model (or its endpoints) names the shared catalog, no account's resource.
    if (namesCatalogModel(op.path)) return [];
    if (param.name === "hash") return acct.keyHashes;
    if (param.name === "slug") return [acct.presetSlug];
    if (param.name === "version") return [];
    if (param.name === "id" && op.path === "/generation") return [acct.generationId];
    if (op.path.startsWith("/guardrails")) return [acct.guardrailId, acct.defaultGuardrailId];
    if (op.path.startsWith("/byok")) return [acct.byokId];
    if (op.path.startsWith("/workspaces")) return [acct.workspaceId];
    if (op.path.startsWith("/videos")) return [acct.videoJobId];
    throw new Error(`no fixture resource for ${tag}'s ${param.name} in ${op.path}`);
  };
  const creates = CREATES_BY_NAME.has(`${op.method} ${op.path}`);
  const ids = (tag: "a" | "b") => {
    const values = own(tag === "a" ? fx.a : fx.b, tag);
    const target = creates ? null : tag;
    return values.length
      ? [{ weight: tag === "a" ? 6 : 2, arbitrary: pick(values).map((segment) => ({ segment, target })) }]
      : [];
  };
  const untargeted = (arb: fc.Arbitrary<string>) =>
    arb.map((segment): PathValue => ({ segment, target: null }));
  // A preset's versions are numbered from 1: without this, valid version paths would be rare.
  const versions =
    param.name === "version" ? [{ weight: 4, arbitrary: untargeted(pick(["1", "2", "01"])) }] : [];
  // Catalog model names, so that paths naming a real model are common.
  const catalog = namesCatalogModel(op.path)
    ? [
        {
          weight: 4,
          arbitrary: untargeted(
            pick(param.name === "author" ? ["openai", "sandbox"] : ["gpt-5", "chat-echo"]),
          ),
        },
      ]
    : [];
  return fc.oneof(
    ...ids("a"),
    ...ids("b"),
    ...versions,
    ...catalog,
    {
      weight: 2,
      arbitrary: untargeted(arbitraryOf(param.schema, ctx).map((v) => encodeURIComponent(String(v)))),
    },
    { weight: 2, arbitrary: untargeted(hostileText) },
  );
}

/** Documented parameters (valid, hinted or hostile), repeated ones, and parameters nobody documented. */
function queryString(
  op: Operation,
  fx: Fixture,
  ctx: SchemaContext,
): fc.Arbitrary<{ query: string; target: Target }> {
  const query = op.parameters.filter((p) => p.in === "query");
  const owned = (tag: "a" | "b"): string[] =>
    op.path === "/generation" ? [(tag === "a" ? fx.a : fx.b).generationId] : [];
  const value = (p: Parameter): fc.Arbitrary<{ text: string; target: Target }> => {
    const untargeted = (arb: fc.Arbitrary<string>) => arb.map((text) => ({ text, target: null as Target }));
    const hinted = ctx.hint?.(`query:${p.name}`);
    const targeted = (["a", "b"] as const)
      .filter((tag) => p.name === "id" && owned(tag).length > 0)
      .map((tag) => ({
        weight: 3,
        arbitrary: pick(owned(tag)).map((text) => ({ text, target: tag as Target })),
      }));
    return fc.oneof(
      ...targeted,
      {
        weight: 3,
        arbitrary: untargeted(arbitraryOf(p.schema, ctx).map((v) => encodeURIComponent(String(v)))),
      },
      ...(hinted
        ? [{ weight: 2, arbitrary: untargeted(hinted.map((v) => encodeURIComponent(String(v)))) }]
        : []),
      { weight: 2, arbitrary: untargeted(hostileText) },
    );
  };
  const documented = query.map((p) =>
    fc.option(
      value(p).map((v) => ({ part: `${p.name}=${v.text}`, target: v.target })),
      { freq: p.required ? 8 : 2 },
    ),
  );
  const extra = fc.array(
    fc.oneof(
      fc
        .tuple(fc.string({ minLength: 1, maxLength: 8 }).map(encodeURIComponent), hostileText)
        .map(([k, v]) => `${k}=${v}`),
      pick(query.map((p) => `${p.name}=1&${p.name}=2`).concat(["=", "&&", "a", "%=%", "offset[]=1"])),
    ),
    { maxLength: 2 },
  );
  return fc.tuple(fc.tuple(...documented), extra).map(([docs, more]) => {
    const present = docs.filter((d) => d !== null);
    const parts = [...present.map((d) => d.part), ...more];
    return {
      query: parts.length ? `?${parts.join("&")}` : "",
      target: present.find((d) => d.target)?.target ?? null,
    };
  });
}

/** Header values are byte strings: printable ASCII here, or a Latin-1 oddity. */
const headerText = fc.oneof(
  fc.string({ maxLength: 40, unit: fc.constantFrom(..."abcXYZ019 -_.,;:\"'/*=+()<>!~") }),
  pick(["", "*", 'W/"1"', '"1"', "1", "0", "-1", "99999999999999999999", "x".repeat(8000)]),
);

function headerParams(params: Parameter[], ctx: SchemaContext): fc.Arbitrary<Record<string, string>> {
  const entries = params
    .filter((p) => p.in === "header")
    .map((p) =>
      fc.option(
        fc
          .oneof(
            arbitraryOf(p.schema, ctx).map((v) => String(v).replace(/[^\x20-\x7e]/g, "")),
            headerText,
          )
          .map((v) => [p.name, v] as const),
        { freq: 2 },
      ),
    );
  // Bodies are never compressed here: a gateway that trusted Content-Encoding would choke.
  const encoding = fc.option(
    pick(["gzip", "br", "deflate", "identity", "x-unknown"]).map((v) => ["Content-Encoding", v] as const),
    { freq: 20 },
  );
  return fc.tuple(encoding, ...entries).map((pairs) => Object.fromEntries(pairs.filter((p) => p !== null)));
}

function authorization(op: Operation, fx: Fixture): fc.Arbitrary<{ caller: Caller; header?: string }> {
  const bearer = (caller: Caller, key: string) => fc.constant({ caller, header: `Bearer ${key}` });
  const malformed = pick([
    "Bearer",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    `Bearer ${fx.a.apiKey} extra`,
    `Token ${fx.a.managementKey}`,
    fx.a.managementKey,
    `Bearer ${"x".repeat(300)}`,
    "Bearer sk-gw-v1-short",
    `Bearer ${fx.a.apiKey},${fx.b.apiKey}`,
  ]).map((header) => ({ caller: "malformed" as const, header }));
  const regularWeight = op.inference ? 8 : 2;
  return fc.oneof(
    { weight: op.inference ? 2 : 8, arbitrary: bearer("management-a", fx.a.managementKey) },
    { weight: regularWeight, arbitrary: bearer("regular-a", fx.a.apiKey) },
    { weight: 1, arbitrary: bearer("management-b", fx.b.managementKey) },
    { weight: 1, arbitrary: bearer("regular-b", fx.b.apiKey) },
    { weight: 1, arbitrary: bearer("disabled-a", fx.a.disabledKey) },
    { weight: 1, arbitrary: bearer("expired-a", fx.a.expiredKey) },
    { weight: 1, arbitrary: bearer("unknown", `sk-gw-v1-${"0".repeat(48)}`) },
    { weight: 1, arbitrary: malformed },
    { weight: 1, arbitrary: fc.constant({ caller: "none" as const }) },
  );
}

const CONTENT_TYPES: Array<[number, string | null]> = [
  [16, "application/json"],
  [1, null],
  [1, "text/plain"],
  [1, "application/json; charset=utf-8"],
  [1, "application/vnd.api+json"],
  [1, "APPLICATION/JSON"],
  [1, "application/jsonx"],
  [1, "multipart/form-data; boundary=x"],
  [1, "application/x-www-form-urlencoded"],
  [1, ""],
];

function body(op: Operation, ctx: SchemaContext): fc.Arbitrary<BodyCase | undefined> {
  // As src/middleware/body.ts chooses it.
  const limit = op.path.endsWith("/embeddings")
    ? BODY_LIMITS.embeddings
    : op.path.endsWith("/videos") || op.path.endsWith("/audio/speech")
      ? BODY_LIMITS.media
      : BODY_LIMITS.default;
  if (!op.body) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant({ note: "unexpected {}", body: "{}" }) },
      { weight: 1, arbitrary: rawBody(fc.constant({ a: 1 }), BODY_LIMITS.default) },
    );
  }
  const valid = arbitraryOf(op.body.schema, ctx);
  return fc.oneof(
    { weight: 3, arbitrary: validBody(valid) },
    { weight: 3, arbitrary: validBody(arbitraryOf(op.body.schema, { ...ctx, optionalShare: 0.15 })) },
    { weight: 4, arbitrary: mutatedValueBody(valid) },
    { weight: 2, arbitrary: rawBody(valid, limit) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/**
 * The accounts whose resources `text` names. A preset the case itself creates is the caller's own:
 * `POST /presets/x/responses` whose body names `@preset/x` names the preset it makes, in its account.
 */
const mentioned = (fx: Fixture, text: string, created: string | null) =>
  (["a", "b"] as const).filter((tag) =>
    fx[tag].ids.some((id) => id !== `@preset/${created}` && text.includes(id)),
  );

/** The preset slug a creating operation's path names (decoded), or null. */
function createdSlug(op: Operation, pathParams: Parameter[], params: PathValue[]): string | null {
  if (!CREATES_BY_NAME.has(`${op.method} ${op.path}`)) return null;
  const i = pathParams.findIndex((p) => p.name === "slug");
  if (i < 0) return null;
  try {
    return decodeURIComponent(params[i]!.segment);
  } catch {
    return null;
  }
}

const OTHER_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export function requestArbitrary(
  op: Operation,
  fx: Fixture,
  resolve: SchemaContext["resolve"],
): fc.Arbitrary<FuzzCase> {
  const ctx: SchemaContext = { resolve, hint: hints(op, fx) };
  const pathParams = op.parameters.filter((p) => p.in === "path");
  const method = fc.oneof(
    { weight: 30, arbitrary: fc.constant(op.method) },
    { weight: 1, arbitrary: pick(OTHER_METHODS) },
  );
  const contentType = fc.oneof(
    ...CONTENT_TYPES.map(([weight, v]) => ({ weight, arbitrary: fc.constant(v) })),
  );
  return fc
    .record({
      method,
      params: fc.tuple(...pathParams.map((p) => pathParam(op, p, fx, ctx))),
      query: queryString(op, fx, ctx),
      region: fc.oneof(
        { weight: 8, arbitrary: fc.constant<DataRegion>("global") },
        { weight: 1, arbitrary: pick<DataRegion>(["europe", "us"]) },
      ),
      headers: headerParams(op.parameters, ctx),
      auth: authorization(op, fx),
      contentType,
      body: body(op, ctx),
    })
    .map(({ method, params, query, region, headers, auth, contentType, body }) => {
      let path = op.path;
      pathParams.forEach((p, i) => {
        path = path.replace(`{${p.name}}`, params[i]!.segment);
      });
      const all: Record<string, string> = { ...headers };
      if (auth.header !== undefined) all.Authorization = auth.header;
      const sendsBody = body !== undefined && method !== "GET" && method !== "HEAD";
      if (sendsBody && contentType !== null) all["Content-Type"] = contentType;
      return {
        method,
        url: `${path}${query.query}`,
        headers: all,
        body: sendsBody ? body : undefined,
        caller: auth.caller,
        target: params.find((p) => p.target)?.target ?? query.target,
        // Only the operation's own method reads this body: a DELETE sent with a PATCH body ignores it.
        mentions:
          sendsBody && method === op.method && typeof body.body === "string"
            ? mentioned(fx, body.body, createdSlug(op, pathParams, params))
            : [],
        region,
      };
    });
}
