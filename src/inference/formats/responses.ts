// The responses client format: the `response` object (JSON) and its event stream, written from the chat
// normal form. Output items: reasoning, then an assistant message, then function calls, each opened,
// streamed and closed in the order the `openai` client's ResponseStream checks; sequence numbers rise by one.
import type { ChatChunk, ChatUsage } from "../../providers/types";
import type { ResponsesRequest } from "../../schemas/responses-request";
import type { ChatClientFormat } from "../chat";
import {
  type ChatMeta,
  type Folded,
  KEEPALIVE,
  type StreamError,
  type StreamFormat,
  toolCallsOf,
  usageWire,
} from "../chat-stream";
import { asyncToolNames } from "./responses-request";

type Json = Record<string, unknown>;
type Status = "completed" | "incomplete" | "failed";

/** The responses usage object: chat's counts and cost under the responses names. */
export function responsesUsage(usage: ChatUsage, meta: ChatMeta) {
  const u = usageWire(usage, meta);
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: {
      cached_tokens: usage.cachedTokens ?? 0,
      cache_write_tokens: usage.cacheWriteTokens ?? 0,
    },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: u.total_tokens,
    cost: u.cost,
    is_byok: u.is_byok,
    cost_details: {
      upstream_inference_cost: u.cost_details.upstream_inference_cost,
      upstream_inference_input_cost: u.cost_details.upstream_inference_prompt_cost,
      upstream_inference_output_cost: u.cost_details.upstream_inference_completions_cost,
    },
  };
}

/** How the answer ended, in responses terms. */
function outcomeOf(finish: Folded["finish"]): {
  status: Status;
  incomplete?: { reason: string };
  error?: StreamError;
} {
  if (finish === "length") return { status: "incomplete", incomplete: { reason: "max_output_tokens" } };
  if (finish === "content_filter") return { status: "incomplete", incomplete: { reason: "content_filter" } };
  if (finish === "error") {
    return {
      status: "failed",
      error: {
        code: 502,
        message: "The provider ended the answer with an error",
        metadata: { error_type: "server" },
      },
    };
  }
  return { status: "completed" };
}

/** The request's settings the response object echoes; the strict readers require most of them, null or not. */
function echoed(req: ResponsesRequest) {
  const text = req.text as { format?: unknown; verbosity?: unknown } | undefined;
  const reasoning = req.reasoning as { effort?: unknown; summary?: unknown } | null | undefined;
  return {
    instructions: req.instructions ?? null,
    metadata: req.metadata ?? null,
    tools: (req.tools ?? []).flatMap((t) =>
      t.type === "function"
        ? [
            {
              type: "function",
              name: t.name,
              description: t.description ?? null,
              parameters: t.parameters ?? null,
              strict: t.strict ?? null,
              ...(t.async !== undefined ? { async: t.async } : {}),
              ...(t.defer_loading !== undefined ? { defer_loading: t.defer_loading } : {}),
            },
          ]
        : [],
    ),
    tool_choice: req.tool_choice ?? "auto",
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    temperature: req.temperature ?? null,
    top_p: req.top_p ?? null,
    presence_penalty: req.presence_penalty ?? null,
    frequency_penalty: req.frequency_penalty ?? null,
    top_logprobs: req.top_logprobs ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: req.max_tool_calls ?? null,
    reasoning: reasoning ? { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null } : null,
    text: {
      format: text?.format ?? { type: "text" },
      ...(text?.verbosity != null ? { verbosity: text.verbosity } : {}),
    },
    service_tier: req.service_tier ?? null,
    truncation: req.truncation ?? "disabled",
    store: false,
    background: false,
    previous_response_id: null,
    prompt_cache_key: req.prompt_cache_key ?? null,
    safety_identifier: req.safety_identifier ?? null,
    user: req.user ?? null,
    access_programs: null,
  };
}

interface ResponseFields {
  status: Status | "in_progress";
  output: Json[];
  usage?: ReturnType<typeof responsesUsage>;
  incomplete?: { reason: string };
  error?: StreamError;
}

function responseObject(req: ResponsesRequest, meta: ChatMeta, f: ResponseFields) {
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created,
    completed_at: f.status === "completed" ? Math.floor(Date.now() / 1000) : null,
    model: meta.model,
    provider: meta.provider,
    status: f.status,
    output: f.output,
    error: f.error
      ? { code: f.error.code === 429 ? "rate_limit_exceeded" : "server_error", message: f.error.message }
      : null,
    ...(f.error ? { error_type: f.error.metadata.error_type } : {}),
    incomplete_details: f.incomplete ?? null,
    ...echoed(req),
    usage: f.usage ?? null,
  };
}

/** Output item ids: one per position, the same in the JSON answer and the stream. */
const itemId = (meta: ChatMeta, prefix: string, index: number) =>
  `${prefix}_${meta.id.replace(/^gen-/, "")}_${index}`;

/** One reasoning item as both answers write it: text, summaries, encrypted content, signature, format. */
interface ReasoningBlock {
  text: string;
  summaries: string[];
  encrypted?: string;
  signature?: string;
  format?: string;
}

function reasoningItem(id: string, b: ReasoningBlock, status: string): Json {
  return {
    id,
    type: "reasoning",
    status,
    summary: b.summaries.map((text) => ({ type: "summary_text", text })),
    ...(b.text ? { content: [{ type: "reasoning_text", text: b.text }] } : {}),
    ...(b.encrypted !== undefined ? { encrypted_content: b.encrypted } : {}),
    ...(b.signature !== undefined ? { signature: b.signature } : {}),
    ...(b.format !== undefined ? { format: b.format } : {}),
  };
}

/** Folds one reasoning_details entry into its block (fragments of a summary or text join). */
function addDetail(b: ReasoningBlock, d: Json, joinSummary: boolean): void {
  const s = (v: unknown) => (typeof v === "string" ? v : undefined);
  if (s(d.format)) b.format = s(d.format);
  if (d.type === "reasoning.text" && s(d.signature)) b.signature = (b.signature ?? "") + s(d.signature);
  if (d.type === "reasoning.encrypted" && s(d.data)) b.encrypted = (b.encrypted ?? "") + s(d.data);
  const summary = d.type === "reasoning.summary" ? s(d.summary) : undefined;
  if (summary === undefined) return;
  const last = b.summaries.length - 1;
  if (joinSummary && last >= 0) b.summaries[last] = `${b.summaries[last]}${summary}`;
  else b.summaries.push(summary);
}

/** The reasoning blocks of a folded answer: one per reasoning_details index, text from the details or the plain reasoning. */
function reasoningBlocks(folded: Folded): ReasoningBlock[] {
  const blocks: Array<ReasoningBlock & { index?: unknown }> = [];
  for (const d of folded.reasoningDetails) {
    let b = blocks.at(-1);
    if (!b || d.index === undefined || b.index !== d.index) {
      b = { text: "", summaries: [], index: d.index };
      blocks.push(b);
    }
    if (d.type === "reasoning.text" && typeof d.text === "string") b.text += d.text;
    addDetail(b, d, false);
  }
  if (folded.reasoning && !blocks.some((b) => b.text)) {
    if (blocks[0]) blocks[0].text = folded.reasoning;
    else blocks.push({ text: folded.reasoning, summaries: [] });
  }
  return blocks.map(({ index: _index, ...b }) => b);
}

/** The JSON answer: one `response` object. */
export function responseBody(req: ResponsesRequest, folded: Folded, usage: ChatUsage, meta: ChatMeta) {
  const outcome = outcomeOf(folded.finish);
  const itemStatus = outcome.status === "completed" ? "completed" : "incomplete";
  const asyncNames = asyncToolNames(req);
  const output: Json[] = [];
  for (const b of reasoningBlocks(folded)) {
    output.push(reasoningItem(itemId(meta, "rs", output.length), b, itemStatus));
  }
  if (folded.content || folded.refusal) {
    const content: Json[] = [];
    if (folded.content)
      content.push({ type: "output_text", text: folded.content, annotations: [], logprobs: [] });
    if (folded.refusal) content.push({ type: "refusal", refusal: folded.refusal });
    output.push({
      id: itemId(meta, "msg", output.length),
      type: "message",
      role: "assistant",
      status: itemStatus,
      content,
    });
  }
  for (const call of toolCallsOf(folded)) {
    output.push({
      id: itemId(meta, "fc", output.length),
      type: "function_call",
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: itemStatus,
      ...(asyncNames.has(call.function.name) ? { async: true } : {}),
    });
  }
  return responseObject(req, meta, { ...outcome, output, usage: responsesUsage(usage, meta) });
}

/** The item being streamed; only one is open at a time (a new item closes the one before). */
type Current =
  | {
      kind: "reasoning";
      index: number;
      block: ReasoningBlock;
      detailIndex?: unknown;
      textOpen: boolean;
      summaryOpen: boolean;
    }
  | { kind: "message"; index: number; parts: Json[]; open: "text" | "refusal" | null }
  | { kind: "function"; index: number; toolIndex: number; item: Json };

/** The event stream of one response (see the module comment for the order). */
export function responsesStream(req: ResponsesRequest, meta: ChatMeta): StreamFormat {
  const asyncNames = asyncToolNames(req);
  let seq = 0;
  const output: Json[] = [];
  const callIds = new Map<number, Current & { kind: "function" }>();
  let current: Current | null = null;
  const event = (type: string, fields: Json) =>
    `data: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`;
  const at = (c: Current) => ({ item_id: output[c.index]!.id, output_index: c.index });

  const open = (item: Json): number => {
    output.push(item);
    return output.length - 1;
  };
  const added = (index: number) =>
    event("response.output_item.added", { output_index: index, item: output[index] });

  /** Closes the open item: its parts' done events, then output_item.done with the whole item. */
  const close = (status: "completed" | "incomplete"): string => {
    const c = current;
    if (!c) return "";
    current = null;
    let frames = "";
    if (c.kind === "reasoning") {
      if (c.textOpen) {
        const text = c.block.text;
        frames += event("response.reasoning_text.done", { ...at(c), content_index: 0, text });
        frames += event("response.content_part.done", {
          ...at(c),
          content_index: 0,
          part: { type: "reasoning_text", text },
        });
      }
      if (c.summaryOpen) frames += closeSummary(c);
      output[c.index] = reasoningItem(output[c.index]!.id as string, c.block, status);
    } else if (c.kind === "message") {
      frames += closePart(c);
      output[c.index] = { ...output[c.index], status, content: c.parts };
    } else {
      const item: Json = { ...c.item, status };
      output[c.index] = item;
      frames += event("response.function_call_arguments.done", {
        ...at(c),
        name: item.name,
        arguments: item.arguments,
      });
    }
    return frames + event("response.output_item.done", { output_index: c.index, item: output[c.index] });
  };

  const closeSummary = (c: Current & { kind: "reasoning" }) => {
    c.summaryOpen = false;
    const summaryIndex = c.block.summaries.length - 1;
    const text = c.block.summaries[summaryIndex]!;
    return (
      event("response.reasoning_summary_text.done", { ...at(c), summary_index: summaryIndex, text }) +
      event("response.reasoning_summary_part.done", {
        ...at(c),
        summary_index: summaryIndex,
        part: { type: "summary_text", text },
      })
    );
  };

  const closePart = (c: Current & { kind: "message" }) => {
    const kind = c.open;
    if (!kind) return "";
    c.open = null;
    const content_index = c.parts.length - 1;
    const part = c.parts[content_index]!;
    const done =
      kind === "text"
        ? event("response.output_text.done", { ...at(c), content_index, text: part.text, logprobs: [] })
        : event("response.refusal.done", { ...at(c), content_index, refusal: part.refusal });
    return done + event("response.content_part.done", { ...at(c), content_index, part });
  };

  const reasoning = (text: string | undefined, details: Json[] | undefined): string => {
    let frames = "";
    const ensure = (detailIndex?: unknown) => {
      const c = current;
      const same =
        c?.kind === "reasoning" &&
        (detailIndex === undefined || c.detailIndex === undefined || c.detailIndex === detailIndex);
      if (same) {
        if (detailIndex !== undefined) c.detailIndex = detailIndex;
        return c;
      }
      frames += close("completed");
      const block: ReasoningBlock = { text: "", summaries: [] };
      const index = open(reasoningItem(itemId(meta, "rs", output.length), block, "in_progress"));
      const next: Current = {
        kind: "reasoning",
        index,
        block,
        detailIndex,
        textOpen: false,
        summaryOpen: false,
      };
      current = next;
      frames += added(index);
      return next;
    };
    for (const d of details ?? []) {
      const c = ensure(d.index);
      const summary = d.type === "reasoning.summary" && typeof d.summary === "string" ? d.summary : undefined;
      if (summary !== undefined) {
        if (!c.summaryOpen) {
          c.summaryOpen = true;
          c.block.summaries.push("");
          frames += event("response.reasoning_summary_part.added", {
            ...at(c),
            summary_index: c.block.summaries.length - 1,
            part: { type: "summary_text", text: "" },
          });
        }
        const summaryIndex = c.block.summaries.length - 1;
        c.block.summaries[summaryIndex] += summary;
        if (summary) {
          frames += event("response.reasoning_summary_text.delta", {
            ...at(c),
            summary_index: summaryIndex,
            delta: summary,
          });
        }
      }
      addDetail(c.block, d.type === "reasoning.summary" ? { ...d, summary: undefined } : d, true);
    }
    if (text) {
      const c = ensure();
      if (!c.textOpen) {
        c.textOpen = true;
        frames += event("response.content_part.added", {
          ...at(c),
          content_index: 0,
          part: { type: "reasoning_text", text: "" },
        });
      }
      c.block.text += text;
      frames += event("response.reasoning_text.delta", { ...at(c), content_index: 0, delta: text });
    }
    return frames;
  };

  const message = (kind: "text" | "refusal", delta: string): string => {
    let frames = "";
    let c = current;
    if (c?.kind !== "message") {
      frames += close("completed");
      const index = open({
        id: itemId(meta, "msg", output.length),
        type: "message",
        role: "assistant",
        status: "in_progress",
        content: [],
      });
      c = { kind: "message", index, parts: [], open: null };
      current = c;
      frames += added(index);
    }
    if (c.open !== kind) {
      frames += closePart(c);
      const part =
        kind === "text"
          ? { type: "output_text", text: "", annotations: [], logprobs: [] }
          : { type: "refusal", refusal: "" };
      c.parts.push(part);
      c.open = kind;
      frames += event("response.content_part.added", {
        ...at(c),
        content_index: c.parts.length - 1,
        part: { ...part },
      });
    }
    const part = c.parts[c.parts.length - 1]!;
    const content_index = c.parts.length - 1;
    if (kind === "text") {
      part.text = `${part.text}${delta}`;
      return frames + event("response.output_text.delta", { ...at(c), content_index, delta, logprobs: [] });
    }
    part.refusal = `${part.refusal}${delta}`;
    return frames + event("response.refusal.delta", { ...at(c), content_index, delta });
  };

  const toolCall = (
    call: NonNullable<ChatChunk["choices"][number]["delta"]["tool_calls"]>[number],
  ): string => {
    let frames = "";
    let c = callIds.get(call.index);
    if (!c) {
      frames += close("completed");
      const name = call.function?.name ?? "";
      const item: Json = {
        id: itemId(meta, "fc", output.length),
        type: "function_call",
        call_id: call.id ?? `call_${meta.id.replace(/^gen-/, "")}_${call.index}`,
        name,
        arguments: "",
        status: "in_progress",
        ...(asyncNames.has(name) ? { async: true } : {}),
      };
      const index = open(item);
      c = { kind: "function", index, toolIndex: call.index, item };
      callIds.set(call.index, c);
      current = c;
      frames += added(index);
    } else if (call.function?.name) {
      c.item.name = `${c.item.name}${call.function.name}`;
    }
    const delta = call.function?.arguments;
    if (delta) {
      c.item.arguments = `${c.item.arguments}${delta}`;
      // A fragment for a call already closed (providers stream calls one after another) only completes the record.
      if (current === c) frames += event("response.function_call_arguments.delta", { ...at(c), delta });
      else output[c.index] = { ...output[c.index], arguments: c.item.arguments };
    }
    return frames;
  };

  const lifecycle = (type: string, f: ResponseFields) =>
    event(type, { response: responseObject(req, meta, f) });

  return {
    open: () => {
      const debug =
        meta.echo === undefined
          ? ""
          : event("response.debug", { debug: meta.echo == null ? {} : { echo_upstream_body: meta.echo } });
      return (
        debug +
        lifecycle("response.created", { status: "in_progress", output: [] }) +
        lifecycle("response.in_progress", { status: "in_progress", output: [] })
      );
    },
    chunk: (chunk) => {
      let frames = "";
      for (const choice of chunk.choices) {
        if (choice.index !== 0) continue;
        const d = choice.delta;
        if (d.reasoning || d.reasoning_details?.length) frames += reasoning(d.reasoning, d.reasoning_details);
        if (d.content) frames += message("text", d.content);
        if (d.refusal) frames += message("refusal", d.refusal);
        for (const call of d.tool_calls ?? []) frames += toolCall(call);
      }
      return frames;
    },
    end: (folded, usage) => {
      const outcome = outcomeOf(folded.finish);
      const frames = close(outcome.status === "completed" ? "completed" : "incomplete");
      const type = `response.${outcome.status}`;
      return `${frames}${lifecycle(type, { ...outcome, output, usage: responsesUsage(usage, meta) })}data: [DONE]\n\n`;
    },
    fail: (error, folded) => {
      // The open item stays unfinished: the failed response lists it as it stood, marked incomplete.
      const c = current;
      if (c) {
        output[c.index] =
          c.kind === "reasoning"
            ? reasoningItem(output[c.index]!.id as string, c.block, "incomplete")
            : c.kind === "message"
              ? { ...output[c.index], status: "incomplete", content: c.parts }
              : { ...c.item, status: "incomplete" };
      }
      const { usage } = folded.finalUsage(meta.promptEstimate);
      return `${lifecycle("response.failed", { status: "failed", output, error, usage: responsesUsage(usage, meta) })}data: [DONE]\n\n`;
    },
    keepalive: KEEPALIVE,
  };
}

/** The responses client format for runChat. */
export function responsesFormat(req: ResponsesRequest): ChatClientFormat {
  return {
    apiType: "responses",
    stream: (meta) => responsesStream(req, meta),
    body: (folded, usage, meta) => responseBody(req, folded, usage, meta),
  };
}
