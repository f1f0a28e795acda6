// The plugins and transforms a chat-shaped request names (chat, responses and messages alike), and what
// the gateway does with them: it runs context compression (middle-out) and response healing, and refuses
// the plugins it cannot run here (web search, fusion, routers, ...) rather than answer without them.
import { jsonrepair } from "jsonrepair";
import { badRequest } from "../lib/errors";
import type { ChatMessage } from "../providers/types";
import type { ChatRequestBody } from "../schemas/chat";
import { estimatePromptTokens } from "./prompt-estimate";

/** What the request's plugins ask of the pipeline. */
export interface PluginPlan {
  /** Drop messages from the middle of a conversation too long for the endpoint's context window. */
  middleOut: boolean;
  /** Repair a JSON answer the model wrote malformed (non-streamed answers with a JSON response_format). */
  healJson: boolean;
}

const RUNS_HERE = ["context-compression", "response-healing"];

/**
 * The plan of a body's `plugins` and `transforms`. A plugin with `enabled: false` is left out; one the
 * gateway cannot run is a 400 naming it, as is a transform other than `middle-out`.
 */
export function pluginPlanOf(
  body: Pick<ChatRequestBody, "plugins" | "transforms" | "stream" | "response_format">,
): PluginPlan {
  const plan: PluginPlan = { middleOut: false, healJson: false };
  for (const transform of body.transforms ?? []) {
    if (transform !== "middle-out")
      throw badRequest(`Unknown transform '${transform}': the one transform is 'middle-out'`);
    plan.middleOut = true;
  }
  for (const plugin of body.plugins ?? []) {
    if (plugin.enabled === false) continue;
    if (plugin.id === "context-compression") {
      const engine = plugin.engine;
      if (engine !== undefined && engine !== "middle-out") {
        throw badRequest(`context-compression engine '${String(engine)}' is not available; use 'middle-out'`);
      }
      plan.middleOut = true;
    } else if (plugin.id === "response-healing") {
      // Only a whole answer asked to be JSON is healed: a stream is sent as the model writes it.
      const json = body.response_format !== undefined && body.response_format.type !== "text";
      plan.healJson = json && body.stream !== true;
    } else {
      throw badRequest(
        `The '${plugin.id}' plugin is not available on this gateway (it runs ${RUNS_HERE.join(" and ")}); ` +
          "leave it out or send it with enabled: false",
      );
    }
  }
  return plan;
}

/** One unit of a conversation: a message, or an assistant's tool calls with the tool results after them. */
function unitsOf(messages: ChatMessage[]): ChatMessage[][] {
  const units: ChatMessage[][] = [];
  for (const m of messages) {
    const last = units.at(-1);
    if (m.role === "tool" && last?.[0]?.role === "assistant") last.push(m);
    else units.push([m]);
  }
  return units;
}

const INSTRUCTIONS = new Set(["system", "developer"]);

/**
 * Middle-out: the conversation cut to fit `budgetTokens` by the prompt estimate (which counts long, so it
 * cuts early rather than late). Its leading system and developer messages, its first other message and
 * its last stay; messages leave from the middle outwards, a tool call with its results. What cannot be
 * made to fit is returned as short as it got (the provider then refuses it as too long).
 */
export function middleOut(messages: ChatMessage[], budgetTokens: number): ChatMessage[] {
  let tokens = estimatePromptTokens(messages);
  if (tokens <= budgetTokens) return messages;
  const units = unitsOf(messages);
  let first = 0;
  while (first < units.length && INSTRUCTIONS.has(units[first]![0]!.role)) first++;
  // Units between the first conversational one and the last, nearest the centre first.
  const centre = (first + units.length - 1) / 2;
  const order = [];
  for (let i = first + 1; i < units.length - 1; i++) order.push(i);
  order.sort((a, b) => Math.abs(a - centre) - Math.abs(b - centre) || b - a);
  const dropped = new Set<number>();
  for (const i of order) {
    if (tokens <= budgetTokens) break;
    dropped.add(i);
    tokens -= estimatePromptTokens(units[i]!);
  }
  return units.filter((_, i) => !dropped.has(i)).flat();
}

/**
 * The longest answer repaired. jsonrepair's time grows faster than the text on some malformed shapes
 * (128 KB of `{}` lines took 1.8 s, 800 KB of unterminated strings a minute, all on the isolate's one
 * thread); at 32 KB the worst shapes measured take under 0.1 s.
 */
export const HEAL_MAX_CHARS = 32 * 1024;

/**
 * A JSON answer as a parser reads it: unchanged when it parses, repaired by jsonrepair (code fences,
 * trailing commas, single quotes, a cut-off end...) when that makes it parse, else unchanged. An answer
 * longer than HEAL_MAX_CHARS is not repaired.
 */
export function healedJson(content: string): string {
  try {
    JSON.parse(content);
    return content;
  } catch {
    // Repaired below.
  }
  if (content.length > HEAL_MAX_CHARS) return content;
  try {
    const repaired = jsonrepair(content).trim();
    JSON.parse(repaired);
    return repaired;
  } catch {
    return content;
  }
}
