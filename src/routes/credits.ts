// Credits routes.
import { createRouter } from "../lib/openapi";

export const creditsRoutes = createRouter();
