// The `response` object of the responses client format: the JSON answer, the usage, and the pieces the
// event stream shares with it (item ids, reasoning items, the echoed request settings, how an answer ended).
import type { ChatUsage } from "../../providers/types";
import type { ResponsesRequest } from "../../schemas/responses-request";
import { type ChatMeta, type Folded, type StreamError, usageWire } from "../chat-stream";

export type Json = Record<string, unknown>;
export type Status = "completed" | "incomplete" | "failed";

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
export function outcomeOf(finish: Folded["finish"]): {
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

export interface ResponseFields {
  status: Status | "in_progress";
  output: Json[];
  usage?: ReturnType<typeof responsesUsage>;
  incomplete?: { reason: string };
  error?: StreamError;
}

export function responseObject(req: ResponsesRequest, meta: ChatMeta, f: ResponseFields) {
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
export const itemId = (meta: ChatMeta, prefix: string, index: number) =>
  `${prefix}_${meta.id.replace(/^gen-/, "")}_${index}`;

/** One reasoning item as both answers write it: text, summaries, encrypted content, signature, format. */
export interface ReasoningBlock {
  text: string;
  summaries: string[];
  encrypted?: string;
  signature?: string;
  format?: string;
}

export function reasoningItem(id: string, b: ReasoningBlock, status: string): Json {
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
export function addDetail(b: ReasoningBlock, d: Json, joinSummary: boolean): void {
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
