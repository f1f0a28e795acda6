// Request bodies: JSON only, and no larger than the limit for the route.
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError, badRequest } from "../lib/errors";

const MIB = 1024 * 1024;
/**
 * Management bodies are small; inference bodies may carry base64 media (frames, voice references,
 * images and files in a conversation) and chat long contexts (a million-token prompt is about 4 MB).
 * 16 MiB stays well inside an isolate's 128 MB with the parsed body and the upstream's copy beside it.
 */
export const BODY_LIMITS = {
  default: 1 * MIB,
  embeddings: 4 * MIB,
  media: 16 * MIB,
  chat: 16 * MIB,
} as const;

/** Chat, responses and messages (and their presets and token counting) end with one of these. */
const CHAT_PATHS = ["/chat/completions", "/responses", "/messages", "/messages/count_tokens"];

function limitFor(path: string): number {
  if (path.endsWith("/embeddings")) return BODY_LIMITS.embeddings;
  if (path.endsWith("/videos") || path.endsWith("/audio/speech")) return BODY_LIMITS.media;
  if (CHAT_PATHS.some((p) => path.endsWith(p))) return BODY_LIMITS.chat;
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

/** A JSON media type (the part of a Content-Type before its parameters): `application/json`, `application/*+json`. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
/**
 * The Content-Type values the routes' validators (@hono/zod-openapi) read as JSON: parameters only as
 * `; name=value`. Other spellings of a JSON type (`application/json;`, `application/json ; charset=utf-8`,
 * a quoted parameter holding `;`) would meet their 415, so such a request is passed on as plain JSON.
 */
const VALIDATOR_JSON = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!["POST", "PUT", "PATCH"].includes(c.req.method) || !hasBody(c.req.raw)) return next();
  const type = c.req.header("Content-Type") ?? "";
  if (!JSON_MEDIA_TYPE.test(type.split(";", 1)[0]!.trim())) {
    throw badRequest(
      `Request bodies must be JSON: send 'Content-Type: application/json' (got '${type || "none"}')`,
    );
  }
  if (!VALIDATOR_JSON.test(type)) {
    const headers = new Headers(c.req.raw.headers);
    headers.set("Content-Type", "application/json");
    c.req.raw = new Request(c.req.raw, { headers, signal: c.req.raw.signal });
  }
  return limiters.get(limitFor(c.req.path))!(c, next);
});
