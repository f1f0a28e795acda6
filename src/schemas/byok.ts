// Wire shapes of BYOK provider credentials (SDK-compatible) and the bodies and queries of the BYOK API.
import { z } from "@hono/zod-openapi";
import { IdParamSchema, storedText } from "./common";

export const ByokCredentialSchema = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    provider: z.string(),
    name: z.string(),
    label: z
      .string()
      .openapi({ description: "Masked form of the stored key (`sk-...AbCd`); the key is never returned" }),
    disabled: z.boolean(),
    is_byok_only: z.boolean(),
    is_fallback: z.boolean(),
    is_required: z.boolean(),
    sort_order: z.int(),
    allowed_api_key_hashes: z.array(z.string()).nullable(),
    allowed_models: z.array(z.string()).nullable(),
    allowed_user_ids: z.array(z.string()).nullable(),
    declared_zdr: z.boolean().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("ByokCredential");
export type ByokCredential = z.infer<typeof ByokCredentialSchema>;

export const BYOK_KEY_MAX = 4096;
const RESTRICTION_MAX = 1000;

/** The upstream API key: printable, no whitespace inside, never echoed back. */
const UpstreamKey = z
  .string()
  .trim()
  .min(8, "key is too short to be a provider API key")
  .max(BYOK_KEY_MAX, `key is at most ${BYOK_KEY_MAX} characters`)
  .regex(/^[\x21-\x7e]+$/, "key must be printable ASCII without spaces");

const restriction = <T extends z.ZodType>(item: T, what: string) =>
  z
    .array(item)
    .min(1, `must list at least one ${what}; send null for no restriction`)
    .max(RESTRICTION_MAX)
    .nullable();

const settable = {
  name: storedText(z.string().trim().min(1).max(200)).nullable(),
  disabled: z.boolean(),
  is_byok_only: z.boolean(),
  is_fallback: z.boolean(),
  is_required: z.boolean(),
  sort_order: z.int().min(-1_000_000).max(1_000_000),
  allowed_api_key_hashes: restriction(
    z.string().regex(/^[0-9a-f]{64}$/, "must be a key's SHA-256 hash"),
    "key hash",
  ),
  allowed_models: restriction(z.string().trim().min(1).max(200), "model"),
  allowed_user_ids: restriction(z.string().min(1).max(200), "user id"),
  declared_zdr: z.boolean().nullable(),
};

type Settable = typeof settable;
const optional = Object.fromEntries(Object.entries(settable).map(([k, v]) => [k, v.optional()])) as {
  [K in keyof Settable]: z.ZodOptional<Settable[K]>;
};

export const CreateByokBodySchema = z
  .strictObject({
    ...optional,
    provider: z.string().min(1).max(100),
    key: UpstreamKey,
    workspace_id: z.string().min(1).optional(),
  })
  .openapi("CreateByokBody");
export type CreateByokBody = z.infer<typeof CreateByokBodySchema>;

export const UpdateByokBodySchema = z
  .strictObject({ ...optional, key: UpstreamKey.optional() })
  .refine((b) => Object.keys(b).length > 0, "send at least one field to update")
  .openapi("UpdateByokBody");
export type UpdateByokBody = z.infer<typeof UpdateByokBodySchema>;

export const ByokIdParamSchema = IdParamSchema;

export const BYOK_DEFAULT_LIMIT = 50;

export const ListByokQuerySchema = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(BYOK_DEFAULT_LIMIT),
  workspace_id: z.string().min(1).optional(),
  provider: z.string().min(1).max(100).optional(),
});
