// What a video or speech body asks of an endpoint (pure): routing requirements and model-level rules.
import type { CatalogEndpointEntry, CatalogModelEntry } from "../catalog/types";
import { badRequest } from "../lib/errors";
import { supports } from "../providers/registry";
import type { Requirement } from "../routing/filters";
import type { VideoRequest } from "../schemas/videos";

const hard = (param: string, fits: (e: CatalogEndpointEntry) => boolean): Requirement => ({
  param,
  hard: true,
  fits,
});

/** A listed capability must include the value; an endpoint that lists nothing accepts anything. */
const listedOrAbsent = <T>(list: T[] | undefined, value: T) => list == null || list.includes(value);

export function videoRequirements(body: VideoRequest): Requirement[] {
  const out: Requirement[] = [hard("videos", (e) => supports(e.adapter, "videos"))];
  const { duration, resolution, aspect_ratio: aspect } = body;
  if (duration !== undefined)
    out.push(hard(`duration ${duration}`, (e) => listedOrAbsent(e.capabilities.durations, duration)));
  if (resolution)
    out.push(hard(`resolution ${resolution}`, (e) => listedOrAbsent(e.capabilities.resolutions, resolution)));
  if (aspect)
    out.push(hard(`aspect_ratio ${aspect}`, (e) => listedOrAbsent(e.capabilities.aspect_ratios, aspect)));
  for (const f of body.frame_images ?? []) {
    out.push(
      hard(`frame_images ${f.frame_type}`, (e) => (e.capabilities.frame_images ?? []).includes(f.frame_type)),
    );
  }
  const kinds = new Set(
    (body.input_references ?? []).map((r) => r.type.replace("_url", "") as "image" | "audio" | "video"),
  );
  for (const kind of kinds) {
    // Image references work everywhere; audio and video ones only where the endpoint says so.
    if (kind !== "image")
      out.push(hard(`input_references ${kind}`, (e) => (e.capabilities.references ?? []).includes(kind)));
  }
  if (body.generate_audio === true)
    out.push(hard("generate_audio", (e) => e.capabilities.audio_generation === true));
  return out;
}

/** Rules that depend on the model rather than on one endpoint; throws 400 when the body breaks one. */
export function checkVideoModelRules(model: CatalogModelEntry, body: VideoRequest): void {
  const upscaler =
    model.endpoints.length > 0 && model.endpoints.every((e) => e.capabilities.upscale === true);
  if (!upscaler) {
    for (const field of ["creativity", "upscale_factor"] as const) {
      if (body[field] !== undefined) {
        throw badRequest(
          `${field} is only accepted by video upscaling models; '${model.slug}' generates video`,
        );
      }
    }
  }
  if (upscaler) {
    if (!(body.input_references ?? []).some((r) => r.type === "video_url")) {
      throw badRequest(`'${model.slug}' upscales a video: give it as an input_references video_url`);
    }
    return;
  }
  const hasImage =
    (body.frame_images?.length ?? 0) > 0 || (body.input_references ?? []).some((r) => r.type === "image_url");
  if (!body.prompt) {
    if (!model.inputModalities.includes("image")) throw badRequest(`prompt is required by '${model.slug}'`);
    if (!hasImage) throw badRequest("prompt is required unless the request gives an image to animate");
  }
}

/** Seconds to reserve for when the body names no duration: the longest the endpoint may make. */
export const DEFAULT_MAX_SECONDS = 10;

export function billedSeconds(body: VideoRequest, endpoints: CatalogEndpointEntry[]): number {
  if (body.duration !== undefined) return body.duration;
  const listed = endpoints.flatMap((e) => e.capabilities.durations ?? []);
  return listed.length ? Math.max(...listed) : DEFAULT_MAX_SECONDS;
}
