// POST /messages: the Anthropic Messages API (what Claude Code and @anthropic-ai/sdk speak) on the chat core:
// the body is translated into the chat normal form, run like any chat, and answered as Messages events or
// one `message`. Errors on this path use Anthropic's envelope (app.ts).
import { z } from "@hono/zod-openapi";
import { runChat } from "../inference/chat";
import { MESSAGES } from "../inference/formats/messages";
import { chatBodyOf } from "../inference/formats/messages-request";
import { applyChatPreset } from "../inference/preset";
import { anthropicHeadersOf } from "../lib/anthropic-headers";
import { apiRoute, createRouter, jsonBody } from "../lib/openapi";
import { AnthropicErrorSchema, MessageResponseSchema, MessagesRequestSchema } from "../schemas/messages";

export const MESSAGES_PATH = "/messages";

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

const createMessages = apiRoute(
  {
    method: "post",
    path: MESSAGES_PATH,
    operationId: "createMessages",
    tags: ["Messages"],
    // Typed wide: two differently keyed literals here break the route's input inference.
    security: [{ bearer: [] }, { apiKey: [] }] as Array<Record<string, string[]>>,
    summary: "Create a message with the Anthropic Messages API (streamed with `stream: true`)",
    description:
      "Authenticate with `Authorization: Bearer <key>` or `x-api-key`. `anthropic-version` and `anthropic-beta` (or `x-anthropic-beta`) are passed on to Anthropic upstreams.",
    request: { body: jsonBody(MessagesRequestSchema) },
    responses: {
      200: {
        description: "A `message`, or with `stream: true` a text/event-stream of Messages events",
        content: {
          "application/json": { schema: MessageResponseSchema },
          "text/event-stream": { schema: z.string() },
        },
      },
      ...errors(400, 401, 402, 403, 404, 405, 408, 413, 429, 500, 502, 503, 524, 529),
    },
  },
  { inference: true },
);

export const messagesRoutes = createRouter().openapi(createMessages, async (c) => {
  // The preset first: its system prompt is filtered, counted and sent like the caller's own.
  const body = c.req.valid("json");
  const request = await applyChatPreset(c.env, c.get("auth"), chatBodyOf(body));
  const effort = body.output_config?.effort ?? undefined;
  const anthropic = { ...anthropicHeadersOf((name) => c.req.header(name)), ...(effort ? { effort } : {}) };
  return runChat(c, request, MESSAGES, { anthropic });
});
