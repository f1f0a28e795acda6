// Gemini's streamed GenerateContentResponse events as normalized chat chunks (text, thoughts, function calls).
import { UpstreamError } from "../errors";
import type { ChatChunk, ChatDelta, ChatFinishReason, ChatToolCallDelta, ChatUsage } from "../types";
import { GEMINI_REASONING_FORMAT, type GeminiPart } from "./request";

interface UsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
}

/** The fields of one streamed event the gateway reads. */
export interface GeminiEvent {
  candidates?: Array<{ index?: number; content?: { parts?: GeminiPart[] }; finishReason?: string }>;
  promptFeedback?: { blockReason?: string };
  usageMetadata?: UsageMetadata;
  modelVersion?: string;
  responseId?: string;
  error?: { code?: number; message?: string; status?: string };
}

/** Finish reasons that mean Google withheld or cut the answer for its content. */
const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]);

/**
 * STOP is `stop`, or `tool_calls` when the answer called functions; MAX_TOKENS is `length`; the
 * content blocks are `content_filter`; anything else (OTHER, MALFORMED_FUNCTION_CALL, ...) ends as
 * `stop`, the native value telling what happened.
 */
export function finishReasonOf(native: string, calledFunctions: boolean): ChatFinishReason {
  if (native === "MAX_TOKENS") return "length";
  if (FILTERED.has(native)) return "content_filter";
  return native === "STOP" && calledFunctions ? "tool_calls" : "stop";
}

/**
 * Thoughts are output Google bills as such: they count into completion tokens and are reported as
 * reasoning tokens. Tool-use prompt tokens (built-in tools) are prompt tokens.
 */
export function usageOf(u: UsageMetadata): ChatUsage {
  const thoughts = u.thoughtsTokenCount ?? 0;
  return {
    promptTokens: (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0),
    completionTokens: (u.candidatesTokenCount ?? 0) + thoughts,
    ...(u.cachedContentTokenCount !== undefined ? { cachedTokens: u.cachedContentTokenCount } : {}),
    ...(u.thoughtsTokenCount !== undefined ? { reasoningTokens: thoughts } : {}),
  };
}

const mintCallId = () => `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;

/**
 * Reads events one at a time. Parts become one delta per event (text -> content, `thought` text ->
 * reasoning, functionCall -> a whole tool call with a minted id and the next index, thoughtSignature ->
 * a `reasoning.encrypted` reasoning_details entry, tied to its call's id). Usage comes on every event
 * and grows; the last one counts. Finish reason and usage go out in one chunk once the stream ends.
 */
export class GeminiStreamReader {
  private calls = 0;
  private details = 0;
  private started = false;
  private finish?: { reason: ChatFinishReason; native: string };
  private usage?: UsageMetadata;
  private model?: string;
  private upstreamId?: string;

  constructor(
    private readonly provider: string,
    private readonly mintId: () => string = mintCallId,
  ) {}

  /** The chunk for one event, if it carried anything to say. Throws an UpstreamError for an error event. */
  read(event: GeminiEvent): ChatChunk | undefined {
    if (event.error) {
      const { code, status, message } = event.error;
      throw new UpstreamError({
        kind: "http",
        status: typeof code === "number" ? code : 500,
        providerCode: status ?? code,
        message: `Provider ${this.provider} failed mid-stream${message ? `: ${message}` : ""}`,
      });
    }
    if (event.usageMetadata) this.usage = event.usageMetadata;
    if (event.modelVersion) this.model = event.modelVersion;
    if (event.responseId) this.upstreamId = event.responseId;
    const block = event.promptFeedback?.blockReason;
    if (block) this.finish = { reason: "content_filter", native: block };
    const candidate = event.candidates?.[0];
    if (!candidate) return undefined;
    const delta = this.deltaOf(candidate.content?.parts ?? []);
    if (candidate.finishReason) {
      this.finish = {
        reason: finishReasonOf(candidate.finishReason, this.calls > 0),
        native: candidate.finishReason,
      };
    }
    if (!delta) return undefined;
    return this.chunk({ index: 0, delta, finish_reason: null });
  }

  /** The last chunk: finish reason and usage, when the upstream gave them (a cut stream has neither). */
  end(): ChatChunk | undefined {
    if (!this.finish && !this.usage) return undefined;
    const choices = this.finish
      ? [
          {
            index: 0,
            delta: {},
            finish_reason: this.finish.reason,
            native_finish_reason: this.finish.native,
          },
        ]
      : [];
    return { ...this.chunk(...choices), ...(this.usage ? { usage: usageOf(this.usage) } : {}) };
  }

  private chunk(...choices: ChatChunk["choices"]): ChatChunk {
    return {
      choices,
      ...(this.model ? { model: this.model } : {}),
      ...(this.upstreamId ? { upstreamId: this.upstreamId } : {}),
    };
  }

  private deltaOf(parts: GeminiPart[]): ChatDelta | undefined {
    let content = "";
    let reasoning = "";
    const toolCalls: ChatToolCallDelta[] = [];
    const details: Array<Record<string, unknown>> = [];
    for (const part of parts) {
      let callId: string | undefined;
      if (typeof part.text === "string") {
        if (part.thought) reasoning += part.text;
        else content += part.text;
      }
      if (part.functionCall) {
        callId = this.mintId();
        toolCalls.push({
          index: this.calls++,
          id: callId,
          type: "function",
          function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
        });
      }
      if (part.thoughtSignature) {
        details.push({
          type: "reasoning.encrypted",
          data: part.thoughtSignature,
          format: GEMINI_REASONING_FORMAT,
          index: this.details++,
          ...(callId ? { id: callId } : {}),
        });
      }
    }
    const delta: ChatDelta = {};
    if (reasoning) delta.reasoning = reasoning;
    if (details.length > 0) delta.reasoning_details = details;
    if (content) delta.content = content;
    if (toolCalls.length > 0) delta.tool_calls = toolCalls;
    if (Object.keys(delta).length === 0) return undefined;
    if (!this.started) {
      this.started = true;
      return { role: "assistant", ...delta };
    }
    return delta;
  }
}
