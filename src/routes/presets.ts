// Presets routes.
import { createRouter } from "../lib/openapi";

export const presetsRoutes = createRouter();
