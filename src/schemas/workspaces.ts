// Wire shape of a workspace (as @openrouter/sdk's Workspace reads it) and the parameters of the workspaces API.
import { z } from "@hono/zod-openapi";
import { IdParamSchema, PageQuerySchema } from "./common";

export const WorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    default_guardrail_id: z.string().openapi({
      description:
        "The guardrail that applies to every key of the workspace. Until it is configured no guardrail " +
        "row exists (GET /guardrails/{id} answers 404 saying so); PATCH /guardrails/{id} configures it.",
    }),
    default_guardrail_configured: z.boolean(),
    default_text_model: z.string().nullable(),
    default_image_model: z.string().nullable(),
    default_provider_sort: z.string().nullable(),
    io_logging_api_key_ids: z.array(z.int()).nullable(),
    io_logging_sampling_rate: z.number(),
    is_data_discount_logging_enabled: z.boolean(),
    is_observability_broadcast_enabled: z.boolean(),
    is_observability_io_logging_enabled: z.boolean(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string().nullable(),
  })
  .openapi("Workspace");
export type Workspace = z.infer<typeof WorkspaceSchema>;

export const WorkspaceIdParamSchema = IdParamSchema;
export const WorkspacePageQuerySchema = PageQuerySchema;
