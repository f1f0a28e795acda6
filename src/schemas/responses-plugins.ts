// Plugins of a responses request, discriminated by `id`, with the spec's limits (router patterns, fusion).
import { z } from "@hono/zod-openapi";
import { MAX_ITEMS } from "./common";

export const ROUTER_PATTERN_LIMITS = { items: 1024, itemLength: 1024, totalLength: 65536 } as const;

/** Model slugs with `*` wildcards: `maker/*`, `*:free`, `maker/model-*`. */
const RouterPattern = z
  .string()
  .min(1, "a model pattern must not be empty")
  .max(
    ROUTER_PATTERN_LIMITS.itemLength,
    `a model pattern is at most ${ROUTER_PATTERN_LIMITS.itemLength} characters`,
  )
  .regex(/^[A-Za-z0-9._:/@~+*-]+$/, "a model pattern holds model-slug characters and `*` wildcards only");

const RouterPatterns = z
  .array(RouterPattern)
  .max(ROUTER_PATTERN_LIMITS.items, `at most ${ROUTER_PATTERN_LIMITS.items} model patterns`)
  .refine(
    (a) => a.reduce((n, p) => n + p.length, 0) <= ROUTER_PATTERN_LIMITS.totalLength,
    `model patterns total at most ${ROUTER_PATTERN_LIMITS.totalLength} characters`,
  );

/** Cost-percentile bands: low [0,20), medium [20,40), high [40,60), xhigh [60,80), max [80,100]. */
export const CostTierSchema = z.enum(["low", "medium", "high", "xhigh", "max"]);

const enabled = z.boolean().optional().openapi({ description: "Default true; false disables the plugin" });

const routerFields = {
  enabled,
  allowed_models: RouterPatterns.optional(),
  excluded_models: RouterPatterns.optional(),
  cost_tier: CostTierSchema.optional(),
  cost_quality_tradeoff: z
    .int()
    .min(0)
    .max(10)
    .optional()
    .openapi({ deprecated: true, description: "Use cost_tier; higher favours cheaper models (default 9)" }),
};

const AutoRouterPlugin = z.strictObject({
  id: z.literal("auto-router"),
  ...routerFields,
  pin_model: z.boolean().optional(),
});

const AutoBetaRouterPlugin = z.strictObject({ id: z.literal("auto-beta-router"), ...routerFields });

const ContextCompressionPlugin = z.strictObject({
  id: z.literal("context-compression"),
  enabled,
  engine: z.enum(["middle-out"]).optional(),
});

const FileParserPlugin = z.strictObject({
  id: z.literal("file-parser"),
  enabled,
  pdf: z
    .strictObject({ engine: z.enum(["cloudflare-ai", "pdf-text", "mistral-ocr", "native"]).optional() })
    .optional(),
});

const FusionParameterValue = z
  .union([
    z.string(),
    z.number(),
    z.boolean(),
    z.array(z.union([z.string(), z.number(), z.boolean()]).nullable()).max(MAX_ITEMS),
  ])
  .nullable();

const FusionPlugin = z.strictObject({
  id: z.literal("fusion"),
  enabled,
  analysis_models: z
    .array(z.string().min(1))
    .min(1, "fusion needs at least 1 analysis model")
    .max(8, "fusion takes at most 8 analysis models")
    .optional(),
  model: z.string().min(1).optional(),
  max_tool_calls: z.int().min(1).max(16).optional(),
  preset: z.enum(["general-high", "general-budget", "general-fast"]).optional(),
  tools: z
    .array(
      z.strictObject({
        type: z.string().min(1),
        parameters: z.record(z.string(), FusionParameterValue).optional(),
      }),
    )
    .optional(),
});

// Inner shapes of these plugins are not specified: id and enabled are checked, other fields pass.
const looseFields = (id: string) => z.looseObject({ id: z.literal(id), enabled });

export const PluginSchema = z
  .discriminatedUnion("id", [
    AutoRouterPlugin,
    AutoBetaRouterPlugin,
    ContextCompressionPlugin,
    FileParserPlugin,
    FusionPlugin,
    looseFields("moderation"),
    looseFields("pareto-router"),
    looseFields("response-healing"),
    looseFields("web"),
    looseFields("web-fetch"),
  ])
  .openapi("ResponsesPlugin");
export type Plugin = z.infer<typeof PluginSchema>;

export const PluginsSchema = z
  .array(PluginSchema)
  .refine((a) => new Set(a.map((p) => p.id)).size === a.length, "each plugin id may appear once");
