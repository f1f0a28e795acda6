// POST /responses: the Responses API, stateless, on the chat core. The body is the one responses request
// schema (shared with POST /presets/{slug}/responses), translated to the chat normal form and answered as
// a `response` object or its event stream (inference/formats/responses.ts).
import { z } from "@hono/zod-openapi";
import { runChat } from "../inference/chat";
import { responsesFormat } from "../inference/formats/responses";
import { responsesToChat } from "../inference/formats/responses-request";
import { applyResponsesPreset } from "../inference/preset";
import { apiRoute, createRouter, jsonBody } from "../lib/openapi";
import { ResponsesRequestSchema } from "../schemas/responses-request";
import { ResponsesResultSchema } from "../schemas/responses-result";

const createResponses = apiRoute(
  {
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
    },
  },
  { inference: true },
);

export const responsesRoutes = createRouter().openapi(createResponses, async (c) => {
  const { body, chatDefaults, presetId } = await applyResponsesPreset(
    c.env,
    c.get("auth"),
    c.req.valid("json"),
  );
  return runChat(c, { body: responsesToChat(body, chatDefaults), presetId }, responsesFormat(body));
});
