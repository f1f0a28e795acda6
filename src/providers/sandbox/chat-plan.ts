// What the sandbox chat models say: an answer planned as a list of deltas before streaming (pure, deterministic).
import type { ChatDelta, ChatFinishReason, ChatMessage, ChatRequest } from "../types";

/** One chunk's delta and the completion tokens it costs. */
export interface Step {
  delta: ChatDelta;
  tokens: number;
  reasoning?: boolean;
}

export interface Plan {
  steps: Step[];
  /** How the answer ends when nothing (maxTokens) cuts it short. */
  finish: ChatFinishReason;
  /** The request's stop sequence that cut the answer, if one did. */
  stopSequence?: string;
  promptTokens: number;
  /** Reasoning produced but not shown (`reasoning.exclude`): billed, never streamed. */
  hiddenReasoningTokens: number;
  /** Whether usage reports reasoning tokens (the reasoning model). */
  reasons: boolean;
}

/** The sandbox's token count: about four characters per token. */
export const tokensOf = (text: string) => Math.ceil(text.length / 4);
/** A media part (image, audio, file) costs a flat amount, as in the sandbox embeddings. */
const MEDIA_TOKENS = 85;
/** Echoed and quoted texts are cut to this many words, so an answer stays short whatever the prompt. */
const MAX_QUOTED_WORDS = 200;

type Part = Record<string, unknown>;
const isRecord = (v: unknown): v is Part => typeof v === "object" && v !== null && !Array.isArray(v);

/** The text of a message's content: the string, or its text parts joined. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((p): p is Part => isRecord(p) && p.type === "text" && typeof p.text === "string")
    .map((p) => p.text as string)
    .join(" ");
}

const mediaCount = (content: unknown) =>
  Array.isArray(content) ? content.filter((p) => isRecord(p) && p.type !== "text").length : 0;

export function promptTokensOf(request: ChatRequest): number {
  let n = 0;
  for (const m of request.messages) {
    n += tokensOf(textOf(m.content)) + MEDIA_TOKENS * mediaCount(m.content);
    if (Array.isArray(m.tool_calls)) n += tokensOf(JSON.stringify(m.tool_calls));
  }
  if (request.tools?.length) n += tokensOf(JSON.stringify(request.tools));
  return Math.max(1, n);
}

const wordsOf = (text: string) => text.split(/\s+/).filter(Boolean);

function quote(text: string): string {
  const words = wordsOf(text);
  return words.slice(0, MAX_QUOTED_WORDS).join(" ") + (words.length > MAX_QUOTED_WORDS ? " ..." : "");
}

/** One step per word (one token each); concatenated, the deltas give back the text with single spaces. */
function wordSteps(text: string, key: "content" | "reasoning"): Step[] {
  return wordsOf(text).map((w, i) => ({
    delta: { [key]: i === 0 ? w : ` ${w}` },
    tokens: 1,
    ...(key === "reasoning" ? { reasoning: true } : {}),
  }));
}

/** The text up to the earliest stop sequence, and that sequence (the answer then ends `stop`, naming it). */
function cutAtStop(text: string, stop: string[] | undefined): { text: string; stopSequence?: string } {
  let end = text.length;
  let stopSequence: string | undefined;
  for (const s of stop ?? []) {
    const at = s ? text.indexOf(s) : -1;
    if (at >= 0 && at < end) {
      end = at;
      stopSequence = s;
    }
  }
  return stopSequence === undefined ? { text } : { text: text.slice(0, end), stopSequence };
}

const lastUser = (messages: ChatMessage[]) => [...messages].reverse().find((m) => m.role === "user");

export function echoText(request: ChatRequest): string {
  const said = quote(textOf(lastUser(request.messages)?.content));
  return said ? `You said: "${said}". The sandbox echoes it back.` : "You said nothing. The sandbox waits.";
}

function textPlan(request: ChatRequest, text: string): Plan {
  const cut = cutAtStop(text, request.stop);
  return {
    steps: wordSteps(cut.text, "content"),
    finish: "stop",
    ...(cut.stopSequence !== undefined ? { stopSequence: cut.stopSequence } : {}),
    promptTokens: promptTokensOf(request),
    hiddenReasoningTokens: 0,
    reasons: false,
  };
}

/**
 * The echo, or with `response_format` JSON: a value fitting the `json_schema` given (as tool arguments
 * are built), or for `json_object` the echo as `{"you_said": ...}`, streamed in pieces of at most 16
 * code points so that the concatenated deltas are the JSON byte for byte.
 */
export function echoPlan(request: ChatRequest): Plan {
  const json = jsonAnswer(request);
  if (json === undefined) return textPlan(request, echoText(request));
  const { text, stopSequence } = cutAtStop(json, request.stop);
  return {
    ...textPlan(request, ""),
    ...(stopSequence !== undefined ? { stopSequence } : {}),
    steps: text ? pieces(text).map((piece) => ({ delta: { content: piece }, tokens: tokensOf(piece) })) : [],
  };
}

function jsonAnswer(request: ChatRequest): string | undefined {
  const format = request.responseFormat;
  if (format?.type === "json_object") {
    return JSON.stringify({ you_said: quote(textOf(lastUser(request.messages)?.content)) });
  }
  if (format?.type === "json_schema" && isRecord(format.json_schema)) {
    return JSON.stringify(
      sampleValue(format.json_schema.schema ?? {}, String(format.json_schema.name ?? "value")),
    );
  }
  return undefined;
}

// ---------- reasoning ----------

export function reasoningText(request: ChatRequest): string {
  const n = wordsOf(textOf(lastUser(request.messages)?.content)).length;
  return `The user wrote ${n} ${n === 1 ? "word" : "words"}. The sandbox answers by echoing them, so the reply starts with "You said".`;
}

/**
 * Reasoning words first, each delta carrying the word both as `reasoning` and as a fragment of one
 * `reasoning_details` entry (as OpenRouter streams it: clients read one or the other), then the echo.
 * `reasoning.max_tokens` cuts the reasoning; `enabled: false` or effort `none` skips it; `exclude`
 * reasons without showing it (the tokens are still reported, as upstreams bill them).
 */
export function reasoningPlan(request: ChatRequest): Plan {
  const plan = echoPlan(request);
  const r = request.reasoning;
  if (r?.enabled === false || r?.effort === "none") return { ...plan, reasons: true };
  const words = wordsOf(reasoningText(request)).slice(0, r?.max_tokens ?? undefined);
  if (r?.exclude) return { ...plan, hiddenReasoningTokens: words.length, reasons: true };
  const steps = wordSteps(words.join(" "), "reasoning").map((step) => ({
    ...step,
    delta: {
      ...step.delta,
      reasoning_details: [
        { type: "reasoning.text", text: step.delta.reasoning!, format: "unknown", index: 0 },
      ],
    },
  }));
  return { ...plan, steps: [...steps, ...plan.steps], reasons: true };
}

// ---------- tools ----------

const STRING_FORMATS: Record<string, string> = {
  date: "2026-01-01",
  "date-time": "2026-01-01T00:00:00Z",
  time: "12:00:00",
  email: "sandbox@example.com",
  uri: "https://example.com/sandbox",
  url: "https://example.com/sandbox",
  uuid: "00000000-0000-4000-8000-000000000000",
};

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

function stringSample(s: Part, key: string): string {
  const value = STRING_FORMATS[String(s.format)] ?? `sandbox-${key}`;
  const min = num(s.minLength) ?? 0;
  const max = num(s.maxLength) ?? Number.POSITIVE_INFINITY;
  // JSON Schema counts code points: a key with an emoji is never cut inside its surrogate pair.
  const chars = [...value];
  while (chars.length < Math.min(min, 1000)) chars.push("x");
  return chars.slice(0, max).join("");
}

function numberSample(s: Part, preferred: number, integer: boolean): number {
  let v = preferred;
  const min = num(s.minimum) ?? num(s.exclusiveMinimum);
  const max = num(s.maximum) ?? num(s.exclusiveMaximum);
  if (min !== undefined && v <= min) v = integer ? Math.floor(min) + 1 : min + 0.5;
  if (max !== undefined && v >= max) v = integer ? Math.ceil(max) - 1 : max - 0.5;
  return v;
}

/** Characters of JSON a sampled value may reach: nested arrays multiply (10 items a level, 8 levels). */
const SAMPLE_CHARS = 64 * 1024;

/**
 * A value that fits a JSON schema, always the same for the same schema: const, first enum value or
 * default when given, else a sample per type (every object property is filled, arrays get minItems or
 * one item). `$ref`s are not followed (null); nesting past 8 levels gives null. The whole value stays
 * within about SAMPLE_CHARS of JSON: past it, arrays end early and further values are null (a schema of
 * nested arrays of 10 items would otherwise ask for 10^8 values, more than an isolate's memory).
 */
export function sampleValue(
  schema: unknown,
  key = "value",
  depth = 0,
  budget = { left: SAMPLE_CHARS },
): unknown {
  // Every value costs its share, nulls included (a null per item of 10^8 is as deadly as a string).
  if (budget.left <= 0) return null;
  budget.left -= 8;
  if (!isRecord(schema) || depth > 8) return null;
  // The caller's own values count at their size (one default repeated down nested arrays adds up too).
  const given = (value: unknown) => {
    budget.left -= JSON.stringify(value)?.length ?? 0;
    return value;
  };
  if ("const" in schema) return given(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return given(schema.enum[0]);
  if ("default" in schema) return given(schema.default);
  const branches = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (Array.isArray(branches) && branches.length > 0) {
    const pick = branches.find((b) => isRecord(b) && b.type !== "null") ?? branches[0];
    return sampleValue(pick, key, depth + 1, budget);
  }
  const declared = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const type = declared ?? (isRecord(schema.properties) ? "object" : undefined);
  switch (type) {
    case "object": {
      const props = isRecord(schema.properties) ? schema.properties : {};
      return Object.fromEntries(
        Object.entries(props).map(([k, v]) => {
          budget.left -= k.length + 4;
          return [k, sampleValue(v, k, depth + 1, budget)];
        }),
      );
    }
    case "array": {
      const count = Math.min(Math.max(1, num(schema.minItems) ?? 1), 10);
      const items: unknown[] = [];
      while (items.length < count && budget.left > 0)
        items.push(sampleValue(schema.items, key, depth + 1, budget));
      return items;
    }
    case "string": {
      const text = stringSample(schema, key);
      budget.left -= text.length;
      return text;
    }
    case "integer":
      return numberSample(schema, 1, true);
    case "number":
      return numberSample(schema, 1.5, false);
    case "boolean":
      return true;
    default:
      return null;
  }
}

interface FunctionTool {
  name: string;
  parameters: unknown;
}

function functionTools(tools: ChatRequest["tools"]): FunctionTool[] {
  return (tools ?? []).flatMap((t) => {
    const fn = t.function;
    if (t.type !== "function" || !isRecord(fn) || typeof fn.name !== "string") return [];
    return [{ name: fn.name, parameters: fn.parameters ?? { type: "object", properties: {} } }];
  });
}

/** Which tools to call: the one tool_choice names, else the first two (one without parallel calls). */
function chosenTools(request: ChatRequest): FunctionTool[] {
  const tools = functionTools(request.tools);
  const choice = request.toolChoice;
  if (choice === "none") return [];
  if (isRecord(choice) && isRecord(choice.function)) {
    return tools.filter((t) => t.name === (choice.function as Part).name);
  }
  return tools.slice(0, request.parallelToolCalls === false ? 1 : 2);
}

/**
 * Splits `text` into 2+ pieces of at most 16 code points (one piece when it is a single one). Never inside
 * a surrogate pair: half an emoji goes on the wire as a lone `\ud83d`, which clients cannot join again.
 */
function pieces(text: string): string[] {
  const points = Array.from(text);
  const count = Math.max(2, Math.ceil(points.length / 16));
  const size = Math.max(1, Math.ceil(points.length / count));
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

/** Tool calls already in the conversation, so new ids (`call_<n>`) never repeat an earlier one. */
const priorCalls = (messages: ChatMessage[]) =>
  messages.reduce(
    (n, m) => n + (m.role === "assistant" && Array.isArray(m.tool_calls) ? m.tool_calls.length : 0),
    0,
  );

function toolCallSteps(request: ChatRequest, tools: FunctionTool[]): Step[] {
  const first = priorCalls(request.messages);
  return tools.flatMap((tool, index) => {
    const args = JSON.stringify(sampleValue(tool.parameters, tool.name));
    const head: Step = {
      delta: {
        tool_calls: [
          {
            index,
            id: `call_${first + index}`,
            type: "function",
            function: { name: tool.name, arguments: "" },
          },
        ],
      },
      tokens: tokensOf(tool.name),
    };
    const rest = pieces(args).map((piece) => ({
      delta: { tool_calls: [{ index, function: { arguments: piece } }] },
      tokens: tokensOf(piece),
    }));
    return [head, ...rest];
  });
}

/** The answer after tool results: what each trailing tool message returned, by the name of its call. */
export function toolResultsText(messages: ChatMessage[]): string {
  const names = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== "assistant" || !Array.isArray(m.tool_calls)) continue;
    for (const c of m.tool_calls) {
      if (isRecord(c) && typeof c.id === "string" && isRecord(c.function))
        names.set(c.id, String(c.function.name));
    }
  }
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === "tool") start--;
  const results = messages.slice(start).map((m) => {
    const name = names.get(String(m.tool_call_id)) ?? "call";
    return `The tool ${name} returned ${quote(textOf(m.content)) || "nothing"}.`;
  });
  return `${results.join(" ")} That is all the sandbox knows.`;
}

/**
 * With tool results last in the conversation: a text answer about them. Otherwise, with tools: calls
 * to them (arguments built from each tool's parameters schema, streamed in pieces), finish tool_calls.
 * Without tools: the echo.
 */
export function toolsPlan(request: ChatRequest): Plan {
  const last = request.messages[request.messages.length - 1];
  if (last?.role === "tool") return textPlan(request, toolResultsText(request.messages));
  const tools = chosenTools(request);
  if (tools.length === 0) return echoPlan(request);
  return {
    steps: toolCallSteps(request, tools),
    finish: "tool_calls",
    promptTokens: promptTokensOf(request),
    hiddenReasoningTokens: 0,
    reasons: false,
  };
}
