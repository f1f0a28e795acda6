// Request bodies: JSON only, and no larger than the limit for the route.
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError, badRequest } from "../lib/errors";

const MIB = 1024 * 1024;
/** Management bodies are small; inference bodies may carry base64 media (frames, voice references). */
export const BODY_LIMITS = {
  default: 1 * MIB,
  embeddings: 4 * MIB,
  media: 16 * MIB,
} as const;

function limitFor(path: string): number {
  if (path.endsWith("/embeddings")) return BODY_LIMITS.embeddings;
  if (path.endsWith("/videos") || path.endsWith("/audio/speech")) return BODY_LIMITS.media;
  return BODY_LIMITS.default;
}

const limiters = new Map(
  Object.values(BODY_LIMITS).map((maxSize) => [
    maxSize,
    bodyLimit({
      maxSize,
      onError: () => {
        throw new ApiError(
          413,
          `Request body is larger than the ${maxSize / MIB} MiB this operation accepts`,
        );
      },
    }),
  ]),
);

function hasBody(req: Request): boolean {
  const length = req.headers.get("Content-Length");
  return length == null ? req.body !== null : length !== "0";
}

export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!["POST", "PUT", "PATCH"].includes(c.req.method) || !hasBody(c.req.raw)) return next();
  const type = c.req.header("Content-Type") ?? "";
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw badRequest(
      `Request bodies must be JSON: send 'Content-Type: application/json' (got '${type || "none"}')`,
    );
  }
  return limiters.get(limitFor(c.req.path))!(c, next);
});
