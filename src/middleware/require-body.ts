// Rejects a request that should carry a JSON body but has none (the JSON validator would read it as `{}`).
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { badRequest } from "../lib/errors";

export const requireJsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.req.header("Content-Type")) {
    throw badRequest(
      "A JSON request body is required: send 'Content-Type: application/json' and a JSON object",
    );
  }
  await next();
});
