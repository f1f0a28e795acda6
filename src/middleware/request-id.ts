// Gives every request an id (the caller's X-Request-Id when well-formed) and echoes it on the response.
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";

const WELL_FORMED = /^[A-Za-z0-9._:-]{8,128}$/;

export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const given = c.req.header("X-Request-Id");
  const id = given && WELL_FORMED.test(given) ? given : crypto.randomUUID();
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
});
