// fast-check arbitraries from the JSON Schema subset of the OpenAPI document, mostly valid values, with domain hints.
import fc from "fast-check";
import type { JsonSchema } from "./openapi";

export interface SchemaContext {
  resolve: (schema: JsonSchema) => JsonSchema;
  /**
   * Values that mean something to the gateway (fixture ids, model slugs, URLs) for a property name,
   * `name[]` for an array's items; mixed in with what the schema alone would give.
   */
  hint?: (name: string) => fc.Arbitrary<unknown> | undefined;
  /**
   * Each optional property appears with this chance (default: half the time): a body with many
   * optional fields is rarely valid in all of them, so valid cases also come sparse.
   */
  optionalShare?: number;
}

/** Recursive schemas (input items inside input items) stop here with the simplest value. */
const MAX_DEPTH = 5;
/** Valid values stay small: a fuzz case should cost a request, not a megabyte. */
const MAX_STRING = 24;
const MAX_EXTRA_ITEMS = 3;

export const anyJson = (maxDepth = 2): fc.Arbitrary<unknown> =>
  fc.jsonValue({ maxDepth }).map((v) => v as unknown);

const typesOf = (s: JsonSchema): string[] => {
  if (Array.isArray(s.type)) return s.type;
  if (s.type) return [s.type];
  if (s.properties || s.additionalProperties !== undefined) return ["object"];
  if (s.items) return ["array"];
  return [];
};

function stringArbitrary(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? Number.POSITIVE_INFINITY, Math.max(min, MAX_STRING));
  if (s.format === "date-time") {
    return fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (s.pattern) {
    // Patterns here are anchored character runs; repeating a match keeps it a match for `+` runs.
    return fc.stringMatching(new RegExp(s.pattern), { size: "xsmall" }).map((v) => {
      let out = v;
      while (out.length > 0 && out.length < min) out += v;
      return s.maxLength != null && out.length > s.maxLength ? out.slice(0, s.maxLength) : out;
    });
  }
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength: min, maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max, unit: "binary" }) },
  );
}

function numberArbitrary(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const lower = s.minimum ?? s.exclusiveMinimum;
  const upper = s.maximum ?? s.exclusiveMaximum;
  if (integer) {
    const min = Math.ceil(lower ?? -(2 ** 31)) + (s.exclusiveMinimum != null ? 1 : 0);
    const max = Math.floor(upper ?? 2 ** 31) - (s.exclusiveMaximum != null ? 1 : 0);
    return fc.integer({
      min: Math.max(min, Number.MIN_SAFE_INTEGER),
      max: Math.min(max, Number.MAX_SAFE_INTEGER),
    });
  }
  return fc.double({
    min: lower ?? -1e9,
    max: upper ?? 1e9,
    minExcluded: s.exclusiveMinimum != null,
    maxExcluded: s.exclusiveMaximum != null,
    noNaN: true,
    noDefaultInfinity: true,
  });
}

function objectArbitrary(s: JsonSchema, ctx: SchemaContext, depth: number): fc.Arbitrary<unknown> {
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  const share = ctx.optionalShare;
  for (const [name, prop] of Object.entries(props)) {
    // Past the depth limit only required properties are generated, so recursion ends.
    if (depth >= MAX_DEPTH && !required.has(name)) continue;
    const value = arbitraryOf(prop, ctx, name, depth + 1);
    model[name] =
      share === undefined || required.has(name)
        ? value
        : fc.oneof(
            { weight: Math.round(100 * (1 - share)), arbitrary: fc.constant(undefined) },
            { weight: Math.round(100 * share), arbitrary: value },
          );
  }
  const requiredKeys =
    share === undefined ? Object.keys(model).filter((k) => required.has(k)) : Object.keys(model);
  const known = fc
    .record(model, { requiredKeys })
    .map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
  const extra = s.additionalProperties;
  const closed = extra === false || (extra === undefined && Object.keys(props).length > 0);
  if (closed || depth >= MAX_DEPTH) {
    return known;
  }
  const values = typeof extra === "object" ? arbitraryOf(extra, ctx, undefined, depth + 1) : anyJson(1);
  const dict = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), values, { maxKeys: 3 });
  return fc.tuple(known, dict).map(([k, d]) => ({ ...d, ...(k as object) }));
}

function arrayArbitrary(s: JsonSchema, ctx: SchemaContext, name: string | undefined, depth: number) {
  const minLength = s.minItems ?? 0;
  const maxLength = Math.min(s.maxItems ?? Number.POSITIVE_INFINITY, minLength + MAX_EXTRA_ITEMS);
  if (depth >= MAX_DEPTH && minLength === 0) return fc.constant([]);
  const items = s.items ? arbitraryOf(s.items, ctx, name && `${name}[]`, depth + 1) : anyJson(1);
  return fc.array(items, { minLength, maxLength });
}

function mergeAllOf(s: JsonSchema, ctx: SchemaContext): JsonSchema {
  const parts = (s.allOf ?? []).map(ctx.resolve);
  return {
    type: "object",
    properties: Object.assign({}, ...parts.map((p) => p.properties ?? {})),
    required: parts.flatMap((p) => p.required ?? []),
  };
}

/** A value for `schema`; with a name, the context's hint for that name is mixed in. */
export function arbitraryOf(
  schema: JsonSchema,
  ctx: SchemaContext,
  name?: string,
  depth = 0,
): fc.Arbitrary<unknown> {
  const own = fromSchema(ctx.resolve(schema), ctx, name, depth);
  const hinted = name ? ctx.hint?.(name) : undefined;
  return hinted ? fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: own }) : own;
}

function fromSchema(s: JsonSchema, ctx: SchemaContext, name: string | undefined, depth: number) {
  if (s.enum) return fc.constantFrom(...s.enum);
  if (s.const !== undefined) return fc.constant(s.const);
  const choices = s.oneOf ?? s.anyOf;
  if (choices) return fc.oneof(...choices.map((c) => arbitraryOf(c, ctx, name, depth)));
  if (s.allOf) return objectArbitrary(mergeAllOf(s, ctx), ctx, depth);
  const types = typesOf(s);
  if (types.length === 0) return anyJson();
  const arbs = types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "integer":
        return numberArbitrary(s, true);
      case "number":
        return numberArbitrary(s, false);
      case "string":
        return stringArbitrary(s);
      case "array":
        return arrayArbitrary(s, ctx, name, depth);
      case "object":
        return objectArbitrary(s, ctx, depth);
      default:
        throw new Error(`schema type ${type} is not supported by the fuzz generator`);
    }
  });
  // A nullable field is null now and then, not half the time.
  const weighted = arbs.map((arbitrary, i) => ({ arbitrary, weight: types[i] === "null" ? 1 : 4 }));
  return weighted.length === 1 ? weighted[0]!.arbitrary : fc.oneof(...weighted);
}
