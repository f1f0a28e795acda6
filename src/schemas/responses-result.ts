// The `response` object POST /responses answers (for the OpenAPI document; the writer is inference/formats/responses.ts).
import { z } from "@hono/zod-openapi";

const OutputItemSchema = z
  .looseObject({
    type: z.enum(["message", "reasoning", "function_call"]),
    id: z.string(),
    status: z.enum(["in_progress", "completed", "incomplete"]),
  })
  .openapi("ResponsesOutputItem", {
    description:
      "A `message` (role, content of output_text/refusal parts), a `reasoning` item (summary, content, encrypted_content, signature, format) or a `function_call` (call_id, name, arguments)",
  });

const ResponsesUsageSchema = z.object({
  input_tokens: z.int(),
  input_tokens_details: z.object({ cached_tokens: z.int(), cache_write_tokens: z.int() }),
  output_tokens: z.int(),
  output_tokens_details: z.object({ reasoning_tokens: z.int() }),
  total_tokens: z.int(),
  cost: z.number(),
  is_byok: z.boolean(),
  cost_details: z.object({
    upstream_inference_cost: z.number().nullable(),
    upstream_inference_input_cost: z.number(),
    upstream_inference_output_cost: z.number(),
  }),
});

export const ResponsesResultSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal("response"),
    created_at: z.int(),
    completed_at: z.int().nullable(),
    model: z.string(),
    provider: z.string(),
    status: z.enum(["completed", "incomplete", "failed", "in_progress"]),
    output: z.array(OutputItemSchema),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    error_type: z.string().optional(),
    incomplete_details: z.object({ reason: z.string() }).nullable(),
    instructions: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    tools: z.array(z.record(z.string(), z.unknown())),
    tool_choice: z.union([z.string(), z.record(z.string(), z.unknown())]),
    parallel_tool_calls: z.boolean(),
    temperature: z.number().nullable(),
    top_p: z.number().nullable(),
    presence_penalty: z.number().nullable(),
    frequency_penalty: z.number().nullable(),
    usage: ResponsesUsageSchema.nullable(),
  })
  .openapi("ResponsesResult");
