// Wire shapes of presets and their versions (SDK-compatible), and the path/query parameters of the presets API.
import { z } from "@hono/zod-openapi";
import { PageQuerySchema } from "./common";

export const PresetVersionSchema = z
  .object({
    id: z.string(),
    preset_id: z.string(),
    version: z.int(),
    config: z.record(z.string(), z.unknown()),
    system_prompt: z.string().nullable(),
    creator_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("PresetVersion");
export type PresetVersion = z.infer<typeof PresetVersionSchema>;

export const PresetSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    status: z.literal("active"),
    status_updated_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    creator_user_id: z.string(),
    workspace_id: z.string(),
    designated_version_id: z.string().nullable(),
  })
  .openapi("Preset");
export type Preset = z.infer<typeof PresetSchema>;

export const PresetWithVersionSchema = PresetSchema.extend({
  designated_version: PresetVersionSchema.nullable(),
}).openapi("PresetWithDesignatedVersion");
export type PresetWithVersion = z.infer<typeof PresetWithVersionSchema>;

export const PRESET_SLUG_MAX = 100;

export const PresetSlugSchema = z
  .string()
  .min(1)
  .max(PRESET_SLUG_MAX, `a preset slug is at most ${PRESET_SLUG_MAX} characters`)
  .regex(/^[A-Za-z0-9._~-]+$/, "a preset slug is URL-safe: letters, digits, '-', '_', '.' and '~'")
  .openapi({ param: { name: "slug", in: "path" }, example: "my-preset" });

export const PresetSlugParamSchema = z.object({ slug: PresetSlugSchema });

export const PresetVersionParamSchema = z.object({
  slug: PresetSlugSchema,
  // Decimal digits only: a coerced number also took "0x1", "1e0" and " 1" for version 1.
  version: z
    .string()
    .regex(/^[1-9]\d{0,8}$/, "version must be a positive integer")
    .transform(Number)
    .openapi({ param: { name: "version", in: "path" }, type: "integer" }),
});

/** Pagination of the presets API: the SDK sends offset=0 and limit=50 unless told otherwise. */
export const PresetPageQuerySchema = PageQuerySchema;
