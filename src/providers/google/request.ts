// OpenAI-shaped chat requests as a Gemini `generateContent` body: contents, system instruction, tools, config.
import { toBase64 } from "../../lib/base64";
import { optionsOf } from "../options";
import type { ChatMessage, ChatRequest } from "../types";

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { id?: string; name: string; args?: Record<string, unknown> };
  functionResponse?: { name: string; response: Record<string, unknown> };
}

export interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The format thought signatures travel in as reasoning_details entries (OpenRouter's name for it). */
export const GEMINI_REASONING_FORMAT = "google-gemini-v1";

const base64Utf8 = (text: string) => toBase64(new TextEncoder().encode(text));

/** `data:<mime>[;base64],<data>` as inline data (Gemini wants base64). */
function inlineData(url: string): GeminiPart["inlineData"] | undefined {
  const m = /^data:([^;,]+)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (!m) return undefined;
  const base64 = /;base64/i.test(m[2]!);
  return { mimeType: m[1]!, data: base64 ? m[3]! : base64Utf8(decodeURIComponent(m[3]!)) };
}

const IMAGE_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  heif: "image/heif",
};

/**
 * Whether Gemini may read an image part as something other than an image (any URL it fetches without
 * an image extension, a video link; inline data of another type, data:video/mp4), or gets a file of
 * inline video or audio. Such media is billed by its length, which the gateway cannot see before the call.
 */
export function geminiUnboundedMedia(messages: ChatMessage[]): boolean {
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      // A file of inline video or audio is billed by its length, as its image part would be.
      if (p.type === "file" && /^data:(video|audio)\//i.test(p.file.file_data ?? "")) return true;
      if (p.type !== "image_url") continue;
      const url = p.image_url.url;
      if (url.startsWith("data:") ? !/^data:image\//i.test(url) : !mediaPart(url).fileData?.mimeType)
        return true;
    }
  }
  return false;
}

/**
 * A media URL: data URLs inline; other URLs (Files API URIs, public links) go as fileData for Google to
 * fetch, typed from the extension when it names one.
 */
function mediaPart(url: string): GeminiPart {
  const inline = inlineData(url);
  if (inline) return { inlineData: inline };
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  const mimeType = ext ? IMAGE_TYPES[ext] : undefined;
  return { fileData: { fileUri: url, ...(mimeType ? { mimeType } : {}) } };
}

function contentParts(content: unknown): GeminiPart[] {
  if (typeof content === "string") return content ? [{ text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.flatMap((p): GeminiPart[] => {
    if (!isRecord(p)) return [];
    if (p.type === "text" && typeof p.text === "string") return [{ text: p.text }];
    if (p.type === "image_url" && isRecord(p.image_url) && typeof p.image_url.url === "string") {
      return [mediaPart(p.image_url.url)];
    }
    if (p.type === "input_audio" && isRecord(p.input_audio) && typeof p.input_audio.data === "string") {
      const format = typeof p.input_audio.format === "string" ? p.input_audio.format : "wav";
      return [{ inlineData: { mimeType: `audio/${format}`, data: p.input_audio.data } }];
    }
    if (p.type === "file" && isRecord(p.file) && typeof p.file.file_data === "string") {
      return [mediaPart(p.file.file_data)];
    }
    return [];
  });
}

function textOf(content: unknown): string {
  return contentParts(content)
    .map((p) => p.text ?? "")
    .filter(Boolean)
    .join("\n");
}

/** Gemini wants an object as a function's response: a JSON object as is, anything else under `content`. */
function functionResponse(content: unknown): Json {
  const text = typeof content === "string" ? content : textOf(content);
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isRecord(parsed)) return parsed;
  } catch {
    // not JSON: sent as text
  }
  return { content: text };
}

function parseArguments(args: unknown): Json {
  if (isRecord(args)) return args;
  if (typeof args !== "string" || args === "") return {};
  try {
    const parsed = JSON.parse(args) as unknown;
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** Thought signatures an assistant message carries back (reasoning_details), by tool call id when they name one. */
function signaturesOf(message: ChatMessage): { byCall: Map<string, string>; loose: string[] } {
  const byCall = new Map<string, string>();
  const loose: string[] = [];
  const details = Array.isArray(message.reasoning_details) ? message.reasoning_details : [];
  for (const d of details) {
    if (!isRecord(d) || d.type !== "reasoning.encrypted" || typeof d.data !== "string") continue;
    if (d.format !== undefined && d.format !== GEMINI_REASONING_FORMAT) continue;
    if (typeof d.id === "string") byCall.set(d.id, d.data);
    else loose.push(d.data);
  }
  return { byCall, loose };
}

function modelParts(message: ChatMessage): GeminiPart[] {
  const { byCall, loose } = signaturesOf(message);
  const parts = contentParts(message.content).filter((p) => p.text !== undefined);
  // Gemini has no refusal part: a refusal the turn carries is more of its text.
  if (typeof message.refusal === "string" && message.refusal) parts.push({ text: message.refusal });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    if (!isRecord(call) || !isRecord(call.function) || typeof call.function.name !== "string") continue;
    const signature = typeof call.id === "string" ? byCall.get(call.id) : undefined;
    parts.push({
      functionCall: { name: call.function.name, args: parseArguments(call.function.arguments) },
      ...(signature ? { thoughtSignature: signature } : {}),
    });
  }
  // A signature that names no call belongs to the turn's first part, where Gemini put it.
  if (loose[0] && parts[0] && !parts[0].thoughtSignature)
    parts[0] = { ...parts[0], thoughtSignature: loose[0] };
  return parts;
}

/**
 * Messages as Gemini contents: system and developer messages become the system instruction, assistant
 * turns are `model` turns (tool calls as functionCall parts), tool results are functionResponse parts of
 * a `user` turn (named after the call they answer). Consecutive turns of one role are merged, so the
 * responses to parallel calls arrive together as Gemini expects.
 */
export function geminiContents(messages: ChatMessage[]): { contents: GeminiContent[]; system: string[] } {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const callNames = new Map<string, string>();
  const push = (role: GeminiContent["role"], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") {
      const text = textOf(m.content);
      if (text) system.push(text);
    } else if (m.role === "assistant") {
      for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
        if (isRecord(c) && typeof c.id === "string" && isRecord(c.function)) {
          callNames.set(c.id, String(c.function.name));
        }
      }
      push("model", modelParts(m));
    } else if (m.role === "tool") {
      const name = callNames.get(String(m.tool_call_id)) ?? (typeof m.name === "string" ? m.name : "tool");
      push("user", [{ functionResponse: { name, response: functionResponse(m.content) } }]);
    } else {
      push("user", contentParts(m.content));
    }
  }
  return { contents, system };
}

function functionDeclarations(tools: ChatRequest["tools"]): Json[] {
  return (tools ?? []).flatMap((t) => {
    const fn = t.function;
    if (t.type !== "function" || !isRecord(fn) || typeof fn.name !== "string") return [];
    // parametersJsonSchema takes JSON Schema as clients write it; `parameters` (an OpenAPI subset)
    // refuses keywords such as additionalProperties that strict OpenAI schemas always carry.
    return [
      {
        name: fn.name,
        ...(typeof fn.description === "string" ? { description: fn.description } : {}),
        ...(isRecord(fn.parameters) ? { parametersJsonSchema: fn.parameters } : {}),
      },
    ];
  });
}

function toolConfig(choice: unknown): Json | undefined {
  if (choice === "auto") return { functionCallingConfig: { mode: "AUTO" } };
  if (choice === "none") return { functionCallingConfig: { mode: "NONE" } };
  if (choice === "required") return { functionCallingConfig: { mode: "ANY" } };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === "string") {
    return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.function.name] } };
  }
  return undefined;
}

/** Share of the completion bound an effort may think for. */
const EFFORT_SHARE: Record<string, number> = {
  minimal: 0.1,
  low: 0.2,
  medium: 0.5,
  high: 0.8,
  xhigh: 0.9,
  max: 1,
};
const MIN_EFFORT_BUDGET = 1024;
const EFFORT_BASE = 32_768;

/** The thinking budgets a model takes (Google refuses others with 400), and whether 0 turns thinking off. */
interface ThinkingRange {
  min: number;
  max: number;
  canDisable: boolean;
}
const THINKING_RANGES: Array<[RegExp, ThinkingRange]> = [
  [/^gemini-2\.5-pro/, { min: 128, max: 32_768, canDisable: false }],
  [/^gemini-2\.5-flash-lite/, { min: 512, max: 24_576, canDisable: true }],
];
/** Gemini 2.5 Flash's, and what other models are sent. */
const DEFAULT_RANGE: ThinkingRange = { min: 1, max: 24_576, canDisable: true };

const rangeOf = (model: string) =>
  THINKING_RANGES.find(([pattern]) => pattern.test(model))?.[1] ?? DEFAULT_RANGE;
const clamp = (n: number, { min, max }: ThinkingRange) => Math.min(max, Math.max(min, n));

/**
 * `reasoning` as thinkingConfig, within the model's budgets: disabled (enabled false, effort none, a
 * zero max_tokens) is a zero budget, or on a model that always thinks (2.5 Pro) its least budget with the
 * thoughts hidden;
 * max_tokens is the budget; an effort is a share of min(maxTokens, 32768), at least 1024; neither leaves
 * the budget to the model (dynamic thinking). Thoughts are included unless `exclude` is set.
 */
export function thinkingConfig(request: ChatRequest, upstreamModel = ""): Json | undefined {
  const r = request.reasoning;
  if (!r) return undefined;
  const range = rangeOf(upstreamModel);
  if (r.enabled === false || r.effort === "none" || r.max_tokens === 0) {
    return range.canDisable ? { thinkingBudget: 0 } : { includeThoughts: false, thinkingBudget: range.min };
  }
  const config: Json = { includeThoughts: r.exclude !== true };
  const share = r.effort ? EFFORT_SHARE[r.effort] : undefined;
  if (r.max_tokens !== undefined) config.thinkingBudget = clamp(r.max_tokens, range);
  else if (share !== undefined) {
    const base = Math.min(request.maxTokens ?? EFFORT_BASE, EFFORT_BASE);
    config.thinkingBudget = clamp(Math.max(MIN_EFFORT_BUDGET, Math.floor(base * share)), range);
  }
  return config;
}

function responseFormat(format: ChatRequest["responseFormat"]): Json {
  if (format?.type === "json_object") return { responseMimeType: "application/json" };
  if (format?.type === "json_schema" && isRecord(format.json_schema)) {
    const schema = format.json_schema.schema;
    // responseJsonSchema, like parametersJsonSchema, takes the JSON Schema clients send unchanged.
    return {
      responseMimeType: "application/json",
      ...(isRecord(schema) ? { responseJsonSchema: schema } : {}),
    };
  }
  return {};
}

/**
 * The JSON body of `:streamGenerateContent`. Passthrough options (`provider.options.<provider>`):
 * `generationConfig` (merged over the mapped one), `safetySettings` and `cachedContent`, sent as given.
 */
export function geminiBody(request: ChatRequest, upstreamModel = ""): Json {
  const { contents, system } = geminiContents(request.messages);
  const body: Json = { contents };
  if (system.length > 0) body.systemInstruction = { parts: system.map((text) => ({ text })) };
  const declarations = functionDeclarations(request.tools);
  if (declarations.length > 0) body.tools = [{ functionDeclarations: declarations }];
  const tools = declarations.length > 0 ? toolConfig(request.toolChoice) : undefined;
  if (tools) body.toolConfig = tools;
  const config: Json = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  set("maxOutputTokens", request.maxTokens);
  set("temperature", request.temperature);
  set("topP", request.topP);
  set("topK", request.topK);
  set("stopSequences", request.stop?.length ? request.stop : undefined);
  set("seed", request.seed);
  Object.assign(config, responseFormat(request.responseFormat));
  set("thinkingConfig", thinkingConfig(request, upstreamModel));
  // Provider options add generation settings under the gateway's own (see ../options.ts).
  const options = optionsOf(request.passthrough);
  const merged = isRecord(options.generationConfig) ? { ...options.generationConfig, ...config } : config;
  if (Object.keys(merged).length > 0) body.generationConfig = merged;
  if (Array.isArray(options.safetySettings)) body.safetySettings = options.safetySettings;
  return body;
}
