// Wire shapes of API keys: the current-key information and the keys management API.
import { z } from "@hono/zod-openapi";
import {
  DataRegionSchema,
  DataRegionSetSchema,
  ResetIntervalSchema,
  storedText,
  TimestampSchema,
  usdLimit,
} from "./common";

const usageFields = {
  usage: z.number(),
  usage_daily: z.number(),
  usage_weekly: z.number(),
  usage_monthly: z.number(),
  byok_usage: z.number(),
  byok_usage_daily: z.number(),
  byok_usage_weekly: z.number(),
  byok_usage_monthly: z.number(),
};

const capFields = {
  limit: z.number().nullable().openapi({ description: "Per-key credit cap in USD; null for none" }),
  limit_remaining: z.number().nullable(),
  limit_reset: ResetIntervalSchema.nullable(),
  include_byok_in_limit: z.boolean(),
};

export const FreeModelDailyRequestsSchema = z.object({
  limit: z.int(),
  remaining: z.int(),
  used: z.int(),
});

export const CurrentKeySchema = z
  .object({
    label: z.string().openapi({ description: "Masked form of the key" }),
    allowed_data_regions: z.array(DataRegionSchema),
    creator_user_id: z.string().nullable(),
    expires_at: z.string().nullable(),
    ...capFields,
    ...usageFields,
    is_free_tier: z.boolean(),
    is_management_key: z.boolean(),
    is_provisioning_key: z.boolean(),
    free_model_daily_requests: FreeModelDailyRequestsSchema,
    rate_limit: z
      .object({ interval: z.string(), requests: z.int(), note: z.string() })
      .openapi({ deprecated: true }),
    workspace_id: z.string().nullable(),
    organization_id: z.string().nullable(),
  })
  .openapi("CurrentKey");

export const ApiKeySchema = z
  .object({
    hash: z.string(),
    name: z.string(),
    label: z.string(),
    disabled: z.boolean(),
    ...capFields,
    ...usageFields,
    allowed_data_regions: z.array(DataRegionSchema),
    is_management_key: z.boolean(),
    is_provisioning_key: z.boolean(),
    is_free_tier: z.boolean(),
    creator_user_id: z.string().nullable(),
    external_user: z.string().nullable(),
    expires_at: z.string().nullable(),
    workspace_id: z.string(),
    created_at: z.string(),
    updated_at: z.string().nullable(),
  })
  .openapi("ApiKey");
export type ApiKey = z.infer<typeof ApiKeySchema>;

/**
 * The largest per-key cap: 1,000,000,000 USD, i.e. 1e15 micro-dollars, well inside
 * Number.MAX_SAFE_INTEGER (~9.007e15) so the cap and the usage compared with it stay exact integers.
 */
export const MAX_KEY_LIMIT_USD = 1_000_000_000;

/** A key's cap in USD, or null for none. */
const KeyLimitSchema = usdLimit(MAX_KEY_LIMIT_USD).nullable();

const futureTimestamp = TimestampSchema.refine((v) => Date.parse(v) > Date.now(), "must be in the future");

export const CreateKeyBodySchema = z
  .object({
    name: storedText(z.string().trim().min(1).max(200)),
    limit: KeyLimitSchema.optional(),
    limit_reset: ResetIntervalSchema.nullable().optional(),
    include_byok_in_limit: z.boolean().optional(),
    expires_at: futureTimestamp.nullable().optional(),
    creator_user_id: z.string().min(1).nullable().optional(),
    workspace_id: z.string().min(1).optional(),
    allowed_data_regions: DataRegionSetSchema.optional(),
  })
  .openapi("CreateKeyBody");

export const UpdateKeyBodySchema = z
  .object({
    name: storedText(z.string().trim().min(1).max(200)).optional(),
    disabled: z.boolean().optional(),
    limit: KeyLimitSchema.optional(),
    limit_reset: ResetIntervalSchema.nullable().optional(),
    include_byok_in_limit: z.boolean().optional(),
    expires_at: futureTimestamp.nullable().optional(),
    allowed_data_regions: DataRegionSetSchema.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, "send at least one field to update")
  .openapi("UpdateKeyBody");

export const KeyHashParamSchema = z.object({
  hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "must be the key's 64-character SHA-256 hash")
    .openapi({ param: { name: "hash", in: "path" } }),
});

export const ListKeysQuerySchema = z.object({
  include_disabled: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v === "true"),
  offset: z.coerce.number().int().min(0).default(0),
  // Not in @openrouter/sdk (its pages are OpenRouter's fixed 100): paging loops that send a limit get it.
  limit: z.coerce.number().int().min(1).max(100).default(100),
  workspace_id: z.string().min(1).optional(),
});
