// Text-to-speech routes.
import { createRouter } from "../lib/openapi";

export const speechRoutes = createRouter();
