// Counting a chat request's prompt tokens without running it (POST /messages/count_tokens). It is planned
// as the chat it counts would be (model preset, key policy, data region, BYOK, content filters), then the
// planned endpoints are tried in order: an adapter that can count asks its upstream (Anthropic's
// count_tokens; the sandbox counts as its chat does), any other is estimated here. No admission and no
// generation record: counting is free, as Anthropic's is.

import type { AuthContext } from "../db/auth-records";
import type { Bindings } from "../env";
import { badRequest } from "../lib/errors";
import type { RequestTrace } from "../lib/request-log";
import { getAdapter } from "../providers/registry";
import type { ChatRequest } from "../providers/types";
import type { ChatRequestBody } from "../schemas/chat";
import { runAttempts } from "./attempts";
import { adapterRequest, type ChatRequestExtras, chatRoute, filteredPrompt } from "./chat";
import { credentialResolver } from "./context";
import { planFor } from "./pipeline";
import { estimateRequestTokens } from "./prompt-estimate";

/**
 * The gateway's own count for endpoints whose upstream cannot count: the estimate admission reserves
 * against (about 3 characters a token plus framing per message), tool definitions and the response
 * format included. It errs high, never low, so a caller sizing a context window stays inside it.
 */
export function estimateChatPromptTokens(
  request: Pick<ChatRequest, "messages" | "tools" | "responseFormat">,
): number {
  return estimateRequestTokens(request.messages, request);
}

export async function countChatTokens(
  io: { env: Bindings; auth: AuthContext; signal?: AbortSignal; trace?: RequestTrace },
  body: ChatRequestBody,
  extras: ChatRequestExtras = {},
): Promise<number> {
  const { env, auth } = io;
  const model = body.model ?? body.models?.[0];
  if (!model) throw badRequest("model is required (or models, or preset)");
  // What the provider would be sent: a blocked text refuses the count (403), a redacted one is counted redacted.
  const { messages, sent } = filteredPrompt(body, auth.policy);
  const { context, plan } = await planFor(env, auth, {
    capability: "chat",
    route: chatRoute(body, model),
  });
  const outcome = await runAttempts<number>(plan, {
    modality: "chat",
    signal: io.signal,
    resolveCredential: credentialResolver(env, context.byok),
    call: async (attempt, ctx) => {
      const request = adapterRequest(sent, messages, attempt.endpoint, extras);
      const adapter = getAdapter(attempt.endpoint.adapter)!;
      return adapter.countTokens ? adapter.countTokens(request, ctx) : estimateChatPromptTokens(request);
    },
  });
  const last = outcome.log.at(-1);
  if (io.trace && last) {
    Object.assign(io.trace, {
      model: last.model,
      provider: last.provider,
      byok: last.byok,
      upstreamMs: outcome.log.reduce((ms, a) => ms + a.duration_ms, 0),
    });
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
