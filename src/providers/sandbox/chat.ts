// Sandbox chat: deterministic streamed answers (echo, tool calls, reasoning) and streaming failure modes, offline.
import { UpstreamError } from "../errors";
import { chatStream } from "../sse";
import type {
  CallContext,
  ChatChoiceDelta,
  ChatChunk,
  ChatDelta,
  ChatRequest,
  ChatStream,
  ChatUsage,
} from "../types";
import { echoPlan, type Plan, promptTokensOf, reasoningPlan, toolsPlan } from "./chat-plan";
import { sandboxFailureMode } from "./failures";

/** How long `*slow-first-token*` waits before its first chunk unless `first_token_ms` says otherwise. */
export const SANDBOX_SLOW_FIRST_TOKEN_MS = 3_000;
/** Chunks `*error-after-3*` sends before failing. */
export const SANDBOX_CHUNKS_BEFORE_ERROR = 3;
/** No wait the knobs ask for lasts longer than the gateway's longest chat answer. */
const MAX_WAIT_MS = 15 * 60_000;

const waitOption = (v: unknown, fallback: number) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.min(v, MAX_WAIT_MS) : fallback;

/**
 * How the stream behaves, named by the upstream model id (as in failures.ts; the failure modes that
 * answer before the first byte, `*always-503*`, `*rate-limited-429*`, `*never-answers*`..., live there):
 * - `*error-after-3*`: three content chunks, then a mid-stream UpstreamError (500, `server_error`).
 * - `*slow-first-token*`: answers at once, but the first chunk waits (`first_token_ms`, default 3 s).
 * - `*truncated*`: content chunks, then the stream ends with no finish_reason and no usage.
 */
type StreamMode = "complete" | "error-after-3" | "slow-first-token" | "truncated";

function streamModeOf(upstreamModel: string): StreamMode {
  for (const mode of ["error-after-3", "slow-first-token", "truncated"] as const) {
    if (upstreamModel.includes(mode)) return mode;
  }
  return "complete";
}

/** What the answer is: tool calls (`*chat-tools*`), reasoning then echo (`*reasoning*`), else the echo. */
function planOf(request: ChatRequest, upstreamModel: string): Plan {
  if (upstreamModel.includes("chat-tools")) return toolsPlan(request);
  if (upstreamModel.includes("reasoning")) return reasoningPlan(request);
  return echoPlan(request);
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

async function* generate(
  plan: Plan,
  request: ChatRequest,
  call: CallContext,
  mode: StreamMode,
): AsyncGenerator<ChatChunk> {
  const model = call.endpoint.upstreamModel;
  // The sandbox's own id for its answer, as a provider's would be (recorded as the generation's upstream_id).
  const upstreamId = `sandbox-${crypto.randomUUID()}`;
  const options = request.passthrough ?? {};
  const pace = waitOption(options.pace_ms, 0);
  const limit = request.maxTokens ?? call.endpoint.capabilities.max_output_tokens ?? Number.POSITIVE_INFINITY;
  let completion = Math.min(plan.hiddenReasoningTokens, limit);
  let reasoning = completion;
  let finish = plan.finish;
  let sent = 0;
  const fail = () =>
    new UpstreamError({
      kind: "http",
      status: 500,
      providerCode: "server_error",
      message: `Provider ${call.endpoint.provider} failed mid-stream: sandbox model errors after ${SANDBOX_CHUNKS_BEFORE_ERROR} chunks`,
    });

  if (mode === "slow-first-token") {
    await sleep(waitOption(options.first_token_ms, SANDBOX_SLOW_FIRST_TOKEN_MS), call.signal);
  }
  for (const step of plan.steps) {
    if (mode === "error-after-3" && sent === SANDBOX_CHUNKS_BEFORE_ERROR) throw fail();
    if (completion + step.tokens > limit) {
      finish = "length";
      break;
    }
    if (sent > 0 && pace > 0) await sleep(pace, call.signal);
    if (call.signal.aborted) throw call.signal.reason;
    completion += step.tokens;
    if (step.reasoning) reasoning += step.tokens;
    const delta: ChatDelta = sent === 0 ? { role: "assistant", ...step.delta } : step.delta;
    sent++;
    yield { choices: [{ index: 0, delta, finish_reason: null }], model, upstreamId };
  }
  if (mode === "error-after-3") throw fail();
  if (mode === "truncated") return;
  if (pace > 0) await sleep(pace, call.signal);
  if (call.signal.aborted) throw call.signal.reason;
  const usage: ChatUsage = {
    promptTokens: plan.promptTokens,
    completionTokens: completion,
    ...(plan.reasons ? { reasoningTokens: reasoning } : {}),
  };
  // A stop sequence named as Anthropic and vLLM name it; an answer cut by max_tokens first is `length`.
  const sequence = finish === "stop" ? plan.stopSequence : undefined;
  const choice: ChatChoiceDelta = {
    index: 0,
    delta: {},
    finish_reason: finish,
    native_finish_reason: sequence ? "stop_sequence" : finish,
    ...(sequence ? { stop_sequence: sequence } : {}),
  };
  yield {
    choices: [choice],
    usage,
    model,
    upstreamId,
  };
}

/**
 * Passthrough knobs (`provider.options.<sandbox provider>`): `pace_ms` waits between chunks (default 0,
 * as fast as the reader pulls), `first_token_ms` sets the slow model's wait. Tokens: a word of the
 * answer is one completion token; the prompt is about four characters per token (see chat-plan.ts).
 */
export async function sandboxChat(request: ChatRequest, call: CallContext): Promise<ChatStream> {
  // An abort rejects with the signal's reason, before the first byte and mid-stream alike (as readSse
  // does), so the attempt runner tells a deadline from a client that left.
  if (call.signal.aborted) throw call.signal.reason;
  const model = call.endpoint.upstreamModel;
  const upstreamBody = {
    model,
    messages: request.messages,
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    ...(request.tools ? { tools: request.tools } : {}),
    ...(request.responseFormat ? { response_format: request.responseFormat } : {}),
  };
  call.onUpstreamBody?.(upstreamBody);
  await sandboxFailureMode(call);
  return chatStream(generate(planOf(request, model), request, call, streamModeOf(model)));
}

/**
 * The prompt as the sandbox counts it: exactly the prompt tokens its chat answer reports for the same
 * request. The failure-mode models fail here as they do for chat.
 */
export async function sandboxCountTokens(request: ChatRequest, call: CallContext): Promise<number> {
  if (call.signal.aborted) throw call.signal.reason;
  await sandboxFailureMode(call);
  return promptTokensOf(request);
}
