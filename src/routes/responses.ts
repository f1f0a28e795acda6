// POST /responses: the Responses API, stateless, on the chat core. The body is the one responses request
// schema (shared with POST /presets/{slug}/responses), translated to the chat normal form and answered as
// a `response` object or its event stream (inference/formats/responses.ts).
import { createRoute, z } from "@hono/zod-openapi";
import { runChat } from "../inference/chat";
import { responsesFormat } from "../inference/formats/responses";
import { responsesToChat } from "../inference/formats/responses-request";
import { applyResponsesPreset } from "../inference/preset";
import { createRouter, errorResponses, jsonBody } from "../lib/openapi";
import { ResponsesRequestSchema } from "../schemas/responses-request";
import { ResponsesResultSchema } from "../schemas/responses-result";

const createResponses = createRoute({
  method: "post",
  path: "/responses",
  operationId: "createResponses",
  tags: ["Responses"],
  security: [{ bearer: [] }],
  summary: "Create a response (stateless; streamed with `stream: true`)",
  request: { body: jsonBody(ResponsesRequestSchema) },
  responses: {
    200: {
      description:
        "A `response` object, or with `stream: true` a text/event-stream of response events ending in `data: [DONE]`",
      content: {
        "application/json": { schema: ResponsesResultSchema },
        "text/event-stream": { schema: z.string() },
      },
    },
    ...errorResponses(400, 401, 402, 403, 404, 408, 413, 429, 500, 502, 503, 524, 529),
  },
});

export const responsesRoutes = createRouter().openapi(createResponses, async (c) => {
  const { body, chatDefaults } = await applyResponsesPreset(c.env, c.get("auth"), c.req.valid("json"));
  return runChat(c, responsesToChat(body, chatDefaults), responsesFormat(body));
});
