// Guardrails routes.
import { createRouter } from "../lib/openapi";

export const guardrailsRoutes = createRouter();
