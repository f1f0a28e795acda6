// POST /messages/count_tokens: Anthropic's token counting (what Claude Code calls to size its context) on
// the chat route plan. Free: no credits reserved or charged, no generation record. Errors use Anthropic's
// envelope (app.ts), as on POST /messages.
import { countChatTokens } from "../inference/count-tokens";
import { chatBodyOf } from "../inference/formats/messages-request";
import { applyChatPreset } from "../inference/preset";
import { anthropicHeadersOf } from "../lib/anthropic-headers";
import { apiRoute, createRouter, jsonBody, jsonContent } from "../lib/openapi";
import { AnthropicErrorSchema } from "../schemas/messages";
import { CountTokensRequestSchema, CountTokensResponseSchema } from "../schemas/messages-count-tokens";

export const COUNT_TOKENS_PATH = "/messages/count_tokens";

/** Every status this operation answers, in Anthropic's envelope (402 never: counting is free). */
const errors = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [
      s,
      {
        description: `Error ${s} (Anthropic's envelope)`,
        content: { "application/json": { schema: AnthropicErrorSchema } },
      },
    ]),
  );

const countTokens = apiRoute({
  method: "post",
  path: COUNT_TOKENS_PATH,
  operationId: "countMessagesTokens",
  tags: ["Messages"],
  // Typed wide: two differently keyed literals here break the route's input inference.
  security: [{ bearer: [] }, { apiKey: [] }] as Array<Record<string, string[]>>,
  summary: "Count the input tokens of a Messages request without creating it",
  description:
    "The endpoint a `POST /messages` with this body would be served by does the counting: Anthropic's own `count_tokens` (with the workspace's BYOK key or the platform's, `anthropic-version` and `anthropic-beta` passed on), the sandbox's count, or, for providers that cannot count, the gateway's estimate (about 3 characters a token, erring high). The key's guardrails and data regions apply as for inference, and failover before an answer too. Free: no credits are reserved or charged and no generation is recorded.",
  request: { body: jsonBody(CountTokensRequestSchema) },
  responses: {
    200: jsonContent(CountTokensResponseSchema, "The input tokens of the request"),
    ...errors(400, 401, 403, 404, 405, 413, 429, 500, 502, 503, 524, 529),
  },
});

export const countTokensRoutes = createRouter().openapi(countTokens, async (c) => {
  const auth = c.get("auth");
  // max_tokens only bounds an answer; no answer here (chatBodyOf's type wants one, the count ignores it).
  const { max_tokens: _unused, ...chat } = chatBodyOf({ ...c.req.valid("json"), max_tokens: 1 });
  const { body } = await applyChatPreset(c.env, auth, chat);
  const inputTokens = await countChatTokens(
    { env: c.env, auth, signal: c.req.raw.signal, trace: c.get("trace") },
    body,
    { anthropic: anthropicHeadersOf((name) => c.req.header(name)) },
  );
  return c.json({ input_tokens: inputTokens }, 200);
});
