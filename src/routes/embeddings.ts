// Embeddings routes.
import { createRouter } from "../lib/openapi";

export const embeddingsRoutes = createRouter();
