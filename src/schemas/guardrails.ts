// Wire shapes of guardrails (SDK-compatible), their create/update bodies, and key/member assignments.
import { z } from "@hono/zod-openapi";
import { BUILTIN_FILTER_SLUGS, compileCustomPattern } from "../guardrails/filters";
import {
  DataRegionSchema,
  DataRegionSetSchema,
  IdParamSchema,
  PageQuerySchema,
  ResetIntervalSchema,
  storedText,
  usdLimit,
} from "./common";

export const FILTER_ACTIONS = ["block", "redact", "flag"] as const;
export const MAX_CUSTOM_FILTERS = 50;
export const MAX_LIMIT_USD = 1_000_000_000;
const LABEL_MAX = 100;

const FilterActionSchema = z.enum(FILTER_ACTIONS);

export const ContentFilterBuiltinSchema = z
  .object({
    slug: z.enum(BUILTIN_FILTER_SLUGS),
    action: FilterActionSchema,
    label: z.string(),
  })
  .openapi("ContentFilterBuiltin");

export const ContentFilterCustomSchema = z
  .object({ pattern: z.string(), action: FilterActionSchema, label: z.string() })
  .openapi("ContentFilterCustom");

export const GuardrailSchema = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    limit_usd: z.number().nullable(),
    reset_interval: ResetIntervalSchema.nullable(),
    include_byok_in_budgets: z.boolean(),
    allowed_data_regions: z.array(DataRegionSchema).nullable(),
    allowed_models: z.array(z.string()).nullable(),
    ignored_models: z.array(z.string()).nullable(),
    allowed_providers: z.array(z.string()).nullable(),
    ignored_providers: z.array(z.string()).nullable(),
    content_filter_builtins: z.array(ContentFilterBuiltinSchema).nullable(),
    content_filters: z.array(ContentFilterCustomSchema).nullable(),
    enable_free_model_publication: z.boolean(),
    enable_free_model_training: z.boolean(),
    enable_paid_model_training: z.boolean(),
    enforce_zdr: z.boolean().nullable(),
    enforce_zdr_vendor_a: z.boolean(),
    enforce_zdr_vendor_b: z.boolean(),
    enforce_zdr_vendor_c: z.boolean(),
    enforce_zdr_vendor_d: z.boolean(),
    enforce_zdr_other: z.boolean(),
    version: z
      .int()
      .openapi({ description: "Bumped on every change; send it back in If-Match to update conditionally" }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Guardrail");
export type Guardrail = z.infer<typeof GuardrailSchema>;

const ModelList = z
  .array(z.string().trim().min(1).max(200))
  .min(1, "must list at least one model when set")
  .max(1000);
const ProviderList = z
  .array(z.string().trim().min(1).max(100))
  .min(1, "must list at least one provider when set")
  .max(1000);

const BuiltinInput = z.strictObject({
  slug: z.enum(BUILTIN_FILTER_SLUGS, {
    error: `slug must be one of ${BUILTIN_FILTER_SLUGS.join(", ")}`,
  }),
  action: FilterActionSchema,
  label: z.string().trim().min(1).max(LABEL_MAX).nullable().optional(),
});

const CustomInput = z.strictObject({
  pattern: z.string().superRefine((pattern, ctx) => {
    const verdict = compileCustomPattern(pattern);
    if (!verdict.ok) ctx.addIssue({ code: "custom", message: `unsupported pattern: ${verdict.reason}` });
  }),
  action: FilterActionSchema,
  label: z.string().trim().min(1).max(LABEL_MAX).nullable().optional(),
});

const unique =
  <T>(key: (item: T) => string, what: string) =>
  (items: T[], ctx: z.RefinementCtx) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const k = key(item);
      if (seen.has(k)) ctx.addIssue({ code: "custom", path: [i], message: `${what} '${k}' is listed twice` });
      seen.add(k);
    });
  };

const flag = z.boolean();

/** Every settable field; PATCH takes them all as optional, POST requires `name`. */
const guardrailFields = {
  name: storedText(
    z.string().trim().min(1, "name must not be empty").max(200, "name is at most 200 characters"),
  ),
  description: storedText(z.string().max(1000, "description is at most 1000 characters")).nullable(),
  limit_usd: usdLimit(MAX_LIMIT_USD).nullable(),
  reset_interval: ResetIntervalSchema.nullable(),
  include_byok_in_budgets: flag,
  allowed_data_regions: DataRegionSetSchema.nullable(),
  allowed_models: ModelList.nullable(),
  ignored_models: ModelList.nullable(),
  allowed_providers: ProviderList.nullable(),
  ignored_providers: ProviderList.nullable(),
  content_filter_builtins: z
    .array(BuiltinInput)
    .superRefine(unique((f) => f.slug, "built-in filter"))
    .nullable(),
  content_filters: z
    .array(CustomInput)
    .max(MAX_CUSTOM_FILTERS, `at most ${MAX_CUSTOM_FILTERS} custom filters`)
    .superRefine(unique((f) => f.pattern, "pattern"))
    .nullable(),
  enable_free_model_publication: flag,
  enable_free_model_training: flag,
  enable_paid_model_training: flag,
  enforce_zdr: z.boolean().nullable().openapi({
    deprecated: true,
    description: "Copied into each enforce_zdr_* field the request does not set",
  }),
  enforce_zdr_vendor_a: flag,
  enforce_zdr_vendor_b: flag,
  enforce_zdr_vendor_c: flag,
  enforce_zdr_vendor_d: flag,
  enforce_zdr_other: flag,
};

type Fields = typeof guardrailFields;
const allOptional = Object.fromEntries(
  Object.entries(guardrailFields).map(([k, v]) => [k, v.optional()]),
) as {
  [K in keyof Fields]: z.ZodOptional<Fields[K]>;
};

export const UpdateGuardrailBodySchema = z.strictObject(allOptional).openapi("UpdateGuardrailBody");
export type UpdateGuardrailBody = z.infer<typeof UpdateGuardrailBodySchema>;

export const CreateGuardrailBodySchema = z
  .strictObject({ ...allOptional, name: guardrailFields.name, workspace_id: z.string().min(1).optional() })
  .openapi("CreateGuardrailBody");
export type CreateGuardrailBody = z.infer<typeof CreateGuardrailBodySchema>;

export const GuardrailIdParamSchema = IdParamSchema;
export const GuardrailPageQuerySchema = PageQuerySchema;

export const ListGuardrailsQuerySchema = GuardrailPageQuerySchema.extend({
  workspace_id: z.string().min(1).optional(),
});

export const KeyAssignmentSchema = z
  .object({
    id: z.string(),
    guardrail_id: z.string(),
    key_hash: z.string(),
    key_name: z.string(),
    key_label: z.string(),
    assigned_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("GuardrailKeyAssignment");

export const MemberAssignmentSchema = z
  .object({
    id: z.string(),
    guardrail_id: z.string(),
    user_id: z.string(),
    organization_id: z.string(),
    assigned_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("GuardrailMemberAssignment");

const KeyHash = z.string().regex(/^[0-9a-f]{64}$/, "must be a key's 64-character SHA-256 hash");
const ASSIGN_MAX = 100;

export const KeyHashesBodySchema = z.strictObject({
  key_hashes: z.array(KeyHash).min(1, "list at least one key hash").max(ASSIGN_MAX),
});
export const MemberIdsBodySchema = z.strictObject({
  member_user_ids: z.array(z.string().min(1).max(200)).min(1, "list at least one user id").max(ASSIGN_MAX),
});
