// Request pieces shared by the speech and video bodies: trace metadata, provider passthrough, user ids.
import { z } from "@hono/zod-openapi";
import { ownedOptionPaths } from "../providers/options";
import { boundedJson, PASSTHROUGH_MAX_DEPTH } from "./common";

const TRACE_KEYS = ["trace_id", "trace_name", "span_name", "generation_name", "parent_span_id"] as const;

/**
 * Observability metadata: the known keys are strings; other keys pass through to logging. Bounded
 * like `metadata` elsewhere in the API (keys of at most 64 characters, at most 16 extra keys), and
 * in depth and size (room for every key at its longest string), so a trace can never grow a record
 * without limit.
 */
export const TraceSchema = boundedJson(z.record(z.string(), z.unknown()), {
  maxDepth: PASSTHROUGH_MAX_DEPTH,
  maxChars: 32 * 1024,
})
  .superRefine((trace, ctx) => {
    // Keys are judged here, once their count is known to be small: an issue per long key of a
    // record of many thousands would cost more than the rest of the request.
    const keys = Object.keys(trace);
    if (keys.length > TRACE_KEYS.length + 16) {
      ctx.addIssue({ code: "custom", message: "at most 16 custom trace keys" });
      return;
    }
    for (const key of keys) {
      if (key.length > 64)
        ctx.addIssue({ code: "custom", path: [key], message: "trace keys are at most 64 characters" });
    }
    for (const key of TRACE_KEYS) {
      const value = trace[key];
      if (value !== undefined && (typeof value !== "string" || value.length > 512)) {
        ctx.addIssue({ code: "custom", path: [key], message: "must be a string of at most 512 characters" });
      }
    }
    const extra = Object.keys(trace).filter((k) => !(TRACE_KEYS as readonly string[]).includes(k));
    if (extra.length > 16) ctx.addIssue({ code: "custom", message: "at most 16 custom trace keys" });
    for (const key of extra) {
      const value = trace[key];
      if (typeof value === "string" && value.length > 512) {
        ctx.addIssue({ code: "custom", path: [key], message: "values are at most 512 characters" });
      }
    }
  })
  .openapi({
    description:
      "Observability metadata; trace_id, trace_name, span_name, generation_name, parent_span_id are special",
  });

/**
 * Passthrough configuration: `options` keyed by provider slug; only the chosen provider's entry is
 * sent. All entries are kept with the job until it ends, so they are bounded together.
 */
export const ProviderPassthroughSchema = z.object({
  options: boundedJson(z.record(z.string(), z.record(z.string(), z.unknown())), {
    maxDepth: PASSTHROUGH_MAX_DEPTH,
    maxChars: 128 * 1024,
  })
    .superRefine((bySlug, ctx) => {
      for (const [slug, options] of Object.entries(bySlug)) {
        for (const path of ownedOptionPaths(options)) {
          ctx.addIssue({
            code: "custom",
            path: [slug, ...path.split(".")],
            message:
              "is set by the gateway, not by provider options (it changes what is filtered, reserved or billed); use the request's own field",
          });
        }
      }
    })
    .optional(),
});

export const EndUserSchema = z
  .string()
  .max(256)
  .openapi({ description: "End-user identifier; logged, never sent to the provider" });
export const SESSION_ID_MAX_LENGTH = 256;
export const SessionIdSchema = z.string().max(SESSION_ID_MAX_LENGTH);

/** Base64 text (standard alphabet, padded or not). */
export const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Base64 audio, bare or as a data:audio/...;base64, URL. */
const AUDIO_DATA = /^(data:audio\/[\w.+-]+;base64,)?[A-Za-z0-9+/]+={0,2}$/;
/** Audio sent inline (a chat or responses audio part, a speech voice reference), of at most `max` characters. */
export const audioData = (max?: { chars: number; message: string }) =>
  (max ? z.string().max(max.chars, max.message) : z.string()).regex(
    AUDIO_DATA,
    "must be base64 audio, optionally as a data:audio/...;base64, URL",
  );

/** An https URL (http too where `http` says so: chat's image parts) or a base64 data URL of the given media kind. */
export function mediaUrl(kind: "image" | "audio" | "video", { http = false } = {}) {
  // RFC 2397: the scheme and `base64` in any case, parameters (`;name=a.png`) before `;base64`.
  const data = new RegExp(`^data:${kind}/[\\w.+-]+(;[\\w.+-]+=[^;,]*)*;base64,[A-Za-z0-9+/]+={0,2}$`, "i");
  return z.string().refine(
    (u) => {
      if (/^data:/i.test(u)) return data.test(u);
      try {
        const { protocol } = new URL(u);
        return protocol === "https:" || (http && protocol === "http:");
      } catch {
        return false;
      }
    },
    { message: `must be an ${http ? "http(s)" : "https"} URL or a base64 data:${kind}/... URL` },
  );
}

/** A URL a provider fetches: http or https. */
export const FetchableUrlSchema = z.url({
  protocol: /^https?$/,
  error: (issue) => (issue.input === undefined ? "url is required" : "must be an http(s) URL"),
});
