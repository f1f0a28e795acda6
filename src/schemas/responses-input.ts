// Input items of a responses request: messages (easy and typed) and the other item kinds, checked by kind.
import { z } from "@hono/zod-openapi";
import { explainedIssue } from "../lib/zod-issues";
import { MAX_ITEMS, MAX_TURN_ITEMS, PromptTextSchema as Text } from "./common";
import { audioData, mediaUrl } from "./media-common";

const ROLES = ["user", "assistant", "system", "developer"] as const;

const ContentPart = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("input_text"), text: Text }),
  z.looseObject({ type: z.literal("output_text"), text: Text }),
  z.looseObject({ type: z.literal("refusal"), refusal: Text }),
  z.looseObject({
    type: z.literal("input_image"),
    // As chat checks its image parts, here where the caller's path is the input's.
    image_url: mediaUrl("image", { http: true }).nullable().optional(),
    file_id: z.string().nullable().optional(),
    detail: z.enum(["auto", "low", "high"]).optional(),
  }),
  z.looseObject({ type: z.literal("input_file") }),
  z.looseObject({
    type: z.literal("input_audio"),
    input_audio: z.looseObject({
      data: audioData(),
      format: z.string(),
    }),
  }),
  z.looseObject({ type: z.literal("input_video") }),
]);

const MessageItem = z.looseObject({
  type: z.literal("message").optional(),
  role: z.enum(ROLES),
  content: z.union([Text, z.array(ContentPart).max(MAX_ITEMS)]),
});

const callId = z.string().min(1);

/** Required fields per item kind; kinds not listed here only need their `type`. */
const ITEM_SHAPES: Record<string, z.ZodType> = {
  function_call: z.looseObject({ call_id: callId, name: z.string().min(1), arguments: Text }),
  function_call_output: z.looseObject({
    call_id: callId,
    output: z.union([Text, z.array(z.looseObject({ type: z.string() })).max(MAX_ITEMS)]),
  }),
  custom_tool_call: z.looseObject({ call_id: callId, name: z.string().min(1), input: Text }),
  custom_tool_call_output: z.looseObject({ call_id: callId, output: z.unknown() }),
  reasoning: z.looseObject({
    summary: z
      .array(z.looseObject({ type: z.string() }))
      .max(MAX_ITEMS)
      .optional(),
  }),
  item_reference: z.looseObject({ id: z.string().min(1) }),
  mcp_approval_response: z.looseObject({ approval_request_id: z.string().min(1), approve: z.boolean() }),
  shell_call_output: z.looseObject({ call_id: callId }),
  local_shell_call_output: z.looseObject({ call_id: callId }),
  apply_patch_call_output: z.looseObject({ call_id: callId }),
};

/** Item kinds accepted in `input` besides messages. */
export const INPUT_ITEM_TYPES = [
  "function_call",
  "function_call_output",
  "reasoning",
  "web_search_call",
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "code_interpreter_call",
  "image_generation_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_call",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "custom_tool_call",
  "custom_tool_call_output",
  "compaction",
  "context_compaction",
  "item_reference",
  "configuration_update",
  "additional_tools",
  "agent_message",
] as const;

/** Server-tool call items, `svc:<tool>` like the tools that produce them. */
const SERVICE_ITEM_NAMES = [
  "advisor",
  "apply_patch",
  "bash",
  "browser_use",
  "code_interpreter",
  "datetime",
  "file_search",
  "files",
  "fusion",
  "image_generation",
  "mcp",
  "memory",
  "search_models",
  "shell",
  "subagent",
  "text_editor",
  "tool_search",
  "web_fetch",
  "web_search",
];

const KNOWN_TYPES = new Set<string>([...INPUT_ITEM_TYPES, ...SERVICE_ITEM_NAMES.map((n) => `svc:${n}`)]);

export const InputItemSchema = z
  .looseObject({ type: z.string().optional() })
  .superRefine((item, ctx) => {
    const type = item.type;
    const schema = type === undefined || type === "message" ? MessageItem : ITEM_SHAPES[type];
    if (type !== undefined && type !== "message" && !KNOWN_TYPES.has(type)) {
      ctx.addIssue({ code: "custom", path: ["type"], message: `unknown input item type '${type}'` });
      return;
    }
    if (!schema) return;
    const result = schema.safeParse(item);
    if (result.success) return;
    for (const raw of result.error.issues) {
      const issue = explainedIssue(raw);
      ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
    }
  })
  .openapi("ResponsesInputItem", {
    description: "A message ({role, content}) or an item of another kind, identified by `type`",
  });

export const InputSchema = z.union([Text, z.array(InputItemSchema).max(MAX_TURN_ITEMS)]);
