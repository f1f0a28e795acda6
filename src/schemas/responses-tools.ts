// Tool definitions of a responses request: function tools (async, defer_loading), svc:<name> server tools, other kinds.
import { z } from "@hono/zod-openapi";

/** Service-specific server tools, sent as `svc:<name>`. */
export const SERVICE_TOOL_NAMES = [
  "advisor",
  "subagent",
  "datetime",
  "files",
  "fusion",
  "image_generation",
  "search_models",
  "web_fetch",
  "web_search",
  "apply_patch",
  "bash",
  "shell",
  "tool_search",
] as const;

/** Standard (non-function) tool kinds by `type`. */
export const OTHER_TOOL_TYPES = [
  "web_search_preview",
  "web_search_preview_2025_03_11",
  "web_search",
  "web_search_2025_08_26",
  "file_search",
  "computer_use_preview",
  "code_interpreter",
  "mcp",
  "image_generation",
  "local_shell",
  "shell",
  "apply_patch",
  "custom",
  "namespace",
] as const;

export const FunctionToolSchema = z
  .strictObject({
    type: z.literal("function"),
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, "a function name is 1-64 letters, digits, '_', '.' or '-'"),
    description: z.string().max(10_000).nullable().optional(),
    parameters: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .openapi({ description: "JSON Schema object of the arguments" }),
    strict: z.boolean().nullable().optional(),
    async: z.boolean().optional().openapi({
      description: "The model continues without waiting; the result comes later as function_call_output",
    }),
    defer_loading: z
      .boolean()
      .optional()
      .openapi({ description: "Withheld until the tool-search server tool finds it" }),
  })
  .openapi("FunctionTool");

const serviceTools = SERVICE_TOOL_NAMES.map((name) => z.looseObject({ type: z.literal(`svc:${name}`) }));

const otherTools = OTHER_TOOL_TYPES.map((type) => {
  // The kinds whose identity depends on a name or label must carry it.
  if (type === "custom") return z.looseObject({ type: z.literal(type), name: z.string().min(1) });
  if (type === "mcp") return z.looseObject({ type: z.literal(type), server_label: z.string().min(1) });
  return z.looseObject({ type: z.literal(type) });
});

export const ToolSchema = z
  .discriminatedUnion("type", [FunctionToolSchema, ...serviceTools, ...otherTools])
  .openapi("ResponsesTool");
export type Tool = z.infer<typeof ToolSchema>;

export const ToolsSchema = z
  .array(ToolSchema)
  .max(512)
  .superRefine((tools, ctx) => {
    const deferred = tools.filter((t) => t.type === "function" && t.defer_loading === true);
    if (deferred.length > 0 && deferred.length === tools.length) {
      ctx.addIssue({
        code: "custom",
        message:
          "at least one tool must not use defer_loading (deferred tools are found through tool search)",
      });
    }
    const names = new Set<string>();
    tools.forEach((t, i) => {
      if (t.type !== "function") return;
      if (names.has(t.name)) {
        ctx.addIssue({
          code: "custom",
          path: [i, "name"],
          message: `function name '${t.name}' is used twice`,
        });
      }
      names.add(t.name);
    });
  });
