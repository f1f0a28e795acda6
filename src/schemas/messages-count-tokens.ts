// POST /messages/count_tokens: Anthropic's count request (a Messages body without max_tokens or any
// generation setting) plus the gateway's routing fields, and the `{input_tokens}` it answers.
import { z } from "@hono/zod-openapi";
import { MessagesRequestSchema } from "./messages";

const fields = MessagesRequestSchema.shape;

export const CountTokensRequestSchema = z
  .object({
    model: fields.model,
    messages: fields.messages,
    system: fields.system,
    tools: fields.tools,
    tool_choice: fields.tool_choice,
    thinking: fields.thinking,
    cache_control: fields.cache_control,
    output_config: fields.output_config,
    models: fields.models,
    fallbacks: fields.fallbacks,
    provider: fields.provider,
    preset: fields.preset,
  })
  .refine((body) => !(body.models?.length && body.fallbacks?.length), {
    message: "Send fallback models as `models` or as `fallbacks`, not both",
    path: ["fallbacks"],
  })
  .openapi("MessagesCountTokensRequest", {
    description:
      "An Anthropic count_tokens request: a Messages request without `max_tokens` or generation settings. Gateway additions: `provider` preferences, fallback `models` (or `fallbacks`) and `preset`, which choose the endpoint that counts as they would choose the one that answers. Unknown fields are ignored.",
  });
export type CountTokensRequest = z.infer<typeof CountTokensRequestSchema>;

export const CountTokensResponseSchema = z
  .object({
    input_tokens: z.int().min(0).openapi({
      description:
        "Prompt tokens of the request (messages, system prompt and tools) as the endpoint's provider counts them, or the gateway's estimate where the provider cannot count",
    }),
  })
  .openapi("MessageTokensCount");
