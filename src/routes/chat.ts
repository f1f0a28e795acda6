// POST /chat/completions: the OpenAI chat shape in, any provider's wire out (inference/chat.ts), streamed
// as Server-Sent Events or answered as one chat.completion, billed from the upstream's usage.
import { createRoute, z } from "@hono/zod-openapi";
import { runChat } from "../inference/chat";
import { applyChatPreset } from "../inference/preset";
import { createRouter, errorResponses, jsonBody } from "../lib/openapi";
import { ChatRequestSchema, ChatResponseSchema } from "../schemas/chat";

const createChat = createRoute({
  method: "post",
  path: "/chat/completions",
  tags: ["Chat"],
  security: [{ bearer: [] }],
  summary: "Create a chat completion (streamed with `stream: true`)",
  request: { body: jsonBody(ChatRequestSchema) },
  responses: {
    200: {
      description:
        "A chat.completion, or with `stream: true` a text/event-stream of chat.completion.chunk events",
      content: {
        "application/json": { schema: ChatResponseSchema },
        "text/event-stream": { schema: z.string() },
      },
    },
    ...errorResponses(400, 401, 402, 403, 404, 408, 413, 429, 500, 502, 503, 524, 529),
  },
});

export const chatRoutes = createRouter().openapi(createChat, async (c) => {
  // The preset first: its system prompt is filtered, counted and sent like the caller's own messages.
  return runChat(c, await applyChatPreset(c.env, c.get("auth"), c.req.valid("json")));
});
