// OpenAI-shaped chat requests as Anthropic Messages bodies (POST /v1/messages), a pure translation.

import type {
  ContentBlockParam,
  DocumentBlockParam,
  ImageBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RedactedThinkingBlockParam,
  TextBlockParam,
  ThinkingBlockParam,
  Tool,
  ToolChoice,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import { fnv1a } from "../../lib/hash";
import { UpstreamError } from "../errors";
import { optionsOf } from "../options";
import type { ChatMessage, ChatRequest } from "../types";

/** The completion bound when the request names none (Anthropic requires one). */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Thinking budget (budget_tokens) per reasoning effort. Anthropic's minimum budget is 1024; `reasoning`
 * with neither effort nor max_tokens but `enabled: true` means medium. Every budget is then cut to 80% of
 * max_tokens (always set: the request's, else the endpoint's output bound), so `max` is the most the
 * model's output allows.
 */
export const THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  max: 65536,
};
const MIN_THINKING_BUDGET = 1024;
/** Share of an explicit max_tokens a thinking budget may take, so the answer keeps room (OpenRouter's "high"). */
const MAX_BUDGET_SHARE = 0.8;

/** The `format` of the reasoning_details this adapter emits and accepts back (OpenRouter's name for it). */
export const REASONING_FORMAT = "anthropic-claude-v1";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Something the client sent that the Messages API has no room for: another endpoint may take it. */
function unsupported(what: string): UpstreamError {
  return new UpstreamError({
    kind: "http",
    status: 400,
    message: `Anthropic Messages does not accept ${what}`,
    retryable: true,
  });
}

function cacheControl(part: Json): Pick<TextBlockParam, "cache_control"> {
  return isObject(part.cache_control)
    ? { cache_control: part.cache_control as unknown as TextBlockParam["cache_control"] }
    : {};
}

/** `data:<type>;base64,<data>` becomes a base64 source; any other URL is fetched by Anthropic. */
function imageBlock(part: Json): ImageBlockParam {
  const ref = part.image_url;
  const url = typeof ref === "string" ? ref : isObject(ref) && typeof ref.url === "string" ? ref.url : "";
  if (url.startsWith("data:")) {
    const comma = url.indexOf(",");
    const header = comma > 0 ? url.slice(5, comma) : "";
    if (!header.endsWith(";base64")) throw unsupported("a data URL image that is not base64");
    const mediaType = header.slice(0, header.indexOf(";"));
    return {
      type: "image",
      source: {
        type: "base64",
        media_type: mediaType as "image/png",
        data: url.slice(comma + 1),
      },
      ...cacheControl(part),
    };
  }
  if (!url) throw unsupported("an image_url part without a URL");
  return { type: "image", source: { type: "url", url }, ...cacheControl(part) };
}

/** A PDF `file` part (a base64 data URL or an https URL in `file_data`) as a document block. */
function documentBlock(part: Json): DocumentBlockParam {
  const file = isObject(part.file) ? part.file : {};
  const data = typeof file.file_data === "string" ? file.file_data : "";
  const title = typeof file.filename === "string" && file.filename ? { title: file.filename } : {};
  const pdf = "data:application/pdf;base64,";
  if (data.startsWith(pdf)) {
    return {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: data.slice(pdf.length) },
      ...title,
      ...cacheControl(part),
    };
  }
  if (/^https?:\/\//.test(data)) {
    return { type: "document", source: { type: "url", url: data }, ...title, ...cacheControl(part) };
  }
  throw unsupported("file parts other than PDFs (a base64 data URL or a URL)");
}

type MediaBlock = TextBlockParam | ImageBlockParam | DocumentBlockParam;

/** Text, image and PDF parts (user turns, tool results); other part types have no Anthropic block here. */
function mediaBlocks(content: unknown): MediaBlock[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  if (!Array.isArray(content)) return [];
  const blocks: MediaBlock[] = [];
  for (const part of content) {
    if (!isObject(part)) continue;
    if (part.type === "text" && typeof part.text === "string") {
      blocks.push({ type: "text", text: part.text, ...cacheControl(part) });
    } else if (part.type === "image_url") {
      blocks.push(imageBlock(part));
    } else if (part.type === "file") {
      blocks.push(documentBlock(part));
    } else {
      throw unsupported(`${String(part.type)} content parts`);
    }
  }
  return blocks;
}

function systemBlocks(content: unknown): TextBlockParam[] {
  return mediaBlocks(content).map((b) => {
    if (b.type !== "text") throw unsupported("images or files in system messages");
    return b;
  });
}

/**
 * Reasoning the client got from this adapter and sends back: `reasoning.text` entries with a signature
 * become thinking blocks (text and signature byte for byte), `reasoning.encrypted` ones redacted_thinking.
 * Streamed fragments of one block (same index) are joined first. Native `thinking` / `redacted_thinking`
 * entries pass as they are. Unsigned text and other providers' formats cannot be verified and are left out.
 */
function thinkingBlocks(details: unknown): Array<ThinkingBlockParam | RedactedThinkingBlockParam> {
  if (!Array.isArray(details)) return [];
  const blocks: Array<ThinkingBlockParam | RedactedThinkingBlockParam> = [];
  const open = new Map<number, ThinkingBlockParam>();
  for (const d of details) {
    if (!isObject(d)) continue;
    if (d.type === "thinking" && typeof d.thinking === "string" && typeof d.signature === "string") {
      blocks.push({ type: "thinking", thinking: d.thinking, signature: d.signature });
      continue;
    }
    if (d.type === "redacted_thinking" && typeof d.data === "string") {
      blocks.push({ type: "redacted_thinking", data: d.data });
      continue;
    }
    if (d.format != null && d.format !== REASONING_FORMAT) continue;
    if (d.type === "reasoning.encrypted" && typeof d.data === "string") {
      blocks.push({ type: "redacted_thinking", data: d.data });
    } else if (d.type === "reasoning.text") {
      const text = typeof d.text === "string" ? d.text : "";
      const signature = typeof d.signature === "string" ? d.signature : "";
      const index = typeof d.index === "number" ? d.index : undefined;
      const same = index === undefined ? undefined : open.get(index);
      if (same) {
        same.thinking += text;
        if (signature) same.signature = signature;
      } else {
        const block: ThinkingBlockParam = { type: "thinking", thinking: text, signature };
        blocks.push(block);
        if (index !== undefined) open.set(index, block);
      }
    }
  }
  return blocks.filter((b) => b.type === "redacted_thinking" || b.signature !== "");
}

/**
 * A tool call id as Anthropic takes it (letters, digits, `_` and `-`; it refuses others with a 400). Other
 * providers' ids (Kimi's `functions.get_weather:0`) get `_` for each other character and a hash of the
 * whole id, so two ids that differ only there stay apart. The same id always maps alike: a tool_use and
 * its tool_result still pair.
 */
export function anthropicToolId(id: string): string {
  if (/^[a-zA-Z0-9_-]+$/.test(id)) return id;
  return `${id.replace(/[^a-zA-Z0-9_-]/g, "_")}_${fnv1a(id).toString(16).padStart(8, "0")}`;
}

function toolUse(call: unknown): ToolUseBlockParam {
  const c = isObject(call) ? call : {};
  const fn = isObject(c.function) ? c.function : {};
  let input: unknown = {};
  if (typeof fn.arguments === "string" && fn.arguments.trim() !== "") {
    try {
      input = JSON.parse(fn.arguments);
    } catch {
      // Arguments a model once produced but that are not JSON replay as an empty input, not a failure.
    }
  }
  return {
    type: "tool_use",
    id: anthropicToolId(typeof c.id === "string" ? c.id : ""),
    name: typeof fn.name === "string" ? fn.name : "",
    input: isObject(input) ? input : {},
  };
}

function assistantContent(m: ChatMessage): string | ContentBlockParam[] | undefined {
  const thinking = thinkingBlocks(m.reasoning_details);
  const tools = Array.isArray(m.tool_calls) ? m.tool_calls.map(toolUse) : [];
  // Anthropic has no refusal block: a refusal the turn carries is more of its text.
  const refusal = typeof m.refusal === "string" ? m.refusal : "";
  if (thinking.length === 0 && tools.length === 0 && !refusal && typeof m.content === "string") {
    return m.content || undefined;
  }
  const text: TextBlockParam[] = [];
  if (typeof m.content === "string") {
    if (m.content) text.push({ type: "text", text: m.content });
  } else if (Array.isArray(m.content)) {
    for (const part of m.content) {
      if (isObject(part) && part.type === "text" && typeof part.text === "string" && part.text) {
        text.push({ type: "text", text: part.text, ...cacheControl(part) });
      }
    }
  }
  if (refusal) text.push({ type: "text", text: refusal });
  const blocks = inBlockOrder(m.block_order, { thinking, text, tool_use: tools }) ?? [
    // Thinking first: Anthropic checks that a turn's thinking precedes its text and tool use.
    ...thinking,
    ...text,
    ...tools,
  ];
  return blocks.length > 0 ? blocks : undefined;
}

/**
 * The turn's blocks in the order a Messages client sent them (`block_order`, see ChatMessage), when it
 * accounts for every block; else undefined (the usual order is used).
 */
function inBlockOrder(
  order: unknown,
  kinds: Record<"thinking" | "text" | "tool_use", ContentBlockParam[]>,
): ContentBlockParam[] | undefined {
  if (!Array.isArray(order)) return undefined;
  const total = kinds.thinking.length + kinds.text.length + kinds.tool_use.length;
  if (order.length !== total) return undefined;
  const next = { thinking: 0, text: 0, tool_use: 0 };
  const blocks: ContentBlockParam[] = [];
  for (const kind of order as unknown[]) {
    if (kind !== "thinking" && kind !== "text" && kind !== "tool_use") return undefined;
    const block = kinds[kind][next[kind]++];
    if (!block) return undefined;
    blocks.push(block);
  }
  return blocks;
}

/** A tool message; `is_error` and `cache_control` come with it when a Messages client sent them. */
function toolResult(m: ChatMessage): ToolResultBlockParam {
  const content = typeof m.content === "string" ? m.content : mediaBlocks(m.content);
  return {
    type: "tool_result",
    tool_use_id: anthropicToolId(typeof m.tool_call_id === "string" ? m.tool_call_id : ""),
    content,
    ...(m.is_error === true ? { is_error: true } : {}),
    ...cacheControl(m),
  };
}

/**
 * System and developer messages move to the top-level `system` (in order, wherever they stood); tool
 * messages become tool_result blocks of one user turn, consecutive ones in the same turn. Empty assistant
 * turns are dropped (Anthropic refuses empty content; it joins the user turns around them).
 */
export function translateMessages(messages: ChatMessage[]): {
  system: TextBlockParam[];
  messages: MessageParam[];
} {
  const system: TextBlockParam[] = [];
  const out: MessageParam[] = [];
  let results: ToolResultBlockParam[] | undefined;
  for (const m of messages) {
    switch (m.role) {
      case "system":
      case "developer":
        system.push(...systemBlocks(m.content));
        break;
      case "tool":
        if (results) results.push(toolResult(m));
        else {
          results = [toolResult(m)];
          out.push({ role: "user", content: results });
        }
        break;
      case "user":
        results = undefined;
        out.push({
          role: "user",
          content: typeof m.content === "string" ? m.content : mediaBlocks(m.content),
        });
        break;
      case "assistant": {
        results = undefined;
        const content = assistantContent(m);
        if (content !== undefined) out.push({ role: "assistant", content });
        break;
      }
      default:
        throw unsupported(`messages with role ${m.role}`);
    }
  }
  return { system, messages: out };
}

function tools(list: Array<Record<string, unknown>>): Tool[] {
  return list.map((t) => {
    const fn = t.type === "function" && isObject(t.function) ? t.function : undefined;
    if (!fn || typeof fn.name !== "string") throw unsupported(`tools of type ${String(t.type)}`);
    const tool: Tool = {
      name: fn.name,
      input_schema: (isObject(fn.parameters)
        ? fn.parameters
        : { type: "object", properties: {} }) as Tool["input_schema"],
    };
    if (typeof fn.description === "string") tool.description = fn.description;
    if (isObject(t.cache_control)) tool.cache_control = t.cache_control as unknown as Tool["cache_control"];
    return tool;
  });
}

/** auto / none / required -> any / {function:{name}} -> tool; parallel_tool_calls:false disables parallel use. */
function toolChoice(choice: unknown, parallel: boolean | undefined): ToolChoice | undefined {
  const single = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "any", ...single };
  if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === "string") {
    return { type: "tool", name: choice.function.name, ...single };
  }
  if (choice === "auto" || parallel === false) return { type: "auto", ...single };
  return undefined;
}

/** The thinking budget the request asks for, before fitting it under max_tokens; undefined: no thinking. */
function requestedBudget(reasoning: ChatRequest["reasoning"]): number | undefined {
  if (!reasoning || reasoning.enabled === false || reasoning.effort === "none") return undefined;
  if (reasoning.max_tokens != null) return Math.max(MIN_THINKING_BUDGET, reasoning.max_tokens);
  if (reasoning.effort) return THINKING_BUDGETS[reasoning.effort] ?? THINKING_BUDGETS.medium;
  return reasoning.enabled === true ? THINKING_BUDGETS.medium : undefined;
}

/**
 * max_tokens and the thinking budget together. Without a bound from the request: 4096, or the budget plus
 * 4096 when thinking. With one: the budget is cut to 80% of it; below Anthropic's 1024 minimum, no thinking.
 */
function bounds(request: ChatRequest): { maxTokens: number; budget?: number } {
  const wanted = requestedBudget(request.reasoning);
  if (request.maxTokens === undefined) {
    return wanted === undefined
      ? { maxTokens: DEFAULT_MAX_TOKENS }
      : { maxTokens: wanted + DEFAULT_MAX_TOKENS, budget: wanted };
  }
  if (wanted === undefined) return { maxTokens: request.maxTokens };
  const budget = Math.min(wanted, Math.floor(request.maxTokens * MAX_BUDGET_SHARE));
  return budget >= MIN_THINKING_BUDGET
    ? { maxTokens: request.maxTokens, budget }
    : { maxTokens: request.maxTokens };
}

/**
 * The body sent upstream. Fields Anthropic lacks (penalties, seed, logit_bias, logprobs) are not sent;
 * `json_object` has no equivalent and is dropped, `json_schema` goes to output_config.format. With
 * thinking on, temperature and top_k are left out and top_p only kept from 0.95 up (Anthropic refuses
 * other values then), and thinking is off under a tool choice that forces a call (Anthropic refuses
 * both at once). Passthrough options come last; they cannot change the model or turn streaming off.
 */
export function anthropicBody(request: ChatRequest, upstreamModel: string): MessageCreateParamsStreaming {
  const { system, messages } = translateMessages(request.messages);
  const choice = request.tools?.length
    ? toolChoice(request.toolChoice, request.parallelToolCalls)
    : undefined;
  // Anthropic refuses thinking with a tool choice that forces a call ("any" or one tool): the caller's
  // choice of tool is kept, the thinking left out.
  const forced = choice?.type === "any" || choice?.type === "tool";
  const { maxTokens, budget } = bounds(forced ? { ...request, reasoning: undefined } : request);
  const body: MessageCreateParamsStreaming = {
    model: upstreamModel,
    max_tokens: maxTokens,
    messages,
    stream: true,
  };
  if (system.length > 0) body.system = system;
  if (budget !== undefined) body.thinking = { type: "enabled", budget_tokens: budget };
  if (budget === undefined && request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined && (budget === undefined || request.topP >= 0.95)) body.top_p = request.topP;
  if (budget === undefined && request.topK !== undefined) body.top_k = request.topK;
  if (request.stop?.length) body.stop_sequences = request.stop;
  if (request.tools?.length) body.tools = tools(request.tools);
  if (choice) body.tool_choice = choice;
  const format = request.responseFormat;
  if (format?.type === "json_schema" && isObject(format.json_schema) && isObject(format.json_schema.schema)) {
    body.output_config = { format: { type: "json_schema", schema: format.json_schema.schema } };
  }
  const effort = request.anthropic?.effort;
  if (effort) {
    body.output_config = {
      ...body.output_config,
      effort: effort as NonNullable<MessageCreateParamsStreaming["output_config"]>["effort"],
    };
  }
  if (request.user) body.metadata = { user_id: request.user };
  if (request.cacheControl)
    body.cache_control = request.cacheControl as unknown as MessageCreateParamsStreaming["cache_control"];
  // Provider options add fields under the gateway's own (see ../options.ts).
  return { ...optionsOf(request.passthrough), ...body, model: upstreamModel, stream: true };
}
