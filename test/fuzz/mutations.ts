// Mutated request bodies: a valid value with one thing broken, or bytes that are not the JSON asked for.
import fc from "fast-check";
import { anyJson } from "./schema-arbitrary";

/** A body of this many bytes, streamed in chunks when sent (a 16 MiB string per case would cost more than the case). */
export interface Oversize {
  bytes: number;
}

export interface BodyCase {
  /** What was done, for the failure message. */
  note: string;
  body: string | Uint8Array | Oversize | undefined;
}

/** Stands for JSON text that JSON.stringify cannot write (1e400, -0, 2^53+1); swapped in after. */
const RAW = "\u0001raw:";
const raw = (text: string) => `${RAW}${text}`;

function serialize(value: unknown): string {
  const text = JSON.stringify(value) ?? "null";
  return text.replace(/"\\u0001raw:((?:[^"\\]|\\.)*)"/g, (_, t: string) => JSON.parse(`"${t}"`) as string);
}

/**
 * Nesting as raw text (JSON.stringify itself overflows the stack on some values 20,000 levels deep).
 * Index-like keys (`{"0":...}`) take V8's JSON.stringify off its iterative fast path.
 */
const OPENERS = { "deep-array": "[", "deep-object": '{"a":', "deep-index": '{"0":' } as const;
const CLOSERS = { "deep-array": "]", "deep-object": "}", "deep-index": "}" } as const;
const nested = (depth: number, kind: keyof typeof OPENERS): string =>
  raw(`${OPENERS[kind].repeat(depth)}"leaf"${CLOSERS[kind].repeat(depth)}`);

/** Values of the wrong type or shape for almost any field. */
const strangeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    raw("-0"),
    raw("1e400"),
    raw("-1e400"),
    raw("1e-400"),
    raw("9007199254740993"),
    raw("123456789012345678901234567890"),
    "",
    " ",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "0x10",
    "null",
    "true",
    "\u0000",
    "\ud800",
    "../../etc/passwd",
    "%00",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "$\u007bjndi:ldap://x}",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓ 日本語 \u202e",
    [],
    {},
    [null],
    raw('{"__proto__":{"isManagement":true}}'),
    "constructor",
  ),
  // Long text: 2,000 characters is valid almost everywhere (and cheap to answer); 300,000 is over every limit.
  fc.constantFrom(2_000, 300_000).map((n) => "x".repeat(n)),
  anyJson(3),
);

interface Slot {
  parent: Record<string, unknown> | unknown[] | null;
  key: string | number;
}

/** Every place in the value a mutation can touch; the root is the slot with no parent. */
function slotsOf(root: { v: unknown }): Slot[] {
  const slots: Slot[] = [{ parent: null, key: "v" }];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        slots.push({ parent: v, key: i });
        walk(item);
      });
    } else if (v && typeof v === "object") {
      for (const [k, item] of Object.entries(v)) {
        slots.push({ parent: v as Record<string, unknown>, key: k });
        walk(item);
      }
    }
  };
  walk(root.v);
  return slots;
}

function setSlot(root: { v: unknown }, slot: Slot, value: unknown) {
  if (!slot.parent) root.v = value;
  else (slot.parent as Record<string | number, unknown>)[slot.key] = value;
}

type Mutation = "drop" | "replace" | "extra" | keyof typeof OPENERS;

/** One structural change at a chosen place in a (structured-cloned) valid value. */
function mutateValue(
  value: unknown,
  mutation: Mutation,
  pick: number,
  payload: unknown,
  extraKey: string,
  depth: number,
): BodyCase {
  const root = { v: structuredClone(value) };
  const slots = slotsOf(root);
  const objects = slots.filter((s) => s.parent && !Array.isArray(s.parent));
  let note: string;
  if (mutation === "drop" && objects.length > 0) {
    const slot = objects[pick % objects.length]!;
    delete (slot.parent as Record<string, unknown>)[slot.key as string];
    note = `dropped ${String(slot.key)}`;
  } else if (mutation === "extra") {
    const containers = [
      root.v,
      ...slots.map((s) => (s.parent as Record<string, unknown> | null)?.[s.key]),
    ].filter((v): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v));
    const target = containers[pick % Math.max(1, containers.length)];
    if (target) target[extraKey] = payload;
    else root.v = { [extraKey]: payload };
    note = `extra field ${JSON.stringify(extraKey)}`;
  } else if (mutation in OPENERS) {
    const slot = slots[pick % slots.length]!;
    setSlot(root, slot, nested(depth, mutation as keyof typeof OPENERS));
    note = `${mutation} ${depth} levels at ${String(slot.key)}`;
  } else {
    const slot = slots[pick % slots.length]!;
    setSlot(root, slot, payload);
    note = `replaced ${String(slot.key)} with ${String(JSON.stringify(payload)).slice(0, 40)}`;
  }
  return { note, body: serialize(root.v) };
}

export const mutatedValueBody = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<BodyCase> =>
  fc
    .tuple(
      valid,
      fc.constantFrom<Mutation>(
        "drop",
        "replace",
        "replace",
        "extra",
        "deep-object",
        "deep-array",
        "deep-index",
      ),
      fc.nat(),
      strangeValue,
      fc.oneof(
        fc.string({ minLength: 1, maxLength: 16 }),
        fc.constantFrom("__proto__", "constructor", "prototype", "", "hash", "account_id", "is_management"),
      ),
      fc.oneof(fc.integer({ min: 2, max: 64 }), fc.constantFrom(1_000, 20_000)),
    )
    .map(([value, mutation, pick, payload, key, depth]) =>
      mutateValue(value, mutation, pick, payload, key, depth),
    );

const encoder = new TextEncoder();

/** Bodies that are not a JSON object at all, or not JSON, or not even text. */
export const rawBody = (valid: fc.Arbitrary<unknown>, limitBytes: number): fc.Arbitrary<BodyCase> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom<BodyCase>(
        { note: "empty body", body: "" },
        { note: "whitespace", body: " \n\t " },
        { note: "top-level array", body: "[]" },
        { note: "top-level null", body: "null" },
        { note: "top-level number", body: "0" },
        { note: "top-level string", body: '"x"' },
        { note: "top-level true", body: "true" },
        { note: "array of object", body: "[{}]" },
        { note: "comment", body: "{/* c */}" },
        { note: "form-encoded", body: "a=1&b=2" },
        { note: "single quotes", body: "{'a':1}" },
        { note: "trailing comma", body: '{"a":1,}' },
        { note: "NaN literal", body: '{"a":NaN}' },
        { note: "proto pollution", body: '{"__proto__":{"isManagement":true,"admin":true}}' },
        { note: "deep array 100000", body: `${"[".repeat(100_000)}${"]".repeat(100_000)}` },
        { note: "deep object 20000", body: `${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}` },
        { note: "deep index keys 20000", body: `${'{"0":'.repeat(20_000)}1${"}".repeat(20_000)}` },
        { note: "unclosed deep array", body: "[".repeat(50_000) },
      ),
    },
    {
      weight: 3,
      arbitrary: fc.tuple(valid, fc.nat()).map(([v, cut]) => {
        const text = serialize(v);
        const at = text.length > 1 ? 1 + (cut % (text.length - 1)) : 0;
        return { note: `truncated at ${at}`, body: text.slice(0, at) };
      }),
    },
    {
      weight: 2,
      arbitrary: fc
        .uint8Array({ minLength: 1, maxLength: 64 })
        .map((b) => ({ note: "random bytes", body: b })),
    },
    {
      weight: 1,
      arbitrary: valid.map((v) => {
        const text = encoder.encode(serialize(v));
        const bytes = new Uint8Array(text.length + 2);
        bytes.set([0xff, 0xfe]);
        bytes.set(text, 2);
        return { note: "invalid UTF-8 prefix", body: bytes };
      }),
    },
    { weight: 1, arbitrary: valid.map((v) => ({ note: "BOM prefix", body: `\ufeff${serialize(v)}` })) },
    {
      weight: 1,
      arbitrary: valid.map((v) => {
        const text = serialize(v);
        const dup = /^\{"([^"]+)":/.exec(text);
        return { note: "duplicate key", body: dup ? `{"${dup[1]}":{"x":[1]},${text.slice(1)}` : text };
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constant({ note: "one byte over the limit", body: { bytes: limitBytes + 1 } }),
    },
  );

export const validBody = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<BodyCase> =>
  valid.map((v) => ({ note: "valid", body: serialize(v) }));
