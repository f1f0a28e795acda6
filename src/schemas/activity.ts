// GET /activity (as @openrouter/sdk's analytics.getUserActivity parses it) and GET /generations (a gateway extension).
import { z } from "@hono/zod-openapi";
import { GenerationSchema } from "./generations";

const query = <T extends z.ZodType>(name: string, schema: T): T =>
  schema.openapi({ param: { name, in: "query" } });

const keyHashFilter = z
  .string()
  .regex(/^[0-9a-f]{64}$/, "must be a key hash")
  .optional();

export const ActivityQuerySchema = z.object({
  date: query(
    "date",
    z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, "must be a UTC day, YYYY-MM-DD")
      // A day that exists: Date reads 2026-02-30 as 2 March, so the day must read back as written.
      .refine((d) => {
        const t = Date.parse(`${d}T00:00:00Z`);
        return !Number.isNaN(t) && new Date(t).toISOString().startsWith(d);
      }, "must be a real day")
      .optional(),
  ),
  api_key_hash: query("api_key_hash", keyHashFilter),
  user_id: query("user_id", z.string().min(1).max(128).optional()),
  workspace_id: query("workspace_id", z.string().min(1).max(128).optional()),
  group_by: query("group_by", z.enum(["workspace"]).optional()),
});

export const ActivityItemSchema = z
  .object({
    date: z.string().openapi({ description: "UTC day, YYYY-MM-DD" }),
    model: z.string(),
    model_permaslug: z.string(),
    endpoint_id: z.string(),
    provider_name: z.string(),
    requests: z.int(),
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
    reasoning_tokens: z.int(),
    usage: z.number().openapi({ description: "USD spent from credits" }),
    byok_usage_inference: z
      .number()
      .openapi({ description: "USD of inference run on the account's own keys" }),
    workspace_id: z.string().optional().openapi({ description: "With group_by=workspace only" }),
  })
  .openapi("ActivityItem");

export const ActivityResponseSchema = z.object({ data: z.array(ActivityItemSchema) }).openapi("Activity");

export const GENERATION_STATUSES = ["completed", "failed", "cancelled"] as const;

export const GenerationListQuerySchema = z.object({
  limit: query("limit", z.coerce.number().int().min(1).max(100).default(50)),
  offset: query("offset", z.coerce.number().int().min(0).max(100_000).default(0)),
  model: query("model", z.string().min(1).max(256).optional()),
  status: query("status", z.enum(GENERATION_STATUSES).optional()),
  // The name /activity and the listed items use; `key_hash`, its first name, is still read.
  api_key_hash: query("api_key_hash", keyHashFilter),
  key_hash: query("key_hash", keyHashFilter),
});

export const GenerationListItemSchema = GenerationSchema.extend({
  status: z.enum(GENERATION_STATUSES),
  api_key_hash: z.string().openapi({ description: "Hash of the key that made the generation" }),
}).openapi("GenerationListItem");

export const GenerationListSchema = z
  .object({
    data: z.array(GenerationListItemSchema),
    next_offset: z.int().nullable().openapi({ description: "The offset of the next page; null on the last" }),
  })
  .openapi("GenerationList");
