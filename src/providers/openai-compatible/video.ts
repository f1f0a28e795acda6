// OpenAI-compatible video jobs (POST /videos, GET /videos/{id}, GET /videos/{id}/content).

import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import { optionsOf } from "../options";
import type { CallContext, UpstreamVideoStatus, VideoAdapter, VideoPollResult } from "../types";
import type { OpenAiCompatibleOptions } from "./options";

interface OpenAIVideo {
  id: string;
  status: "queued" | "in_progress" | "completed" | "failed";
  progress?: number;
  seconds?: string;
  error?: { message?: string } | null;
}

const STATUS: Record<OpenAIVideo["status"], UpstreamVideoStatus> = {
  queued: "pending",
  in_progress: "in_progress",
  completed: "completed",
  failed: "failed",
};

function headers(options: OpenAiCompatibleOptions, call: CallContext, json = true): Record<string, string> {
  return {
    ...options.authHeaders(call.credential.apiKey),
    ...(json ? { "Content-Type": "application/json" } : {}),
  };
}

async function readJob(res: Response, call: CallContext): Promise<OpenAIVideo> {
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  const job = (await res.json().catch(() => null)) as OpenAIVideo | null;
  if (!job || typeof job.id !== "string" || !(job.status in STATUS)) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent an unreadable video job`,
    });
  }
  return job;
}

const jobPath = (call: CallContext, id: string) =>
  `${call.endpoint.baseUrl}/videos/${encodeURIComponent(id)}`;

export function openAiVideos(options: OpenAiCompatibleOptions): VideoAdapter {
  return {
    async submit(request, call) {
      const body: Record<string, unknown> = {
        ...optionsOf(request.passthrough),
        model: call.endpoint.upstreamModel,
        prompt: request.prompt ?? "",
      };
      if (request.durationSeconds !== undefined) body.seconds = String(request.durationSeconds);
      if (request.size) body.size = request.size;
      else if (request.resolution) body.resolution = request.resolution;
      if (request.aspectRatio) body.aspect_ratio = request.aspectRatio;
      const first =
        request.frameImages?.find((f) => f.frameType === "first_frame") ??
        request.references?.find((r) => r.type === "image");
      if (first) body.input_reference = { image_url: first.url };
      if (request.seed !== undefined) body.seed = request.seed;
      const res = await call.fetch(`${call.endpoint.baseUrl}/videos`, {
        method: "POST",
        headers: headers(options, call),
        body: JSON.stringify(body),
        signal: call.signal,
      });
      return { upstreamJobId: (await readJob(res, call)).id };
    },

    async poll(upstreamJobId, call): Promise<VideoPollResult> {
      const job = await readJob(
        await call.fetch(jobPath(call, upstreamJobId), {
          headers: headers(options, call, false),
          signal: call.signal,
        }),
        call,
      );
      const status = STATUS[job.status];
      return {
        status,
        progress: job.progress,
        error:
          status === "failed"
            ? (job.error?.message ?? "The provider could not generate the video")
            : undefined,
        durationSeconds: job.seconds ? Number(job.seconds) : undefined,
        contentCount: status === "completed" ? 1 : undefined,
      };
    },

    async content(upstreamJobId, index, call) {
      if (index !== 0)
        throw new UpstreamError({
          kind: "http",
          status: 404,
          message: "No such video content",
          retryable: false,
        });
      const res = await call.fetch(`${jobPath(call, upstreamJobId)}/content`, {
        headers: { ...headers(options, call, false), Accept: "video/mp4" },
        signal: call.signal,
      });
      if (!res.ok || !res.body) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
      return res;
    },
  };
}
