// BYOK routes.
import { createRouter } from "../lib/openapi";

export const byokRoutes = createRouter();
