// Request bodies: JSON only, no larger than the limit for the route, and parsed once, with a bound on how
// many values they hold.

import type { Context, Next } from "hono";
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

/**
 * JSON values (containers and the items in them) a body may hold: zod makes an issue object of each
 * invalid one (~400 bytes and ~1 µs), so 4 million invalid items in 8 MB took 5 s and 1.7 GB, and
 * 130,000 overflowed its stack (a 500). 100,000 is far above any real request; embeddings may send token
 * arrays (OpenAI takes 300,000 tokens a request), and their schema keeps its issues few instead.
 */
export const MAX_BODY_VALUES = { embeddings: 400_000, default: 100_000 } as const;

/**
 * Containers (`[`, `{`) and values (about one a comma, plus the containers) in a JSON text, outside its
 * strings; counting stops once `maxValues` is passed. One pass, with strings skipped by indexOf.
 */
export function jsonShape(text: string, maxValues: number): { containers: number; values: number } {
  let containers = 0;
  let values = 1;
  for (let i = 0; i < text.length && values <= maxValues; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // The string's closing quote: the next one not escaped by an odd run of backslashes.
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return { containers, values };
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 92) slashes++;
        if (slashes % 2 === 0) break;
      }
      i = end;
    } else if (c === 91 || c === 123) {
      containers++;
      values++;
    } else if (c === 44) values++;
  }
  return { containers, values };
}

/**
 * Reads and parses the body once, after its size was checked, refusing one with more JSON values than
 * the route takes before parsing it (a 16 MB nest of 8 million arrays took JSON.parse 1-2.6 s) and
 * before validation can multiply it. The parsed body goes into Hono's cache, where the route's
 * validator reads it; malformed JSON is left to the validator's own 400.
 */
async function parsedBody(c: Context<AppEnv>, next: Next): Promise<void> {
  const text = await c.req.text();
  if (text.trim() === "") {
    withoutBody(c);
    return next();
  }
  const max = c.req.path.endsWith("/embeddings") ? MAX_BODY_VALUES.embeddings : MAX_BODY_VALUES.default;
  if (jsonShape(text, max).values > max) {
    throw new ApiError(
      413,
      `Request body holds more than ${max.toLocaleString("en-US")} JSON values (objects, arrays and their items); send fewer`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return next();
  }
  c.req.bodyCache.json = Promise.resolve(parsed);
  c.set("bodyJudged", false);
  return next();
}

/**
 * The 400 for an error thrown between the body's parse and its validator's verdict: a stack overflow
 * there (zod gathers nested issues with push(...issues)) is the body's fault, not the gateway's. Null for
 * any other error, or one after the verdict (a bug: a 500). Hono hands errors straight to onError, so
 * the app's error handler asks this.
 */
export function bodyValidationFailure(err: unknown, c: Context<AppEnv>): ApiError | null {
  if (!(err instanceof RangeError) || c.get("bodyJudged") !== false) return null;
  return badRequest("Request body has too many invalid values to validate; correct it and send it again");
}

/**
 * An empty body under a JSON Content-Type (HTTP clients that always send the header) is no body: an
 * operation whose body is optional (cancelling a video) is answered, one that needs a body says what is
 * missing, where the validator would have answered "malformed JSON".
 */
function withoutBody(c: Context<AppEnv>): void {
  const headers = new Headers(c.req.raw.headers);
  headers.delete("Content-Type");
  headers.delete("Content-Length");
  c.req.raw = new Request(c.req.url, { method: c.req.method, headers, signal: c.req.raw.signal });
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;
const DECODERS: Record<string, "gzip" | "deflate"> = { gzip: "gzip", "x-gzip": "gzip", deflate: "deflate" };

/**
 * The request with its body decoded (gzip or deflate, as `Content-Encoding` says), refused once the
 * decoded bytes pass the route's limit (a small bomb could otherwise inflate past the isolate's memory).
 */
async function decoded(req: Request, encoding: string, maxSize: number): Promise<Request> {
  const format = DECODERS[encoding];
  if (!format) {
    throw badRequest(
      `Content-Encoding '${encoding}' is not supported: send the body as it is, or compressed with gzip or deflate`,
    );
  }
  // The bytes sent count against the limit too: decoding 200 MB of empty blocks is work whatever they make.
  let sent = 0;
  const tooLarge = () =>
    new ApiError(413, `Request body is larger than the ${maxSize / MIB} MiB this operation accepts`);
  const counted = req.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        sent += chunk.byteLength;
        if (sent > maxSize) controller.error(tooLarge());
        else controller.enqueue(chunk);
      },
    }),
  );
  const reader = counted.pipeThrough(new DecompressionStream(format)).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxSize) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (sent > maxSize) throw tooLarge();
    throw badRequest(`Request body is not valid ${encoding} data (its Content-Encoding)`);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  const headers = new Headers(req.headers);
  headers.delete("Content-Encoding");
  headers.set("Content-Length", String(size));
  return new Request(req.url, { method: req.method, headers, body, signal: req.signal });
}

export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!["POST", "PUT", "PATCH"].includes(c.req.method)) return next();
  if (!hasBody(c.req.raw)) {
    if (c.req.header("Content-Type")) withoutBody(c);
    return next();
  }
  const type = c.req.header("Content-Type") ?? "";
  if (!JSON_MEDIA_TYPE.test(type.split(";", 1)[0]!.trim())) {
    throw badRequest(
      `Request bodies must be JSON: send 'Content-Type: application/json' (got '${type || "none"}')`,
    );
  }
  const charset = CHARSET.exec(type)?.[1];
  if (charset && !/^(utf-?8|us-ascii)$/i.test(charset)) {
    throw badRequest(`Request bodies are JSON in UTF-8 (RFC 8259): charset '${charset}' is not accepted`);
  }
  const encoding = (c.req.header("Content-Encoding") ?? "").trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    c.req.raw = await decoded(c.req.raw, encoding, limitFor(c.req.path));
  }
  if (!VALIDATOR_JSON.test(type)) {
    const headers = new Headers(c.req.raw.headers);
    headers.set("Content-Type", "application/json");
    c.req.raw = new Request(c.req.raw, { headers, signal: c.req.raw.signal });
  }
  return limiters.get(limitFor(c.req.path))!(c, () => parsedBody(c, next));
});
