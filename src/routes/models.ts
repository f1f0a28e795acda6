// Models routes.
import { createRouter } from "../lib/openapi";

export const modelsRoutes = createRouter();
