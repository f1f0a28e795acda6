// POST /videos body, the video job wire object, and the workspace webhook settings.
import { z } from "@hono/zod-openapi";
import { checkWebhookUrl } from "../webhooks/ssrf";
import {
  EndUserSchema,
  mediaUrl,
  ProviderPassthroughSchema,
  SessionIdSchema,
  TraceSchema,
} from "./media-common";

export const ASPECT_RATIOS = ["16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9", "9:21"] as const;
export const RESOLUTIONS = ["480p", "720p", "768p", "1080p", "1K", "2K", "4K"] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];
export type Resolution = (typeof RESOLUTIONS)[number];

export const VIDEO_STATUSES = [
  "pending",
  "in_progress",
  "completed",
  "failed",
  "cancelled",
  "expired",
] as const;
export type VideoStatus = (typeof VIDEO_STATUSES)[number];
export const TERMINAL_STATUSES: ReadonlySet<VideoStatus> = new Set([
  "completed",
  "failed",
  "cancelled",
  "expired",
]);

/** A completion webhook target: https, default port, no credentials, no internal hosts or addresses. */
export const WebhookUrlSchema = z.string().superRefine((url, ctx) => {
  const verdict = checkWebhookUrl(url);
  if (!verdict.ok) ctx.addIssue({ code: "custom", message: `not an allowed webhook URL: ${verdict.reason}` });
});

const FrameImageSchema = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: mediaUrl("image") }),
  frame_type: z.enum(["first_frame", "last_frame"]),
});

const InputReferenceSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("image_url"), image_url: z.object({ url: mediaUrl("image") }) }),
  z.object({ type: z.literal("audio_url"), audio_url: z.object({ url: mediaUrl("audio") }) }),
  z.object({ type: z.literal("video_url"), video_url: z.object({ url: mediaUrl("video") }) }),
]);

const SIZE = /^([1-9]\d{1,4})x([1-9]\d{1,4})$/;

export const VideoRequestSchema = z
  .object({
    model: z.string().min(1),
    prompt: z.string().min(1, "prompt must not be empty").max(20_000).optional(),
    aspect_ratio: z.enum(ASPECT_RATIOS).optional(),
    resolution: z.enum(RESOLUTIONS).optional(),
    duration: z.int().min(1, "duration is at least 1 second").max(600).optional(),
    callback_url: WebhookUrlSchema.optional(),
    frame_images: z
      .array(FrameImageSchema)
      .min(1)
      .max(2)
      .refine(
        (f) => new Set(f.map((x) => x.frame_type)).size === f.length,
        "at most one first_frame and one last_frame",
      )
      .optional(),
    input_references: z.array(InputReferenceSchema).min(1).max(8).optional(),
    generate_audio: z.boolean().optional(),
    seed: z.int().min(0).max(4_294_967_295).optional(),
    size: z.string().regex(SIZE, "must be WIDTHxHEIGHT in pixels, e.g. 1280x720").optional(),
    provider: ProviderPassthroughSchema.optional(),
    trace: TraceSchema.optional(),
    session_id: SessionIdSchema.optional(),
    user: EndUserSchema.optional(),
    creativity: z.number().min(0).max(1).optional(),
    upscale_factor: z.number().gt(0, "upscale_factor must be greater than 0").max(16).optional(),
    previous_job_id: z.unknown().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.previous_job_id !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["previous_job_id"],
        message: "continuing a previous job is not supported",
      });
    }
    // Refinements run even when a field already failed: only compare a well-formed size.
    if (body.size && SIZE.test(body.size)) {
      const aspect = (ASPECT_RATIOS as readonly unknown[]).includes(body.aspect_ratio)
        ? body.aspect_ratio
        : undefined;
      const resolution = (RESOLUTIONS as readonly unknown[]).includes(body.resolution)
        ? body.resolution
        : undefined;
      const conflict = sizeConflict(body.size, resolution, aspect);
      if (conflict) ctx.addIssue({ code: "custom", path: ["size"], message: conflict });
    }
  })
  .openapi("VideoGenerationRequest");

export type VideoRequest = z.infer<typeof VideoRequestSchema>;

/** Pixel sizes of the `p` resolutions are the short side; the `K` ones the long side. */
const SHORT_SIDE: Partial<Record<Resolution, number>> = {
  "480p": 480,
  "720p": 720,
  "768p": 768,
  "1080p": 1080,
};
const LONG_SIDE: Partial<Record<Resolution, number[]>> = {
  "1K": [1024],
  "2K": [2048, 2560],
  "4K": [3840, 4096],
};

export function parseSize(size: string): { width: number; height: number } {
  const [, w, h] = SIZE.exec(size)!;
  return { width: Number(w), height: Number(h) };
}

/**
 * The resolution a video is priced at: the one asked for, else the one its pixel size is (1920x1080 is
 * 1080p), else "dearest" for a size that is none of them (priced at the dearest listed, never under),
 * else null (the endpoint's default). A probe had `size: "1920x1080"` billed at the default's half price.
 */
export function pricedResolution(body: {
  resolution?: Resolution;
  size?: string;
}): Resolution | "dearest" | null {
  if (body.resolution) return body.resolution;
  if (!body.size || !SIZE.test(body.size)) return null;
  return RESOLUTIONS.find((r) => sizeConflict(body.size!, r) === null) ?? "dearest";
}

/** Why `size` contradicts `resolution`/`aspect_ratio`, or null when they agree (or are absent). */
export function sizeConflict(size: string, resolution?: Resolution, aspect?: AspectRatio): string | null {
  const { width, height } = parseSize(size);
  if (aspect) {
    const [aw, ah] = aspect.split(":").map(Number) as [number, number];
    if (Math.abs(width / height - aw / ah) > 0.02) return `size ${size} does not have aspect ratio ${aspect}`;
  }
  if (resolution) {
    const short = SHORT_SIDE[resolution];
    const long = LONG_SIDE[resolution];
    if (short && Math.min(width, height) !== short) return `size ${size} is not ${resolution}`;
    if (long && !long.includes(Math.max(width, height))) return `size ${size} is not ${resolution}`;
  }
  return null;
}

export const VideoJobSchema = z
  .object({
    id: z.string(),
    polling_url: z.string(),
    status: z.enum(VIDEO_STATUSES),
    generation_id: z.string().optional(),
    usage: z.object({ cost: z.number(), is_byok: z.boolean() }).optional(),
    error: z.string().optional(),
  })
  .openapi("VideoJob");
export type VideoJobWire = z.infer<typeof VideoJobSchema>;

export const VideoJobListQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(50)
    .openapi({ param: { name: "limit", in: "query" } }),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(0)
    .openapi({ param: { name: "offset", in: "query" } }),
  status: z
    .enum(VIDEO_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
});

export const VideoJobListSchema = z
  .object({
    data: z.array(
      VideoJobSchema.extend({
        model: z.string(),
        provider_name: z.string().nullable(),
        created_at: z.string(),
        updated_at: z.string(),
      }),
    ),
    next_offset: z.int().nullable(),
  })
  .openapi("VideoJobList");

export const VideoIdParamSchema = z.object({
  id: z
    .string()
    .regex(/^gen-vid-\d+-[A-Za-z0-9]{20}$/, "not a video job id")
    .openapi({ param: { name: "id", in: "path" }, example: "gen-vid-1763822400-aB3dE5fG7hJ9kL1mN3pQ" }),
});

/** POST /videos/{id}/cancel takes no parameters: no body, or an empty JSON object. */
export const CancelBodySchema = z.strictObject({}).openapi("VideoCancelRequest");

export const ContentQuerySchema = z.object({
  index: z.coerce.number().int().min(0).max(0, "this job has a single video, index 0").optional(),
});

export const IdempotencyHeaderSchema = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .optional()
    .openapi({ description: "Retries with the same key and body within 24 h return the same job" }),
});

export const WebhookSettingsSchema = z
  .object({
    url: z.string().nullable(),
    secret_configured: z.boolean(),
  })
  .openapi("VideoWebhookSettings");

export const UpdateWebhookSettingsSchema = z.object({ url: WebhookUrlSchema.nullable() });

export const RotatedSecretSchema = z.object({
  secret: z.string().openapi({ description: "The new whsec_ signing secret, shown only in this response" }),
  previous_valid_until: z.string().nullable(),
});
