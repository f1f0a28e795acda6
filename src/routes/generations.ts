// GET /generation?id=: a generation's record (model, provider, tokens, cost, attempts) for the account that made it.
import { z } from "@hono/zod-openapi";
import { getCatalog } from "../catalog/cache";
import { findModel } from "../catalog/types";
import { findGeneration, generationToWire } from "../db/generations";
import { notFound } from "../lib/errors";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { GenerationQuerySchema, GenerationSchema } from "../schemas/generations";

const getGeneration = apiRoute({
  method: "get",
  path: "/generation",
  operationId: "getGeneration",
  tags: ["Generations"],
  security: [{ bearer: [] }],
  summary: "Get a generation's record: model, provider, tokens, cost and every provider attempt",
  description:
    "Any key of the account that made the generation may read it. The record is written just after the answer ends, so a generation that finished a moment ago can answer 404 briefly.",
  request: { query: GenerationQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: GenerationSchema }), "The generation"),
  },
});

export const generationsRoutes = createRouter().openapi(getGeneration, async (c) => {
  const { id } = c.req.valid("query");
  // Account-scoped, not key- or workspace-scoped: OpenRouter lets any key of the account (regular or
  // management) read the account's generations. Another account's id answers as an unknown one.
  // Records are written off the response path (waitUntil), so a just-finished generation may not be
  // there yet: that is a 404 too, and a client retries.
  const [row, catalog] = await Promise.all([
    findGeneration(c.env.DB, c.get("auth").account.id, id),
    getCatalog(c.env.DB),
  ]);
  if (!row) throw notFound(`Generation '${id}' not found`);
  const permaslug = (slug: string) => findModel(catalog, slug)?.canonicalSlug ?? slug;
  return c.json({ data: generationToWire(row, permaslug) }, 200);
});
