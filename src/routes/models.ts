// Model discovery from the catalog: GET /models, GET /embeddings/models, GET /videos/models.
import { getCatalog } from "../catalog/cache";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import {
  ModelsListSchema,
  ModelsPageQuerySchema,
  ModelsQuerySchema,
  VideoModelsListSchema,
} from "../schemas/models";
import { modelsListBody, toVideoModel } from "./model-shapes";
import { selectModels } from "./models-query";

const common = { method: "get" as const, tags: ["Models"], security: [{ bearer: [] }] };

const listModels = apiRoute({
  ...common,
  path: "/models",
  operationId: "getModels",
  summary:
    "List the catalog's models (chat, embeddings, speech, video), filtered, sorted and paged by the query",
  request: { query: ModelsQuerySchema },
  responses: { 200: jsonContent(ModelsListSchema, "Models") },
});
const listEmbeddingsModels = apiRoute({
  ...common,
  path: "/embeddings/models",
  operationId: "listEmbeddingsModels",
  summary: "List embeddings models, paged by offset and limit",
  request: { query: ModelsPageQuerySchema },
  responses: { 200: jsonContent(ModelsListSchema, "Embeddings models") },
});
const listVideoModels = apiRoute({
  ...common,
  path: "/videos/models",
  operationId: "listVideosModels",
  summary: "List video generation models",
  responses: { 200: jsonContent(VideoModelsListSchema, "Video models") },
});

export const modelsRoutes = createRouter()
  .openapi(listModels, async (c) => {
    const q = c.req.valid("query");
    const { models, total, next } = selectModels(
      (await getCatalog(c.env.DB)).models,
      q,
      new URL(c.req.url).searchParams,
    );
    return c.json(
      { ...modelsListBody(models), total_count: total, links: { next: next && `/api/v1/models?${next}` } },
      200,
    );
  })
  .openapi(listEmbeddingsModels, async (c) => {
    const { offset, limit } = c.req.valid("query");
    const embeddings = (await getCatalog(c.env.DB)).models.filter((m) => m.modality === "embeddings");
    return c.json(modelsListBody(embeddings.slice(offset, offset + limit)), 200);
  })
  .openapi(listVideoModels, async (c) =>
    c.json(
      { data: (await getCatalog(c.env.DB)).models.filter((m) => m.modality === "video").map(toVideoModel) },
      200,
    ),
  );
