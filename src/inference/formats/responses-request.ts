// A responses request (the spec's object, already validated and under its preset) translated into the chat
// normal form runChat serves: input items -> messages, function tools, tool_choice, text.format,
// reasoning, and the gateway's own fields. What a stateless gateway cannot do is a 400, never dropped.
import { z } from "@hono/zod-openapi";
import { badRequest } from "../../lib/errors";
import { describeZodError } from "../../lib/openapi";
import { type ChatRequestBody, ChatRequestSchema, ReasoningEffortSchema } from "../../schemas/chat";
import type { ResponsesRequest } from "../../schemas/responses-request";

type Json = Record<string, unknown>;
type ChatMessage = ChatRequestBody["messages"][number];
type ChatPart = Extract<ChatMessage, { role: "user" }>["content"] extends infer C
  ? C extends Array<infer P>
    ? P
    : never
  : never;
type Assistant = Extract<ChatMessage, { role: "assistant" }>;

const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** A loose field of the responses schema parsed with its real shape; failures name the body path. */
function parseField<T extends z.ZodType>(schema: T, value: unknown, field: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({ ...issue, path: [field, ...issue.path] }));
  throw badRequest(describeZodError("json", new z.ZodError(issues)));
}

const TextConfigSchema = z.looseObject({
  format: z
    .discriminatedUnion("type", [
      z.looseObject({ type: z.literal("text") }),
      z.looseObject({ type: z.literal("json_object") }),
      z.looseObject({
        type: z.literal("json_schema"),
        name: z.string().min(1).max(64),
        description: z.string().optional(),
        schema: z.record(z.string(), z.unknown()),
        strict: z.boolean().nullish(),
      }),
    ])
    .optional(),
  verbosity: z.enum(["low", "medium", "high"]).nullish(),
});

const ReasoningConfigSchema = z.looseObject({
  effort: ReasoningEffortSchema.nullish(),
  summary: z.enum(["auto", "concise", "detailed"]).nullish(),
  max_tokens: z.int().min(0).nullish(),
  enabled: z.boolean().optional(),
  exclude: z.boolean().optional(),
});

const NamedFunction = z.object({ type: z.literal("function"), name: z.string().min(1) });

const ToolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  NamedFunction,
  z.object({
    type: z.literal("allowed_tools"),
    mode: z.enum(["auto", "required"]),
    tools: z.array(NamedFunction).min(1).max(512),
  }),
]);

const CacheControl = z.object({ type: z.literal("ephemeral"), ttl: z.string().optional() });

/** One content part of an input message as a chat part (text, image, file, audio). */
function chatPart(part: Json, where: string): ChatPart {
  const cache = CacheControl.safeParse(part.cache_control);
  switch (part.type) {
    case "input_text":
    case "output_text":
      return {
        type: "text",
        text: String(part.text),
        ...(cache.success ? { cache_control: cache.data } : {}),
      };
    case "refusal":
      return { type: "text", text: String(part.refusal) };
    case "input_image": {
      const url = str(part.image_url);
      if (!url) throw badRequest(`${where}: input_image needs an image_url (stored files are not kept here)`);
      const detail = part.detail as "auto" | "low" | "high" | undefined;
      return { type: "image_url", image_url: { url, ...(detail ? { detail } : {}) } };
    }
    case "input_file": {
      const fileData = str(part.file_data) ?? str(part.file_url);
      if (!fileData)
        throw badRequest(`${where}: input_file needs file_data or file_url (stored files are not kept here)`);
      const filename = str(part.filename);
      return { type: "file", file: { file_data: fileData, ...(filename ? { filename } : {}) } };
    }
    case "input_audio":
      return { type: "input_audio", input_audio: part.input_audio as { data: string; format: string } };
    default:
      throw badRequest(`${where}: content of type '${String(part.type)}' is not supported on this route`);
  }
}

function chatContent(content: unknown, where: string): string | ChatPart[] {
  if (typeof content === "string") return content;
  return (content as Json[]).map((p, j) => chatPart(p, `${where}.content[${j}]`));
}

/**
 * A replayed reasoning item as reasoning_details, one index per item so adapters keep its blocks apart:
 * reasoning text (with the item's signature, byte for byte), summaries, and encrypted content.
 */
function reasoningDetails(item: Json, index: number): Json[] {
  const format = str(item.format);
  // Encrypted reasoning keeps its item id: OpenAI takes a replayed reasoning item only with the id it gave it.
  const id = str(item.encrypted_content) ? str(item.id) : undefined;
  const common = { ...(id ? { id } : {}), ...(format ? { format } : {}), index };
  const texts = (Array.isArray(item.content) ? item.content : []).filter(
    (p): p is Json => isJson(p) && p.type === "reasoning_text" && typeof p.text === "string",
  );
  const signature = str(item.signature);
  const out: Json[] = texts.map((p, j) => ({
    type: "reasoning.text",
    text: p.text,
    ...(signature && j === texts.length - 1 ? { signature } : {}),
    ...common,
  }));
  if (signature && texts.length === 0) out.push({ type: "reasoning.text", text: "", signature, ...common });
  for (const s of Array.isArray(item.summary) ? item.summary : []) {
    if (isJson(s) && typeof s.text === "string")
      out.push({ type: "reasoning.summary", summary: s.text, ...common });
  }
  const encrypted = str(item.encrypted_content);
  if (encrypted) out.push({ type: "reasoning.encrypted", data: encrypted, ...common });
  return out;
}

/**
 * Input items in order as chat messages. Reasoning, assistant text and function calls of one turn join
 * into one assistant message (a new one starts when text or calls were already given); function call
 * outputs become tool messages.
 */
export function inputMessages(input: ResponsesRequest["input"]): ChatMessage[] {
  if (input === undefined) throw badRequest("Invalid request: body.input is required");
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (input.length === 0) throw badRequest("Invalid request: body.input must have at least 1 item");
  const messages: ChatMessage[] = [];
  let turn: Assistant | null = null;
  let reasoningIndex = 0;
  const flush = () => {
    if (turn) messages.push(turn);
    turn = null;
  };
  const openTurn = (fresh: boolean): Assistant => {
    if (fresh && turn && (turn.content || turn.tool_calls?.length)) flush();
    if (!turn) reasoningIndex = 0;
    turn ??= { role: "assistant", content: null };
    return turn;
  };
  input.forEach((raw, i) => {
    const item = raw as Json;
    const where = `input[${i}]`;
    const type = str(item.type) ?? "message";
    if (type === "message") {
      const role = item.role as "user" | "assistant" | "system" | "developer";
      if (role === "assistant") {
        const a = openTurn(true);
        const parts = typeof item.content === "string" ? null : (item.content as Json[]);
        const text = parts
          ? parts.flatMap((p) =>
              p.type === "output_text" || p.type === "input_text" ? [String(p.text)] : [],
            )
          : [item.content as string];
        const refusal = parts?.flatMap((p) => (p.type === "refusal" ? [String(p.refusal)] : [])) ?? [];
        a.content = text.join("");
        if (refusal.length) a.refusal = refusal.join("");
        return;
      }
      flush();
      messages.push({ role, content: chatContent(item.content, where) } as ChatMessage);
      return;
    }
    if (type === "function_call") {
      const a = openTurn(false);
      // Appended in place: a copy per item made 80,000 calls in one turn take seconds (quadratic).
      a.tool_calls ??= [];
      a.tool_calls.push({
        id: String(item.call_id),
        type: "function",
        function: { name: String(item.name), arguments: String(item.arguments) },
      });
      return;
    }
    if (type === "function_call_output") {
      flush();
      const output = item.output;
      const content = typeof output === "string" ? output : chatContent(output, where);
      messages.push({ role: "tool", tool_call_id: String(item.call_id), content });
      return;
    }
    if (type === "reasoning") {
      const a = openTurn(true);
      a.reasoning_details ??= [];
      for (const detail of reasoningDetails(item, reasoningIndex++)) a.reasoning_details.push(detail);
      return;
    }
    throw badRequest(
      `${where}: items of type '${type}' are not supported: this gateway is stateless and runs no server tools (send messages, function calls, their outputs and reasoning)`,
    );
  });
  flush();
  return messages;
}

/** Function tools as chat tools; deferred ones are withheld (no tool search runs here to load them). */
function chatTools(tools: ResponsesRequest["tools"]): ChatRequestBody["tools"] {
  if (!tools) return undefined;
  return tools.flatMap((t, i) => {
    if (t.type !== "function") {
      throw badRequest(
        `tools[${i}]: '${t.type}' tools are not supported on this route (function tools only: the gateway runs no server tools)`,
      );
    }
    if (t.defer_loading === true) return [];
    return [
      {
        type: "function" as const,
        function: {
          name: t.name,
          ...(t.description != null ? { description: t.description } : {}),
          ...(t.parameters != null ? { parameters: t.parameters } : {}),
          ...(t.strict != null ? { strict: t.strict } : {}),
        },
      },
    ];
  });
}

/**
 * The tool choice in chat's form. Deferred tools (`defer_loading`) are not sent (the gateway loads none
 * later), so a call forced to one is refused naming that (the schema already refuses only deferred tools).
 */
function chatToolChoice(
  choice: ResponsesRequest["tool_choice"],
  given: ResponsesRequest["tools"],
): ChatRequestBody["tool_choice"] {
  if (choice === undefined) return undefined;
  const parsed = parseField(ToolChoiceSchema, choice, "tool_choice");
  const deferred = (given ?? []).flatMap((t) =>
    t.type === "function" && t.defer_loading === true ? [t.name] : [],
  );
  if (typeof parsed === "string") return parsed;
  if (parsed.type === "function" && deferred.includes(parsed.name)) {
    throw badRequest(
      `tool_choice names the function '${parsed.name}', which is deferred (defer_loading): deferred tools are not sent, so a call cannot be forced to it`,
    );
  }
  if (parsed.type === "function") return { type: "function", function: { name: parsed.name } };
  const tools = parsed.tools.map((t) => ({ type: "function" as const, function: { name: t.name } }));
  return { type: "allowed_tools", allowed_tools: { mode: parsed.mode, tools } };
}

function chatResponseFormat(text: ResponsesRequest["text"]): ChatRequestBody["response_format"] {
  if (text === undefined) return undefined;
  const format = parseField(TextConfigSchema, text, "text").format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  return {
    type: "json_schema",
    json_schema: {
      name: format.name,
      schema: format.schema,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.strict != null ? { strict: format.strict } : {}),
    },
  };
}

const defined = (o: Json) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * The chat body that serves a responses request. `chatDefaults` (a chat-made preset's own fields) fill
 * what the request leaves undefined. The result is checked against the chat schema, so the adapters
 * only ever see a body chat completions would have accepted.
 */
export function responsesToChat(
  body: ResponsesRequest,
  chatDefaults: Partial<ChatRequestBody> = {},
): ChatRequestBody {
  if (body.background === true) {
    throw badRequest("Invalid request: body.background: background responses are not supported (stateless)");
  }
  if (body.prompt != null) {
    throw badRequest("Invalid request: body.prompt: stored prompt templates are not supported (stateless)");
  }
  const messages = inputMessages(body.input);
  if (body.instructions != null) messages.unshift({ role: "system", content: body.instructions });
  const reasoning =
    body.reasoning == null ? undefined : parseField(ReasoningConfigSchema, body.reasoning, "reasoning");
  const chat: Json = defined({
    model: body.model,
    models: body.models,
    messages,
    stream: body.stream,
    max_tokens: body.max_output_tokens ?? undefined,
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    frequency_penalty: body.frequency_penalty,
    presence_penalty: body.presence_penalty,
    parallel_tool_calls: body.parallel_tool_calls,
    tools: chatTools(body.tools),
    tool_choice: chatToolChoice(body.tool_choice, body.tools),
    response_format: chatResponseFormat(body.text),
    reasoning: reasoning
      ? defined({
          effort: reasoning.effort,
          summary: reasoning.summary,
          max_tokens: reasoning.max_tokens,
          enabled: reasoning.enabled,
          exclude: reasoning.exclude,
        })
      : undefined,
    provider: body.provider,
    plugins: body.plugins,
    user: body.user,
    session_id: body.session_id,
    metadata: body.metadata ?? undefined,
    trace: body.trace,
    debug: body.debug,
    cache_control: body.cache_control,
    prompt_cache_key: body.prompt_cache_key ?? undefined,
    service_tier: body.service_tier,
    modalities: body.modalities,
  });
  for (const [field, value] of Object.entries(chatDefaults))
    if (chat[field] === undefined) chat[field] = value;
  const parsed = ChatRequestSchema.safeParse(chat);
  if (!parsed.success) throw badRequest(describeZodError("json", parsed.error));
  return parsed.data;
}

/** Names of the function tools that run asynchronously (their calls are marked `async`). */
export function asyncToolNames(body: ResponsesRequest): Set<string> {
  return new Set((body.tools ?? []).flatMap((t) => (t.type === "function" && t.async ? [t.name] : [])));
}
