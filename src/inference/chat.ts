// A chat request on the inference pipeline, whatever client format it came in (chat completions,
// responses, messages): filters, reservation, adapter request, and the answer written by the client's
// format. Routes translate their body into the chat normal form (ChatRequestBody) and supply a format.
import type { Context } from "hono";
import type { Pricing } from "../catalog/schema";
import { REASONING_EFFORTS } from "../catalog/schema";
import { type CatalogEndpointEntry, OUTPUT_MODALITY } from "../catalog/types";
import type { AppEnv } from "../env";
import { filterTexts } from "../guardrails/apply-filters";
import { visitTextFile } from "../guardrails/text-files";
import { type ApiError, badRequest, clientClosedResponse, forbidden } from "../lib/errors";
import { scrubbingIterator } from "../providers/errors";
import { getAdapter } from "../providers/registry";
import type { ChatChunk, ChatMessage, ChatRequest, ChatUsage, UpstreamWire } from "../providers/types";
import type { Requirement } from "../routing/filters";
import type { ChatContentPartBody, ChatRequestBody } from "../schemas/chat";
import {
  type BodyFormat,
  type ChatMeta,
  chatCompletionsJson,
  chatCompletionsStream,
  collectAnswer,
  committedStreamError,
  emptyStream,
  Folded,
  jsonAnswer,
  type OpenedChat,
  type StreamFormat,
  sseAnswer,
} from "./chat-stream";
import { requestIo, runInference, sessionIdOf, underCurrentPolicy } from "./pipeline";
import { middleOut, pluginPlanOf } from "./plugins";
import type { UnderPreset } from "./preset";
import { billedPromptTokens, hasFileByUrl, requestTokenCeiling } from "./prompt-estimate";

/**
 * The route of a chat body: with no `model`, the first of `models` is the model and the rest its
 * fallbacks; the body's provider preferences and requirements.
 */
export function chatRoute(body: ChatRequestBody, model: string) {
  return {
    modality: "chat" as const,
    model,
    models: body.model ? body.models : body.models?.slice(1),
    provider: body.provider,
    requirements: chatRequirements(body),
  };
}

/** Writes an answer as a stream or as one JSON body. */
export interface AnswerFormat {
  stream(meta: ChatMeta): StreamFormat;
  json(meta: ChatMeta): BodyFormat;
}

/** How a client API writes a chat answer: its stream frames and its JSON body. */
export interface ChatClientFormat extends AnswerFormat {
  /** Recorded as the generation's `api_type` (chat completions leave it to the modality). */
  apiType?: "responses" | "messages";
  /**
   * When the client's API is an upstream wire format too: how an answer from such an upstream is passed
   * through (its own events, minimally rewritten) instead of re-encoded from the chunks.
   */
  passthrough?: AnswerFormat & { wire: UpstreamWire };
}

export const CHAT_COMPLETIONS: ChatClientFormat = {
  stream: chatCompletionsStream,
  json: chatCompletionsJson,
};

/** Completion tokens reserved when neither the request nor the endpoint bounds the answer. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4_096;
/** The prompt a model of unknown context window is reserved at when its media cannot be measured. */
export const UNKNOWN_CONTEXT_TOKENS = 2_000_000;

/** The endpoint's prices for a prompt of this many tokens: its long-context rates past their threshold. */
function pricingFor(e: CatalogEndpointEntry, promptTokens: number): Pricing {
  const long = e.pricing.long_context;
  return long && promptTokens > long.above_prompt_tokens ? { ...e.pricing, ...long } : e.pricing;
}

/** The cost of a usage on an endpoint, micro-dollars (fractional), split into prompt and completion. */
export function chatPrice(e: CatalogEndpointEntry) {
  return (u: ChatUsage) => {
    const pricing = pricingFor(e, u.promptTokens);
    const input = pricing.input_token ?? 0;
    const cached = u.cachedTokens ?? 0;
    const written = u.cacheWriteTokens ?? 0;
    const writtenHour = Math.min(written, u.cacheWrite1hTokens ?? 0);
    const plain = Math.max(0, u.promptTokens - cached - written);
    const write = pricing.cache_write_token ?? input;
    const prompt =
      plain * input +
      cached * (pricing.cache_read_token ?? input) +
      (written - writtenHour) * write +
      writtenHour * (pricing.cache_write_1h_token ?? write) +
      (pricing.request ?? 0);
    return { prompt, completion: u.completionTokens * (pricing.output_token ?? 0) };
  };
}

/**
 * The most a request can cost on an endpoint: every prompt token at the dearest of input and cache
 * writes (a cache write, an hour's above all, costs more than plain input), and its output cap.
 */
export function worstCaseMicros(
  e: CatalogEndpointEntry,
  promptTokens: number,
  maxOutputTokens: number,
): number {
  const pricing = pricingFor(e, promptTokens);
  const dearest = Math.max(
    pricing.input_token ?? 0,
    pricing.cache_write_token ?? 0,
    pricing.cache_write_1h_token ?? 0,
  );
  return promptTokens * dearest + (pricing.request ?? 0) + maxOutputTokens * (pricing.output_token ?? 0);
}

const maxOutputOf = (body: ChatRequestBody, e: CatalogEndpointEntry) =>
  Math.min(
    body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY,
    e.capabilities.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
  );

/**
 * Sampling parameters an endpoint may not honour, by the adapter request's field and the body's name:
 * each is sent only to endpoints whose catalog entry lists it (or lists none), as OpenRouter ignores
 * what a provider does not support, so a strict upstream (OpenAI with `top_k`, Mistral with `seed`)
 * never refuses the request over one; `provider.require_parameters` routes to endpoints listing all.
 */
const SAMPLING_PARAMS = {
  temperature: "temperature",
  topP: "top_p",
  topK: "top_k",
  frequencyPenalty: "frequency_penalty",
  presencePenalty: "presence_penalty",
  repetitionPenalty: "repetition_penalty",
  seed: "seed",
  stop: "stop",
  logitBias: "logit_bias",
  logprobs: "logprobs",
  topLogprobs: "top_logprobs",
  parallelToolCalls: "parallel_tool_calls",
} as const satisfies Partial<Record<keyof ChatRequest, keyof ChatRequestBody>>;

/** The input modality each non-text message part needs (the catalog's `input_modalities` names). */
const PART_MODALITY = { image_url: "image", input_audio: "audio", file: "file" } as const;

/** How many media parts the messages carry: images and files, and audio apart (the generation record's counts). */
function mediaCounts(messages: ChatMessage[]): NonNullable<ChatMeta["mediaPrompt"]> {
  const counts = { media: 0, audio: 0 };
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === "input_audio") counts.audio++;
      else if (p.type !== "text") counts.media++;
    }
  }
  return counts;
}

/** The media kinds the messages carry, each once, in the order first seen. */
function mediaKinds(body: ChatRequestBody): Array<(typeof PART_MODALITY)[keyof typeof PART_MODALITY]> {
  const kinds = new Set<(typeof PART_MODALITY)[keyof typeof PART_MODALITY]>();
  for (const m of body.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) if (p.type !== "text") kinds.add(PART_MODALITY[p.type]);
  }
  return [...kinds];
}

/**
 * What the body asks of an endpoint beyond chat itself: media inputs always (an endpoint that cannot
 * read an image would drop it or refuse the request), output `modalities` always (a model that writes
 * text would answer an image request with text, billed), parameters under `provider.require_parameters`.
 */
export function chatRequirements(body: ChatRequestBody): Requirement[] {
  const hard = body.provider?.require_parameters === true;
  const wants = (param: string) => ({
    param,
    hard,
    fits: (e: CatalogEndpointEntry) => e.capabilities.parameters?.includes(param) ?? true,
  });
  const out: Requirement[] = mediaKinds(body).map((kind) => ({
    param: `${kind} inputs`,
    hard: true,
    // The endpoint's own list where the catalog gives one, else its model's.
    fits: (e, model) => (e.capabilities.inputs ?? model.inputModalities).includes(kind),
  }));
  for (const kind of new Set(body.modalities)) {
    out.push({
      param: `${kind} output`,
      hard: true,
      fits: (_e, model) => OUTPUT_MODALITY[model.modality] === kind,
    });
  }
  if (body.tools?.length) out.push(wants("tools"));
  if (body.response_format && body.response_format.type !== "text") out.push(wants("response_format"));
  if (body.reasoning || body.reasoning_effort) out.push(wants("reasoning"));
  for (const param of Object.values(SAMPLING_PARAMS)) if (body[param] != null) out.push(wants(param));
  return out;
}

/**
 * Every text the caller wrote, filtered by the key's content filters (block -> 403, redact -> rewritten):
 * the messages, and the prose of the tools and of the response format's schema (the model reads them
 * as it reads the prompt). `sent` is the body with those tools and that response format.
 */
export function filteredPrompt(body: ChatRequestBody, policy: Parameters<typeof filterTexts>[0]) {
  if (policy.filters.length === 0) return { messages: body.messages as ChatMessage[], sent: body, flags: [] };
  // Every text the provider reads, in one list: content and text parts, file names and inline text files,
  // participants' names,
  // an assistant turn's tool-call arguments, refusal, reasoning and reasoning details' text and summaries;
  // each tool's description,
  // and the descriptions and titles in its parameters' schema and in the response format's.
  const texts: string[] = [];
  const walkSchemas = (visit: (text: string) => string): ChatRequestBody => ({
    ...body,
    tools: body.tools?.map((t) => ({
      ...t,
      function: {
        ...t.function,
        ...(t.function.description != null && { description: visit(t.function.description) }),
        ...(t.function.parameters && { parameters: schemaTexts(t.function.parameters, visit) }),
      },
    })),
    response_format: schemaTexts(body.response_format, visit),
  });
  const part = (p: ChatContentPartBody, visit: (text: string) => string): ChatContentPartBody => {
    if (p.type === "text") return { ...p, text: visit(p.text) };
    // A URL is sent to the provider as written (inline data is not text: its base64 is skipped).
    if (p.type === "image_url") {
      return isDataUrl(p.image_url.url)
        ? p
        : { ...p, image_url: { ...p.image_url, url: visit(p.image_url.url) } };
    }
    if (p.type !== "file") return p;
    const file = { ...p.file };
    if (file.filename != null) file.filename = visit(file.filename);
    // An inline text file (text/plain, JSON, CSV, ...) is text the model reads; a file by URL, its URL.
    if (file.file_data != null) {
      file.file_data = isDataUrl(file.file_data)
        ? visitTextFile(file.file_data, visit)
        : visit(file.file_data);
    }
    return { ...p, file };
  };
  const walk = (visit: (text: string) => string) =>
    body.messages.map((m) => {
      const content =
        typeof m.content === "string"
          ? visit(m.content)
          : Array.isArray(m.content)
            ? m.content.map((p) => part(p, visit))
            : m.content;
      // A participant's name is read too; one a redact filter rewrote is left out (providers take names
      // of letters, digits, `_` and `-` only, so the label in its place would fail the request).
      let named = m;
      if ("name" in m && m.name != null) {
        const { name, ...rest } = m;
        const visited = visit(name);
        named = (visited === name ? { ...rest, name } : rest) as typeof m;
      }
      // A tool result's call id is text the model reads; visited as the call's own id is, so a redaction
      // rewrites both alike and they still pair.
      if (m.role === "tool") return { ...named, content, tool_call_id: visit(m.tool_call_id) };
      if (m.role !== "assistant") return { ...named, content };
      return {
        ...named,
        content,
        ...(m.tool_calls && {
          tool_calls: m.tool_calls.map((t) => ({
            ...t,
            id: visit(t.id),
            function: {
              ...t.function,
              name: visit(t.function.name),
              arguments: argumentTexts(t.function.arguments, visit),
            },
          })),
        }),
        ...(m.refusal != null && { refusal: visit(m.refusal) }),
        ...(m.reasoning != null && { reasoning: visit(m.reasoning) }),
        ...(m.reasoning_details && {
          reasoning_details: m.reasoning_details.map((d) => reasoningDetail(d, visit)),
        }),
      };
    });
  const collect = (text: string) => {
    texts.push(text);
    return text;
  };
  walk(collect);
  walkSchemas(collect);
  const verdict = filterTexts(policy, texts);
  let i = 0;
  const next = () => verdict.texts[i++]!;
  const messages = walk(next) as ChatMessage[];
  return { messages, sent: walkSchemas(next), flags: verdict.flags };
}

const isDataUrl = (url: string) => url.slice(0, 5).toLowerCase() === "data:";

/** Schema words that hold prose for the model; the rest (types, patterns) is structure. */
const SCHEMA_PROSE = new Set(["description", "title", "$comment"]);
/** Schema words whose values the model reads as given (every string in them, at any depth). */
const SCHEMA_VALUES = new Set(["enum", "const", "default", "examples", "example"]);

/**
 * A JSON schema with its prose (`description`, `title`, at any depth) and the strings of its values
 * (`enum`, `const`, `default`, `examples`) passed through `visit`, in a fixed order (the same walk
 * collects the texts and puts the filtered ones back). The request schemas bound these schemas to 32
 * levels, so the recursion is bounded too.
 */
function schemaTexts<T>(node: T, visit: (text: string) => string): T {
  if (node === null || typeof node !== "object") return node;
  if (Array.isArray(node)) return node.map((n) => schemaTexts(n, visit)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "properties" && v !== null && typeof v === "object" && !Array.isArray(v)) {
      // Property names are words the model reads (and fills in): read, and rewritten by a redaction.
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, sub]) => [visit(name), schemaTexts(sub, visit)]),
      );
    } else if (k === "required" && Array.isArray(v)) {
      out[k] = v.map((name) => (typeof name === "string" ? visit(name) : name));
    } else {
      out[k] =
        SCHEMA_PROSE.has(k) && typeof v === "string"
          ? visit(v)
          : SCHEMA_VALUES.has(k) || k.startsWith("x-")
            ? valueTexts(v, visit)
            : schemaTexts(v, visit);
    }
  }
  return out as T;
}

/**
 * A tool call's arguments as the provider reads them: a JSON text's keys and strings decoded (a JSON
 * escape such as `\u0077` must not hide a word, and Anthropic and Gemini are sent the decoded object),
 * each passed through `visit`; the text as sent when nothing changed, else the rewritten JSON. Arguments
 * that are not JSON are read as they are.
 */
function argumentTexts(args: string, visit: (text: string) => string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return visit(args);
  }
  if (parsed === null || typeof parsed !== "object") return visit(args);
  let changed = false;
  const seen = (text: string) => {
    const out = visit(text);
    if (out !== text) changed = true;
    return out;
  };
  const walked = jsonTexts(parsed, seen);
  return changed ? JSON.stringify(walked) : args;
}

/** Every key and string of a JSON value passed through `visit`, in document order. */
function jsonTexts(value: unknown, visit: (text: string) => string): unknown {
  if (typeof value === "string") return visit(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => jsonTexts(v, visit));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [visit(k), jsonTexts(v, visit)]));
}

/** Every string of a JSON value passed through `visit` (keys are kept). */
function valueTexts(value: unknown, visit: (text: string) => string): unknown {
  if (typeof value === "string") return visit(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => valueTexts(v, visit));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, valueTexts(v, visit)]));
}

/**
 * A reasoning detail with its text (`reasoning.text`) or summary (`reasoning.summary`) filtered. A
 * provider's signature covers the text byte for byte: signed reasoning a filter would redact cannot be
 * sent changed (the provider refuses it) nor unchanged (the filter is bypassed), so it is refused.
 */
function reasoningDetail(
  d: Record<string, unknown>,
  visit: (text: string) => string,
): Record<string, unknown> {
  const key = d.type === "reasoning.text" ? "text" : d.type === "reasoning.summary" ? "summary" : null;
  if (!key || typeof d[key] !== "string") return d;
  const text = visit(d[key]);
  if (text !== d[key] && typeof d.signature === "string" && d.signature) {
    throw forbidden(
      "Request blocked: a content filter would redact reasoning the provider signed, which cannot be sent changed",
    );
  }
  return { ...d, [key]: text };
}

/** What a client format adds to the adapter request beyond the chat body (its API headers). */
export type ChatRequestExtras = Pick<ChatRequest, "anthropic" | "clientWire">;

export function adapterRequest(
  body: ChatRequestBody,
  messages: ChatMessage[],
  e: CatalogEndpointEntry,
  extras: ChatRequestExtras,
): ChatRequest {
  const reasoning = body.reasoning ?? (body.reasoning_effort ? { effort: body.reasoning_effort } : undefined);
  const defined = <T extends Record<string, unknown>>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v != null)) as Partial<T>;
  const request = defined({
    messages,
    maxTokens: Number.isFinite(maxOutputOf(body, e)) ? maxOutputOf(body, e) : undefined,
    temperature: body.temperature,
    topP: body.top_p,
    topK: body.top_k,
    frequencyPenalty: body.frequency_penalty,
    presencePenalty: body.presence_penalty,
    repetitionPenalty: body.repetition_penalty,
    seed: body.seed,
    stop: body.stop == null ? undefined : Array.isArray(body.stop) ? body.stop : [body.stop],
    logitBias: body.logit_bias,
    logprobs: body.logprobs,
    topLogprobs: body.top_logprobs,
    tools: body.tools,
    toolChoice: body.tool_choice,
    parallelToolCalls: body.parallel_tool_calls,
    responseFormat: body.response_format?.type === "text" ? undefined : body.response_format,
    reasoning: reasoning
      ? defined({
          effort: reasoning.effort ?? undefined,
          max_tokens: "max_tokens" in reasoning ? (reasoning.max_tokens ?? undefined) : undefined,
          exclude: "exclude" in reasoning ? reasoning.exclude : undefined,
          enabled: "enabled" in reasoning ? reasoning.enabled : undefined,
          summary: "summary" in reasoning ? (reasoning.summary ?? undefined) : undefined,
        })
      : undefined,
    user: body.user,
    promptCacheKey: body.prompt_cache_key,
    cacheControl: body.cache_control,
    ...extras,
    passthrough: body.provider?.options?.[e.provider] as Record<string, unknown> | undefined,
  }) as ChatRequest;
  // What the endpoint's catalog entry does not list is not sent (a strict upstream refuses it: OpenAI's
  // reasoning_effort on a model that does not reason, Anthropic's thinking or output format on Claude 3.5).
  const listed = e.capabilities.parameters;
  if (listed) {
    for (const [field, param] of Object.entries(SAMPLING_PARAMS))
      if (!listed.includes(param)) delete request[field as keyof typeof SAMPLING_PARAMS];
    if (!listed.includes("reasoning")) {
      delete request.reasoning;
      // Messages' output_config.effort too (Claude 3.5 refuses it as it refuses thinking).
      if (request.anthropic?.effort) {
        const { effort: _, ...rest } = request.anthropic;
        request.anthropic = rest;
      }
    }
    if (!listed.includes("response_format") && !listed.includes("structured_outputs"))
      delete request.responseFormat;
  }
  if (request.reasoning?.effort) {
    const effort = fittedEffort(request.reasoning.effort, e.capabilities.reasoning_efforts);
    if (effort) request.reasoning.effort = effort;
    else delete request.reasoning.effort;
  }
  return request;
}

/**
 * A reasoning effort as an endpoint takes it: as asked when it takes that one (or its catalog entry does
 * not say), else the nearest it takes (the higher of two as near: `medium` to xAI's low/high is high;
 * `max` to gpt-5 is high, `none` minimal); undefined for an endpoint that takes no effort.
 */
export function fittedEffort(effort: string, accepted: readonly string[] | undefined): string | undefined {
  if (!accepted || accepted.includes(effort)) return effort;
  const rank = (e: string) => (REASONING_EFFORTS as readonly string[]).indexOf(e);
  const distance = (e: string) => Math.abs(rank(e) - rank(effort));
  return [...accepted].sort((a, b) => distance(a) - distance(b) || rank(b) - rank(a))[0];
}

/**
 * The tool choice checked against the tools (a call forced to a tool that is not there is a 400, as
 * OpenAI and Anthropic answer it, not an answer in plain text billed as if it had followed), and
 * `{type: "allowed_tools"}` as every provider can take it: the tool list cut to the tools named, and
 * their `mode` as the tool choice.
 */
export function withAllowedTools(body: ChatRequestBody): ChatRequestBody {
  const choice = body.tool_choice;
  const names = new Set((body.tools ?? []).map((t) => t.function.name));
  if (choice === "required" && names.size === 0) {
    throw badRequest("tool_choice 'required' needs tools: the request has none");
  }
  if (typeof choice === "object" && choice.type === "function" && !names.has(choice.function.name)) {
    throw badRequest(`tool_choice names the function '${choice.function.name}', which is not in tools`);
  }
  if (typeof choice !== "object" || choice.type !== "allowed_tools") return body;
  const allowed = new Set(choice.allowed_tools.tools.map((t) => t.function.name));
  const tools = (body.tools ?? []).filter((t) => allowed.has(t.function.name));
  for (const t of tools) allowed.delete(t.function.name);
  if (allowed.size > 0) {
    throw badRequest(
      `tool_choice.allowed_tools names tools that are not in tools: ${[...allowed].join(", ")}`,
    );
  }
  return { ...body, tools, tool_choice: choice.allowed_tools.mode };
}

/**
 * `reasoning.exclude` (and `include_reasoning: false`): the model reasons, and its reasoning tokens are
 * billed as output, but the answer carries none of it, whatever the provider sends back.
 */
function withoutReasoning(iterator: AsyncIterator<ChatChunk>): AsyncIterator<ChatChunk> {
  return {
    next: async () => {
      const result = await iterator.next();
      if (!result.done) {
        for (const choice of result.value.choices) {
          const hidden = choice.delta.reasoning?.length ?? 0;
          if (hidden > 0) result.value.hiddenReasoning = (result.value.hiddenReasoning ?? 0) + hidden;
          delete choice.delta.reasoning;
          delete choice.delta.reasoning_details;
        }
      }
      return result;
    },
    return: (value?: unknown) =>
      iterator.return?.(value) ?? Promise.resolve({ done: true, value: undefined as never }),
  };
}

/** `include_reasoning` as `reasoning`: false is `exclude: true`, true is `enabled: true`; `reasoning` wins. */
export function withIncludeReasoning(body: ChatRequestBody): ChatRequestBody {
  const include = body.include_reasoning;
  if (include == null) return body;
  if (!include) {
    return body.reasoning?.exclude !== undefined
      ? body
      : { ...body, reasoning: { ...body.reasoning, exclude: true } };
  }
  return body.reasoning || body.reasoning_effort ? body : { ...body, reasoning: { enabled: true } };
}

/**
 * Runs a chat request (already under its preset) and answers it in the client's format: SSE with
 * `stream: true`, else one JSON body. A stream that breaks before the JSON answer is complete is a
 * 5xx and costs nothing; a streamed one is billed for what it produced.
 */
export function runChat(
  c: Context<AppEnv>,
  request: UnderPreset<ChatRequestBody>,
  format: ChatClientFormat = CHAT_COMPLETIONS,
  extras: ChatRequestExtras = {},
): Promise<Response> {
  return underCurrentPolicy(c, () => chatUnderPolicy(c, request, format, extras));
}

async function chatUnderPolicy(
  c: Context<AppEnv>,
  { body, presetId }: UnderPreset<ChatRequestBody>,
  format: ChatClientFormat,
  extras: ChatRequestExtras,
): Promise<Response> {
  const auth = c.get("auth");
  const model = body.model ?? body.models?.[0];
  if (!model) throw badRequest("model is required (or models, or preset)");
  body = withIncludeReasoning(withAllowedTools(body));
  const plugins = pluginPlanOf(body);
  const { healJson } = plugins;
  const { messages, sent, flags } = filteredPrompt(body, auth.policy);
  const beside = { tools: sent.tools, responseFormat: sent.response_format };
  // The estimate is billed when an upstream reports no usage; the ceiling is what admission reserves.
  const promptEstimate = billedPromptTokens(messages, beside);
  const promptCeiling = requestTokenCeiling(messages, beside);
  // Media whose tokens cannot be bounded before the call (a file by URL) reserve the model's window.
  const fileByUrl = hasFileByUrl(messages);
  const unbounded = (e: CatalogEndpointEntry) =>
    fileByUrl || (getAdapter(e.adapter)?.unboundedMedia?.(messages) ?? false);
  const signal = c.req.raw.signal;
  const streaming = body.stream === true;
  const sessionId = sessionIdOf(c.req.header("x-session-id"), body.session_id);
  // debug.echo_upstream_body (streaming only): every body sent upstream, failed attempts' included.
  const echoes = streaming && body.debug?.echo_upstream_body ? ([] as unknown[]) : undefined;
  // Adapters that can answer in the client's own wire format do, so the answer can pass through.
  const wire = format.passthrough ? { clientWire: format.passthrough.wire } : {};

  /** Middle-out: the messages as they fit the attempt's model's window, its output cap kept free. */
  const fitted = (attempt: { endpoint: CatalogEndpointEntry; model: { contextLength: number | null } }) => {
    const cap = maxOutputOf(body, attempt.endpoint);
    const window = attempt.model.contextLength ?? Number.POSITIVE_INFINITY;
    return middleOut(messages, window - (Number.isFinite(cap) ? cap : 0));
  };

  /**
   * The frames that end a committed stream no attempt served: the format's opening and its error, with
   * the usage of nothing produced (a failed request is charged nothing).
   */
  const failed = (error: ApiError, generationId: string, model: string) => {
    const meta: ChatMeta = {
      id: generationId,
      created: Math.floor(Date.now() / 1000),
      model,
      provider: typeof error.metadata?.provider_name === "string" ? error.metadata.provider_name : "",
      isByok: false,
      promptEstimate,
      price: () => ({ prompt: 0, completion: 0 }),
      ...(echoes ? { echo: echoes } : {}),
    };
    const stream = format.stream(meta);
    return stream.open() + stream.fail(committedStreamError(error), new Folded());
  };

  return runInference(requestIo(c), {
    capability: "chat",
    route: chatRoute(body, model),
    worstCaseMicros: (a) => {
      const cap = maxOutputOf(body, a.endpoint);
      return worstCaseMicros(
        a.endpoint,
        unbounded(a.endpoint)
          ? Math.max(promptCeiling, a.model.contextLength ?? UNKNOWN_CONTEXT_TOKENS)
          : promptCeiling,
        Number.isFinite(cap) ? cap : DEFAULT_MAX_OUTPUT_TOKENS,
      );
    },
    call: async (adapter, attempt, ctx): Promise<OpenedChat> => {
      // The upstream request outlives the attempt (it streams on after the first event): its own
      // abort, tied to the attempt's until the first event has arrived.
      const abort = new AbortController();
      const onAbort = () => abort.abort(ctx.signal.reason);
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      try {
        const stream = await adapter.chat!(
          adapterRequest(sent, plugins.middleOut ? fitted(attempt) : messages, attempt.endpoint, {
            ...extras,
            ...wire,
          }),
          {
            ...ctx,
            signal: abort.signal,
            ...(echoes ? { onUpstreamBody: (sent: unknown) => echoes.push(sent) } : {}),
          },
        );
        // Errors before the first event are scrubbed by the attempt runner; later ones here.
        const scrubbed = scrubbingIterator(stream[Symbol.asyncIterator](), [ctx.credential.apiKey]);
        const iterator = body.reasoning?.exclude === true ? withoutReasoning(scrubbed) : scrubbed;
        const first = await iterator.next();
        const provider = attempt.endpoint.provider;
        // A stream that ended before any event is a failed attempt (see endedEmpty): the next one is tried.
        if (first.done) throw emptyStream(provider);
        return { iterator, first, abort, wire: stream.wire, provider };
      } catch (err) {
        abort.abort(err);
        throw err;
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
    respond: async (opened, served) => {
      const meta: ChatMeta = {
        id: served.generationId,
        created: Math.floor(Date.now() / 1000),
        model: served.attempt.model.slug,
        provider: served.attempt.endpoint.provider,
        isByok: served.isByok,
        promptEstimate,
        outputCap: maxOutputOf(body, served.attempt.endpoint),
        price: chatPrice(served.attempt.endpoint),
        ...(echoes ? { echo: echoes } : {}),
        ...(healJson ? { healJson } : {}),
        mediaPrompt: mediaCounts(messages),
      };
      // Same wire format upstream and client: the upstream's events, not a re-encoding of them. Content
      // filters only apply to the request, so nothing on the way back needs the re-encoding path.
      // Healing rewrites the answer's text, so a healed answer is re-encoded, never passed through.
      // Hidden reasoning (`reasoning.exclude`) is taken out of the chunks, not of the upstream's events:
      // such an answer is re-encoded too.
      const same =
        opened.wire &&
        format.passthrough?.wire === opened.wire &&
        !healJson &&
        body.reasoning?.exclude !== true;
      const way = same ? format.passthrough! : format;
      if (streaming) return sseAnswer(opened, meta, way.stream(meta), served.committed);
      const answer = await jsonAnswer(
        opened,
        meta,
        (json) => c.json(json as never, 200),
        way.json(meta),
        signal,
      );
      // The client left before the answer was complete: cancelled, billed for what was produced.
      if ("cancelled" in answer)
        return { response: clientClosedResponse(), done: Promise.resolve(answer.cancelled) };
      return { response: answer.response, done: Promise.resolve(answer.final) };
    },
    record: {
      metadata: body.trace ?? null,
      user: body.user ?? null,
      flags,
      apiType: format.apiType,
      streamed: streaming,
      sessionId,
      presetId,
    },
    // A JSON answer is read whole inside its attempt: a failure on the way fails over.
    ...(streaming ? {} : { complete: (opened: OpenedChat) => collectAnswer(opened, signal) }),
    timeoutStatus: 408,
    ...(streaming ? { streamed: { failed } } : {}),
  });
}
