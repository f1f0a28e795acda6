// Anthropic's POST /v1/messages/count_tokens: the prompt of a chat request counted by Anthropic itself,
// from the same body a generation would send (so the preset, filters and translation are all counted).
import { z } from "zod";
import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import type { CallContext, ChatRequest } from "../types";
import { anthropicBody } from "./request";

/** The fields of a Messages body that count_tokens takes; the generation settings are refused there. */
const COUNTED_FIELDS = [
  "model",
  "messages",
  "system",
  "tools",
  "tool_choice",
  "thinking",
  "output_config",
  "cache_control",
] as const;

const AnswerSchema = z.object({ input_tokens: z.int().min(0) });

/** `headers`: the adapter's authentication and API version headers, as a generation sends them. */
export async function anthropicCountTokens(
  request: ChatRequest,
  call: CallContext,
  headers: Record<string, string>,
): Promise<number> {
  const full = anthropicBody(request, call.endpoint.upstreamModel) as unknown as Record<string, unknown>;
  const body = Object.fromEntries(
    COUNTED_FIELDS.filter((f) => full[f] !== undefined).map((f) => [f, full[f]]),
  );
  const res = await call.fetch(`${call.endpoint.baseUrl}/v1/messages/count_tokens`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: call.signal,
  });
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  const parsed = AnswerSchema.safeParse(await res.json().catch(() => null));
  if (!parsed.success) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent a token count the gateway cannot read`,
    });
  }
  return parsed.data.input_tokens;
}
