// OpenAI-style POST /chat/completions, always streamed: request mapping and the chunk stream read back.

import { UpstreamError } from "../errors";
import { optionsOf } from "../options";
import { chatStream, END_OF_STREAM, mapSse, midStreamFailure, postForStream } from "../sse";
import type {
  CallContext,
  ChatChoiceDelta,
  ChatChunk,
  ChatDelta,
  ChatFinishReason,
  ChatMessage,
  ChatRequest,
  ChatStream,
  ChatToolCallDelta,
  ChatUsage,
} from "../types";
import type { OpenAiCompatibleOptions } from "./options";

/** Chat settings of one OpenAI-compatible configuration. */
export interface OpenAiChatOptions {
  /**
   * The field the completion bound goes in. `max_tokens` (the default) is the one every OpenAI-compatible
   * host accepts; OpenAI's reasoning models refuse it and want `max_completion_tokens`.
   */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  /** Whether the upstream takes `prompt_cache_key` (OpenAI's own; strict compatible hosts refuse unknown fields). */
  promptCacheKey?: boolean;
  /**
   * Whether the upstream takes the `developer` role (OpenAI's own). Most compatible hosts accept only
   * system/user/assistant/tool, so elsewhere a developer message goes as the system message it stands for.
   */
  developerRole?: boolean;
  /**
   * Whether the upstream takes an assistant turn's `refusal` (OpenAI's own). Elsewhere it goes as the turn's
   * text: strict hosts refuse the unknown field, and the model should still read what it said.
   */
  refusalField?: boolean;
}

/** Gateway-only message fields (OpenRouter's reasoning replay) that OpenAI-style upstreams refuse. */
const GATEWAY_MESSAGE_FIELDS = ["reasoning", "reasoning_details", "block_order"];

/** A refusal as more of the turn's text: a text part of a list, or after the text with a blank line. */
function withRefusalText(content: unknown, refusal: string): unknown {
  if (Array.isArray(content)) return [...content, { type: "text", text: refusal }];
  return typeof content === "string" && content ? `${content}\n\n${refusal}` : refusal;
}

function wireMessage(message: ChatMessage, chatOptions: OpenAiChatOptions): ChatMessage {
  // Most messages go as they are: copied only when something in them must change.
  const developer = message.role === "developer" && !chatOptions.developerRole;
  const refusal = "refusal" in message && !chatOptions.refusalField;
  if (!developer && !refusal && !GATEWAY_MESSAGE_FIELDS.some((k) => k in message)) return message;
  const copy = { ...message };
  for (const k of GATEWAY_MESSAGE_FIELDS) delete copy[k];
  if (developer) copy.role = "system";
  if (refusal) {
    delete copy.refusal;
    if (typeof message.refusal === "string" && message.refusal)
      copy.content = withRefusalText(copy.content, message.refusal);
  }
  return copy;
}

/** The JSON body sent upstream. Passthrough options come last; they cannot turn streaming or usage off. */
export function openAiChatBody(
  request: ChatRequest,
  upstreamModel: string,
  chatOptions: OpenAiChatOptions = {},
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: upstreamModel,
    messages: request.messages.map((m) => wireMessage(m, chatOptions)),
  };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set(chatOptions.maxTokensField ?? "max_tokens", request.maxTokens);
  set("temperature", request.temperature);
  set("top_p", request.topP);
  // Not OpenAI's own, but widely accepted (vLLM, Together, ...); the route sends them only to endpoints that list them.
  set("top_k", request.topK);
  set("repetition_penalty", request.repetitionPenalty);
  set("frequency_penalty", request.frequencyPenalty);
  set("presence_penalty", request.presencePenalty);
  set("seed", request.seed);
  set("stop", request.stop);
  set("logit_bias", request.logitBias);
  set("logprobs", request.logprobs);
  set("top_logprobs", request.topLogprobs);
  set("tools", request.tools);
  set("tool_choice", request.toolChoice);
  set("parallel_tool_calls", request.parallelToolCalls);
  set("response_format", request.responseFormat);
  // OpenAI takes an effort level only; a token budget (reasoning.max_tokens) has no OpenAI field.
  if (request.reasoning?.enabled !== false) set("reasoning_effort", request.reasoning?.effort);
  set("user", request.user);
  if (chatOptions.promptCacheKey) set("prompt_cache_key", request.promptCacheKey);
  // Provider options add fields under the gateway's own (see ../options.ts).
  return {
    ...optionsOf(request.passthrough),
    ...body,
    model: upstreamModel,
    stream: true,
    stream_options: { include_usage: true },
  };
}

const FINISH: Record<string, ChatFinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  content_filter: "content_filter",
  error: "error",
  // Values some OpenAI-compatible hosts send instead.
  eos: "stop",
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_length: "length",
  tool_use: "tool_calls",
  abort: "error",
  insufficient_system_resource: "error",
};

/** Unknown values count as a normal stop; the raw value stays in native_finish_reason. */
export function normalizeFinish(raw: string): ChatFinishReason {
  return FINISH[raw] ?? "stop";
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const int = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function mapUsage(u: Json): ChatUsage {
  const prompt = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const completion = isObject(u.completion_tokens_details) ? u.completion_tokens_details : {};
  const usage: ChatUsage = {
    promptTokens: int(u.prompt_tokens) ?? 0,
    completionTokens: int(u.completion_tokens) ?? 0,
  };
  const reasoning = int(completion.reasoning_tokens);
  if (reasoning) {
    usage.reasoningTokens = reasoning;
    // OpenAI counts reasoning inside completion_tokens; xAI (Grok) reports it beside them, which its
    // total_tokens (prompt + completion + reasoning) shows. Reasoning is output either way, billed as such.
    const total = int(u.total_tokens);
    const outside =
      reasoning > usage.completionTokens ||
      (total !== undefined && total === usage.promptTokens + usage.completionTokens + reasoning);
    if (outside) usage.completionTokens += reasoning;
  }
  // DeepSeek reports cache hits as prompt_cache_hit_tokens (part of prompt_tokens, as OpenAI's cached_tokens).
  const cached = int(prompt.cached_tokens) ?? int(u.prompt_cache_hit_tokens);
  if (cached) usage.cachedTokens = cached;
  const cacheWrite = int(prompt.cache_write_tokens);
  if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
  return usage;
}

function mapToolCalls(raw: unknown[]): ChatToolCallDelta[] {
  const out: ChatToolCallDelta[] = [];
  for (const t of raw) {
    if (!isObject(t)) continue;
    const call: ChatToolCallDelta = { index: int(t.index) ?? out.length };
    // An empty id or name on a continuation delta (Alibaba's Qwen hosts send `id: ""`) is no id or name.
    if (typeof t.id === "string" && t.id !== "") call.id = t.id;
    if (t.type === "function") call.type = "function";
    if (isObject(t.function)) {
      const fn: { name?: string; arguments?: string } = {};
      if (typeof t.function.name === "string" && t.function.name !== "") fn.name = t.function.name;
      if (typeof t.function.arguments === "string") fn.arguments = t.function.arguments;
      call.function = fn;
    }
    out.push(call);
  }
  return out;
}

function mapDelta(d: Json): ChatDelta {
  const delta: ChatDelta = {};
  if (d.role === "assistant") delta.role = "assistant";
  const content = str(d.content);
  if (content !== undefined) delta.content = content;
  // `reasoning` (OpenRouter, vLLM) or `reasoning_content` (DeepSeek and the hosts that copy it).
  const reasoning = str(d.reasoning) ?? str(d.reasoning_content);
  if (reasoning !== undefined) delta.reasoning = reasoning;
  if (Array.isArray(d.reasoning_details)) delta.reasoning_details = d.reasoning_details.filter(isObject);
  const refusal = str(d.refusal);
  if (refusal !== undefined) delta.refusal = refusal;
  if (Array.isArray(d.tool_calls)) delta.tool_calls = mapToolCalls(d.tool_calls);
  else if (isObject(d.function_call)) {
    // The legacy single function call reads as tool call 0.
    delta.tool_calls = mapToolCalls([{ index: 0, type: "function", function: d.function_call }]);
  }
  return delta;
}

function mapChoice(c: Json, position: number): ChatChoiceDelta {
  const raw = str(c.finish_reason) ?? null;
  const choice: ChatChoiceDelta = {
    index: int(c.index) ?? position,
    delta: isObject(c.delta) ? mapDelta(c.delta) : {},
    finish_reason: raw === null ? null : normalizeFinish(raw),
  };
  if (raw !== null) choice.native_finish_reason = raw;
  // vLLM and the hosts built on it name the stop string that ended the answer (a token id is a number).
  if (raw === "stop" && typeof c.stop_reason === "string" && c.stop_reason)
    choice.stop_sequence = c.stop_reason;
  if (c.logprobs != null) choice.logprobs = c.logprobs;
  return choice;
}

/** An `error` object inside the stream (OpenRouter-style hosts and vLLM send one instead of a chunk). */
function streamError(error: unknown, provider: string): UpstreamError {
  const e = isObject(error) ? error : { message: str(error) };
  const code = e.code ?? e.type;
  const numeric = int(code);
  const message = str(e.message);
  return new UpstreamError({
    kind: "http",
    status: numeric !== undefined && numeric >= 400 && numeric <= 599 ? numeric : undefined,
    providerCode: typeof code === "string" || typeof code === "number" ? code : undefined,
    message: `Provider ${provider} failed mid-stream${message ? `: ${message}` : ""}`,
  });
}

/** One parsed `data:` payload as a chunk; undefined for payloads that carry nothing. */
export function openAiChunk(payload: unknown, provider: string): ChatChunk | undefined {
  if (!isObject(payload)) return undefined;
  if (payload.error != null) throw streamError(payload.error, provider);
  const choices = Array.isArray(payload.choices) ? payload.choices.filter(isObject).map(mapChoice) : [];
  const usage = isObject(payload.usage) ? mapUsage(payload.usage) : undefined;
  if (choices.length === 0 && !usage) return undefined;
  const chunk: ChatChunk = { choices };
  if (usage) chunk.usage = usage;
  const model = str(payload.model);
  if (model) chunk.model = model;
  const id = str(payload.id);
  if (id) chunk.upstreamId = id;
  return chunk;
}

/** What a tool call was given so far, and the index it goes out under. */
interface CallHead {
  index: number;
  id?: string;
  name?: string;
}

/**
 * Tool call deltas as the gateway's chunks carry them: one index per call, and deltas only.
 * - Some hosts (Fireworks, MiniMax on NIM, some GPT-5 deployments) repeat a call's id and name on every
 *   chunk: the repeats are dropped (a client that joins names would otherwise read
 *   "get_weatherget_weather").
 * - Some give every call the same index (Ollama) or none (Gemini's compatible endpoint, SGLang, read as
 *   the position in the chunk, so 0): a new id where a call with another id was is a new call, under
 *   an index of its own (two calls were merged into one, their names and arguments run together).
 * `calls` holds, per choice, the call each upstream index names now; `next` the next index per choice.
 */
function normaliseToolCalls(chunk: ChatChunk, calls: Map<string, CallHead>, next: Map<number, number>): void {
  for (const choice of chunk.choices) {
    for (const call of choice.delta.tool_calls ?? []) {
      const key = `${choice.index}:${call.index}`;
      const head = calls.get(key);
      if (!head || (call.id !== undefined && head.id !== undefined && call.id !== head.id)) {
        const index = next.get(choice.index) ?? 0;
        next.set(choice.index, index + 1);
        calls.set(key, { index, id: call.id, name: call.function?.name });
        call.index = index;
        continue;
      }
      call.index = head.index;
      if (call.id !== undefined && call.id === head.id) delete call.id;
      else if (call.id) head.id = call.id;
      const name = call.function?.name;
      if (name !== undefined && name === head.name) delete call.function!.name;
      else if (name) head.name = `${head.name ?? ""}${name}`;
    }
  }
}

function chunks(res: Response, call: CallContext): AsyncIterator<ChatChunk> {
  const provider = call.endpoint.provider;
  const calls = new Map<string, CallHead>();
  const next = new Map<number, number>();
  return mapSse(
    res.body!,
    (event) => {
      if (event.data === "[DONE]") return END_OF_STREAM;
      if (event.event === "error") throw streamError(safeJson(event.data) ?? event.data, provider);
      let payload: unknown;
      try {
        payload = JSON.parse(event.data);
      } catch {
        throw new UpstreamError({
          kind: "invalid_response",
          message: `Provider ${provider} sent a stream event the gateway cannot read`,
        });
      }
      const chunk = openAiChunk(payload, provider);
      if (chunk) normaliseToolCalls(chunk, calls, next);
      return chunk;
    },
    (err) => midStreamFailure(err, call),
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A host that ignored `stream: true` answered one chat.completion: its message becomes one chunk. */
function wholeAnswer(payload: unknown, provider: string): ChatChunk | undefined {
  if (!isObject(payload)) return undefined;
  if (payload.error != null) throw streamError(payload.error, provider);
  if (!Array.isArray(payload.choices)) return undefined;
  return openAiChunk(
    {
      ...payload,
      choices: payload.choices.filter(isObject).map((c) => ({ ...c, delta: c.message })),
    },
    provider,
  );
}

async function* single(res: Response, call: CallContext): AsyncGenerator<ChatChunk, void, undefined> {
  const chunk = wholeAnswer(await res.json().catch(() => undefined), call.endpoint.provider);
  if (!chunk) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent a chat answer the gateway cannot read`,
    });
  }
  yield chunk;
}

export async function openAiChat(
  options: OpenAiCompatibleOptions,
  chatOptions: OpenAiChatOptions,
  request: ChatRequest,
  call: CallContext,
): Promise<ChatStream> {
  const body = openAiChatBody(request, call.endpoint.upstreamModel, chatOptions);
  const res = await postForStream(
    call,
    `${call.endpoint.baseUrl}/chat/completions`,
    options.authHeaders(call.credential.apiKey),
    body,
  );
  const json = res.headers.get("Content-Type")?.includes("application/json") ?? false;
  return chatStream(json ? single(res, call) : chunks(res, call));
}
