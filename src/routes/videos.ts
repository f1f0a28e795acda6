// Video generation routes.
import { createRouter } from "../lib/openapi";

export const videosRoutes = createRouter();
