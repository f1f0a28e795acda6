// OpenAI's POST /responses, always streamed: for a responses client on an upstream that serves the Responses
// API, so its events can be passed through. The body is built from the chat normal form (the same request
// every adapter gets: content filters, preset, per-endpoint bounds and fallbacks already applied).
import { optionsOf } from "../options";
import { chatStream, midStreamFailure, postForStream, rawChunks } from "../sse";
import type { CallContext, ChatMessage, ChatRequest, ChatStream } from "../types";
import type { OpenAiCompatibleOptions } from "./options";
import { OPENAI_REASONING_FORMAT, ResponsesStreamReader } from "./responses-stream";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** Chat request fields the Responses API has no place for: a request using one goes to /chat/completions. */
const CHAT_ONLY: Array<keyof ChatRequest> = [
  "stop",
  "seed",
  "logitBias",
  "logprobs",
  "topK",
  "repetitionPenalty",
  "frequencyPenalty",
  "presencePenalty",
];

/**
 * Whether this request goes to /responses: the client speaks the Responses API (so its events can pass
 * through), and nothing in it would be lost there (chat-only sampling fields, audio input parts).
 */
export function wantsResponsesApi(request: ChatRequest): boolean {
  if (request.clientWire !== "openai-responses") return false;
  if (CHAT_ONLY.some((field) => request[field] !== undefined && request[field] !== false)) return false;
  return !request.messages.some(
    (m) => Array.isArray(m.content) && m.content.some((p) => isObject(p) && p.type === "input_audio"),
  );
}

/** A user-side content part as a Responses input part. */
function inputPart(part: Json): Json {
  switch (part.type) {
    case "text":
      return { type: "input_text", text: str(part.text) ?? "" };
    case "image_url": {
      const image = isObject(part.image_url) ? part.image_url : {};
      return { type: "input_image", image_url: str(image.url), detail: str(image.detail) ?? "auto" };
    }
    case "file": {
      const file = isObject(part.file) ? part.file : {};
      const data = str(file.file_data) ?? "";
      const filename = str(file.filename);
      return {
        type: "input_file",
        ...(/^https?:/.test(data) ? { file_url: data } : { file_data: data }),
        ...(filename ? { filename } : {}),
      };
    }
    default:
      return part;
  }
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (isObject(p) && typeof p.text === "string" ? p.text : "")).join("")
      : "";

/**
 * Replayed reasoning as Responses reasoning items: OpenAI's own (an item id and encrypted content, as this
 * adapter read them) go back as they came; other providers' reasoning means nothing to OpenAI and is left out.
 */
function reasoningItems(details: unknown): Json[] {
  const items = new Map<unknown, Json>();
  for (const d of Array.isArray(details) ? details.filter(isObject) : []) {
    // An item replayed by a responses client carries no format; another provider's does.
    if ((d.format !== undefined && d.format !== OPENAI_REASONING_FORMAT) || typeof d.id !== "string")
      continue;
    const item = items.get(d.id) ?? { type: "reasoning", id: d.id, summary: [] as Json[] };
    items.set(d.id, item);
    if (d.type === "reasoning.summary" && typeof d.summary === "string")
      (item.summary as Json[]).push({ type: "summary_text", text: d.summary });
    if (d.type === "reasoning.encrypted" && typeof d.data === "string") item.encrypted_content = d.data;
  }
  // Without its encrypted content an item is only an id, which a stateless (store: false) request cannot resolve.
  return [...items.values()].filter((item) => item.encrypted_content !== undefined);
}

/** Chat messages as Responses input items; a leading system message becomes `instructions`. */
export function responsesInput(messages: ChatMessage[]): { instructions?: string; input: Json[] } {
  const [first, ...rest] = messages;
  const lead = first?.role === "system" && typeof first.content === "string";
  const input: Json[] = [];
  for (const m of lead ? rest : messages) {
    if (m.role === "assistant") {
      input.push(...reasoningItems(m.reasoning_details));
      // A refusal goes as the turn's text: an input message's content has no refusal part.
      const refusal = str(m.refusal);
      const text = [textOf(m.content), refusal].filter(Boolean).join("\n\n");
      if (text) input.push({ type: "message", role: "assistant", content: text });
      for (const call of Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : []) {
        const fn = isObject(call.function) ? call.function : {};
        input.push({
          type: "function_call",
          call_id: str(call.id) ?? "",
          name: str(fn.name) ?? "",
          arguments: str(fn.arguments) ?? "",
        });
      }
    } else if (m.role === "tool") {
      input.push({
        type: "function_call_output",
        call_id: str(m.tool_call_id) ?? "",
        output: textOf(m.content),
      });
    } else {
      const content = Array.isArray(m.content)
        ? m.content.filter(isObject).map(inputPart)
        : textOf(m.content);
      input.push({ type: "message", role: m.role, content });
    }
  }
  return lead ? { instructions: first.content as string, input } : { input };
}

/** Chat tools as Responses function tools (flat; strict stays off unless asked, as on chat). */
function responsesTools(tools: ChatRequest["tools"]): Json[] | undefined {
  return tools?.map((t) => {
    const fn = isObject(t.function) ? t.function : {};
    return {
      type: "function",
      name: fn.name,
      ...(fn.description !== undefined ? { description: fn.description } : {}),
      parameters: fn.parameters ?? { type: "object", properties: {} },
      strict: fn.strict ?? false,
    };
  });
}

function responsesToolChoice(choice: unknown): unknown {
  if (isObject(choice) && choice.type === "function" && isObject(choice.function))
    return { type: "function", name: choice.function.name };
  return choice;
}

function responsesText(format: ChatRequest["responseFormat"]): Json | undefined {
  if (!format) return undefined;
  if (format.type !== "json_schema") return { format: { type: format.type } };
  const schema = isObject(format.json_schema) ? format.json_schema : {};
  return { format: { type: "json_schema", ...schema } };
}

/** The JSON body sent to /responses. Stateless (`store: false`); passthrough options cannot turn streaming off. */
export function openAiResponsesBody(request: ChatRequest, upstreamModel: string): Json {
  const body: Json = { model: upstreamModel, ...responsesInput(request.messages) };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set("max_output_tokens", request.maxTokens);
  set("temperature", request.temperature);
  set("top_p", request.topP);
  set("top_logprobs", request.topLogprobs);
  set("tools", responsesTools(request.tools));
  set("tool_choice", responsesToolChoice(request.toolChoice));
  set("parallel_tool_calls", request.parallelToolCalls);
  set("text", responsesText(request.responseFormat));
  const reasoning = request.reasoning;
  if (reasoning && reasoning.enabled !== false) {
    const config: Json = {};
    if (reasoning.effort) config.effort = reasoning.effort;
    set("reasoning", config);
    // `exclude`: reasoning is done but not shown, so neither summaries nor its encrypted content are asked for.
    if (!reasoning.exclude) {
      if (reasoning.summary) config.summary = reasoning.summary;
      // Nothing is stored upstream: the encrypted reasoning comes back so the client can replay it.
      body.include = ["reasoning.encrypted_content"];
    }
  }
  set("user", request.user);
  set("prompt_cache_key", request.promptCacheKey);
  // Provider options add fields under the gateway's own (see ../options.ts).
  return { ...optionsOf(request.passthrough), ...body, model: upstreamModel, stream: true, store: false };
}

export async function openAiResponses(
  options: OpenAiCompatibleOptions,
  request: ChatRequest,
  call: CallContext,
): Promise<ChatStream> {
  const body = openAiResponsesBody(request, call.endpoint.upstreamModel);
  const res = await postForStream(
    call,
    `${call.endpoint.baseUrl}/responses`,
    options.authHeaders(call.credential.apiKey),
    body,
  );
  // Each chunk keeps the events it was read from: a responses client is sent those as they came.
  const reader = new ResponsesStreamReader(call.endpoint.provider);
  const chunks = rawChunks(
    res.body,
    (event) => reader.read(event),
    (err) => midStreamFailure(err, call),
  );
  return chatStream(chunks, "openai-responses");
}
