// POST /chat/completions: the OpenAI chat shape in, any provider's wire out (inference/chat.ts), streamed
// as Server-Sent Events or answered as one chat.completion, billed from the upstream's usage.
import { z } from "@hono/zod-openapi";
import { runChat } from "../inference/chat";
import { applyChatPreset } from "../inference/preset";
import { apiRoute, createRouter, jsonBody } from "../lib/openapi";
import { ChatRequestSchema, ChatResponseSchema } from "../schemas/chat";

const createChat = apiRoute(
  {
    method: "post",
    path: "/chat/completions",
    operationId: "sendChatCompletionRequest",
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
    },
  },
  { inference: true },
);

export const chatRoutes = createRouter().openapi(createChat, async (c) => {
  // The preset first: its system prompt is filtered, counted and sent like the caller's own messages.
  return runChat(c, await applyChatPreset(c.env, c.get("auth"), c.req.valid("json")));
});
