// Wire pieces shared by many routes: the error envelope, data regions, timestamps, bounded passthrough JSON,
// request metadata.
import { z } from "@hono/zod-openapi";
import { DATA_REGIONS } from "../../regions";

export const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      code: z.int().openapi({ description: "Equals the HTTP status" }),
      message: z.string(),
      metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    }),
    openrouter_metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    user_id: z.string().nullable().optional(),
  })
  .openapi("ErrorEnvelope");

export const DataRegionSchema = z.enum(DATA_REGIONS);

/** A fallback is a model: a preset there would be applied in part or taken for an unknown model. */
export const FallbackModelSchema = z
  .string()
  .min(1)
  .refine((m) => !m.includes("@preset/"), "a fallback model cannot be a preset (use `model` or `preset`)");

/** `models`: fallback models, in order. */
export const FallbackModelsSchema = z.array(FallbackModelSchema).max(10);

/** A set of data regions: at least one, no repeats. */
export const DataRegionSetSchema = z
  .array(DataRegionSchema)
  .min(1, "must list at least one data region")
  .refine((a) => new Set(a).size === a.length, "must not repeat a data region");

export const ResetIntervalSchema = z.enum(["daily", "weekly", "monthly"]);

export const TimestampSchema = z.iso.datetime({ offset: true });

/**
 * A spending limit in USD (a key's cap, a guardrail's budget), stored as whole micro-dollars: a value
 * that is not one (a positive limit under 0.000001 would become 0, 0.0000015 would become 0.000002) is
 * refused rather than silently rounded. 0 is a real limit (nothing may be spent).
 */
export const usdLimit = (max: number) =>
  z
    .number()
    .min(0)
    .max(max, `the largest limit is ${max} USD`)
    .refine(
      (v) => v === 0 || v * 1_000_000 >= 1,
      "the smallest limit is 0.000001 USD (use 0 to allow no spending)",
    )
    .refine((v) => {
      const micros = v * 1_000_000;
      return Math.abs(micros - Math.round(micros)) < 1e-6 + micros * 1e-15;
    }, "limits are whole micro-dollars (at most 6 decimal places)");

/** A UTF-16 surrogate without its pair: JSON can carry one (`"\ud800"`), UTF-8 storage cannot. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text the gateway stores and shows back (names, descriptions): a lone surrogate is refused with 400,
 * since D1 would store it as U+FFFD and what a caller reads back would differ from what it sent.
 */
export const storedText = <T extends z.ZodString>(schema: T) =>
  schema.refine((s) => !LONE_SURROGATE.test(s), "must be valid Unicode text (it has an unpaired surrogate)");

/** Whether any string in a JSON value (keys included) has a lone surrogate (see storedText). */
export function hasLoneSurrogate(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) return true;
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return true;
        pending.push(child);
      }
    }
  }
  return false;
}

/** Bounds on caller JSON the gateway keeps or forwards without knowing its shape. */
export interface JsonBounds {
  /** Containers (objects and arrays) nested inside one another, the outermost counting as 1. */
  maxDepth: number;
  /** Length of the value's JSON text. */
  maxChars: number;
}

export const PASSTHROUGH_MAX_DEPTH = 32;

/**
 * Items in one of a request's lists (content parts, tool calls, citations...): far above real use. A
 * list past it fails on its length alone, with one issue, instead of an issue for each bad item.
 */
export const MAX_ITEMS = 1_000;
/**
 * Items of a conversation's turn list: a responses request's input items, and so the tool calls and
 * reasoning blocks of the one assistant message a run of them becomes on chat.
 */
export const MAX_TURN_ITEMS = 20_000;

/** Characters in one text of a prompt (a message's content or part, a system prompt, a tool's output): a million-token prompt is about 4 MB. */
export const MAX_PROMPT_CHARS = 4_000_000;
export const PromptTextSchema = z
  .string()
  .max(
    MAX_PROMPT_CHARS,
    `Too big: a prompt's text is at most ${MAX_PROMPT_CHARS.toLocaleString("en-US")} characters`,
  );

/**
 * Why `value` is unfit to pass through (too deeply nested or too large), or null. The walk keeps
 * its own stack, so hostile nesting cannot overflow the call stack here, and it stops at the first
 * container past the limit; only a value of bounded depth is serialised to measure its size.
 */
export function jsonBoundsProblem(value: unknown, bounds: JsonBounds): string | null {
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth > bounds.maxDepth) return `must not be nested deeper than ${bounds.maxDepth} levels`;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  const chars = JSON.stringify(value)?.length ?? 0;
  if (chars > bounds.maxChars) return `must not be larger than ${bounds.maxChars} characters of JSON`;
  return null;
}

/**
 * Free-form JSON accepted as is (trace metadata, provider options), bounded so that nothing
 * downstream (hashing, storage, logging) meets unbounded depth or size: a 400 naming the field.
 */
export function boundedJson<T extends z.ZodType>(schema: T, bounds: JsonBounds): T {
  return schema.superRefine((value, ctx) => {
    const problem = jsonBoundsProblem(value, bounds);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
}

/** The spec's limits on request metadata (Limits), for every route that takes it. */
export const METADATA_LIMITS = {
  metadataPairs: 16,
  metadataKeyLength: 64,
  metadataValueLength: 512,
} as const;

/** Request metadata: string pairs within METADATA_LIMITS, keys without brackets. */
export const MetadataSchema = z.record(z.string(), z.string()).superRefine((m, ctx) => {
  const L = METADATA_LIMITS;
  const keys = Object.keys(m);
  if (keys.length > L.metadataPairs) {
    ctx.addIssue({ code: "custom", message: `metadata holds at most ${L.metadataPairs} pairs` });
  }
  for (const key of keys) {
    if (key.length === 0 || key.length > L.metadataKeyLength) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `metadata keys are 1 to ${L.metadataKeyLength} characters`,
      });
    } else if (/[[\]]/.test(key)) {
      ctx.addIssue({ code: "custom", path: [key], message: "metadata keys must not contain brackets" });
    }
    if (m[key]!.length > L.metadataValueLength) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `metadata values are at most ${L.metadataValueLength} characters`,
      });
    }
  }
});

/** A resource id in a path (`/guardrails/{id}`, `/byok/{id}`, `/workspaces/{id}`). */
export const IdParamSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});

/** A list's page: `offset` from 0, `limit` 1 to 100 (50 when absent, the SDK's default). */
export const PageQuerySchema = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});
