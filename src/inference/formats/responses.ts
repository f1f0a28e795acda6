// The responses client format: the `response` object (JSON, responses-object.ts) and its event stream, written
// from the chat normal form. Output items: reasoning, then an assistant message, then function calls, each
// opened, streamed and closed in the order the `openai` client's ResponseStream checks; sequence numbers
// rise by one from 0. The JSON answer lists the same items in the same order (built as the stream is).
import type { ChatChunk } from "../../providers/types";
import type { ResponsesRequest } from "../../schemas/responses-request";
import type { ChatClientFormat } from "../chat";
import {
  type BodyFormat,
  type ChatMeta,
  chargedOnFailure,
  KEEPALIVE,
  type StreamFormat,
} from "../chat-stream";
import {
  addDetail,
  itemId,
  type Json,
  outcomeOf,
  type ReasoningBlock,
  type ResponseFields,
  reasoningItem,
  responseObject,
  responsesUsage,
} from "./responses-object";
import { responsesPassthroughJson, responsesPassthroughStream } from "./responses-passthrough";
import { asyncToolNames } from "./responses-request";
import { type ToolCall, ToolSequence } from "./tool-sequence";

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
  | { kind: "function"; index: number; call: ToolCall; item: Json };

/** The event stream of one response (see the module comment for the order). */
export function responsesStream(req: ResponsesRequest, meta: ChatMeta): StreamFormat {
  return responsesBuilder(req, meta, true).format;
}

/**
 * The JSON answer: the output items the stream would have sent, in the same order (a text, then a call,
 * then more text and another call are four items, as streamed), built without writing the events.
 */
export function responsesJson(req: ResponsesRequest, meta: ChatMeta): BodyFormat {
  const { format, output } = responsesBuilder(req, meta, false);
  return {
    chunk: (chunk, folded) => {
      format.chunk(chunk, folded);
    },
    body: (folded, usage) => {
      const outcome = outcomeOf(folded.finish);
      format.end(folded, usage);
      if (meta.healJson) healText(output, folded.content);
      return responseObject(req, meta, { ...outcome, output, usage: responsesUsage(usage, meta) });
    },
  };
}

/**
 * The response-healing plugin's answer: the text jsonAnswer healed replaces the message's text, when the
 * answer is one text (a JSON answer split by tool calls is not one document to heal).
 */
function healText(output: Json[], healed: string): void {
  const texts = output.flatMap((item) =>
    item.type === "message" ? (item.content as Json[]).filter((p) => p.type === "output_text") : [],
  );
  if (texts.length === 1) texts[0]!.text = healed;
}

/** A response's events and its output items as they build up; `write` false builds the items only. */
function responsesBuilder(req: ResponsesRequest, meta: ChatMeta, write: boolean) {
  const asyncNames = asyncToolNames(req);
  let seq = 0;
  const output: Json[] = [];
  // Output items cannot interleave: one function_call item per call, whatever order its deltas came in.
  const tools = new ToolSequence();
  let current: Current | null = null;
  const event = (type: string, fields: Json) =>
    write ? `data: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n` : "";
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
      // The name as it stands now (a name streamed in fragments may have grown since the item opened).
      const item: Json = { ...c.item, name: c.call.name, status };
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

  const callItem = (call: ToolCall, args: string, status: string): Json => ({
    id: itemId(meta, "fc", output.length),
    type: "function_call",
    call_id: call.id || `call_${meta.id.replace(/^gen-/, "")}_${call.index}`,
    name: call.name,
    arguments: args,
    status,
    ...(asyncNames.has(call.name) ? { async: true } : {}),
  });

  /** Opens call's function_call item, with its arguments so far as one delta. */
  const openCall = (call: ToolCall): string => {
    let frames = close("completed");
    const item = callItem(call, "", "in_progress");
    const index = open(item);
    const c: Current = { kind: "function", index, call, item };
    current = c;
    frames += added(index);
    return frames + callArguments(c, call.arguments);
  };

  const callArguments = (c: Current & { kind: "function" }, delta: string): string => {
    if (!delta) return "";
    c.item.arguments = `${c.item.arguments}${delta}`;
    return event("response.function_call_arguments.delta", { ...at(c), delta });
  };

  const toolCall = (
    call: NonNullable<ChatChunk["choices"][number]["delta"]["tool_calls"]>[number],
  ): string => {
    const c = current;
    const step = tools.add(call, c?.kind === "function" ? c.call.index : undefined);
    if (!step) return "";
    if ("open" in step) return openCall(step.open);
    return c?.kind === "function" ? callArguments(c, step.args) : "";
  };

  /** Closes the open item, then writes the calls that could not be streamed in order, each whole. */
  const closeAll = (status: "completed" | "incomplete"): string => {
    let frames = close(status);
    for (const call of tools.rest()) frames += openCall(call) + close(status);
    return frames;
  };

  const lifecycle = (type: string, f: ResponseFields) =>
    write ? event(type, { response: responseObject(req, meta, f) }) : "";

  const format: StreamFormat = {
    open: () => {
      // One response.debug event per attempted provider, before response.created.
      const debug = (meta.echo ?? [])
        .map((body) => event("response.debug", { debug: { echo_upstream_body: body } }))
        .join("");
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
      const frames = closeAll(outcome.status === "completed" ? "completed" : "incomplete");
      const type = `response.${outcome.status}`;
      return `${frames}${lifecycle(type, { ...outcome, output, usage: responsesUsage(usage, chargedOnFailure(folded, meta)) })}data: [DONE]\n\n`;
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
              : { ...c.item, name: c.call.name, status: "incomplete" };
      }
      for (const call of tools.rest()) output.push(callItem(call, call.arguments, "incomplete"));
      const { usage } = folded.finalUsage(meta);
      return `${lifecycle("response.failed", { status: "failed", output, error, usage: responsesUsage(usage, chargedOnFailure(folded, meta)) })}data: [DONE]\n\n`;
    },
    keepalive: KEEPALIVE,
  };
  return { format, output };
}

/** The responses client format for runChat; an OpenAI Responses upstream's answer passes through. */
export function responsesFormat(req: ResponsesRequest): ChatClientFormat {
  return {
    apiType: "responses",
    stream: (meta) => responsesStream(req, meta),
    json: (meta) => responsesJson(req, meta),
    passthrough: {
      wire: "openai-responses",
      stream: responsesPassthroughStream,
      json: responsesPassthroughJson,
    },
  };
}
