// The sandbox's video jobs: stateless job ids that carry their own parameters, and a real MP4 at the end.
import { UpstreamError } from "../errors";
import type { CallContext, VideoAdapter, VideoPollResult, VideoSubmitRequest } from "../types";
import { sandboxFailureMode } from "./failures";
import { sandboxMp4 } from "./mp4";

/** What the sandbox needs to answer polls, encoded in the job id so it survives any restart. */
interface SandboxJob {
  /** Seconds of video. */
  d: number;
  /** Polls answered `in_progress` before the job completes. */
  n: number;
  /** Failure message, when the job is meant to fail. */
  f?: string;
  /** Submitted at (ms), to decide completion when the poll counter was lost with the isolate. */
  t: number;
}

/** Polls seen per job in this isolate; lost on restart, when elapsed time decides instead. */
const polls = new Map<string, number>();
const MS_PER_POLL_AFTER_RESTART = 5_000;

const encode = (job: SandboxJob) => `sbx_${btoa(JSON.stringify(job)).replaceAll("=", "")}`;

function decode(id: string): SandboxJob {
  try {
    if (!id.startsWith("sbx_")) throw new Error("not a sandbox id");
    return JSON.parse(atob(id.slice(4))) as SandboxJob;
  } catch {
    throw new UpstreamError({
      kind: "http",
      status: 404,
      message: "Sandbox video job not found",
      retryable: false,
    });
  }
}

const intOption = (v: unknown, fallback: number) =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : fallback;

/**
 * Passthrough options (provider.options.<sandbox provider>): `polls_before_done` (default 1) and
 * `fail_with` (a message: the job fails instead of completing).
 */
export const sandboxVideos: VideoAdapter = {
  async submit(request: VideoSubmitRequest, call: CallContext) {
    await sandboxFailureMode(call);
    const opts = request.passthrough ?? {};
    const job: SandboxJob = {
      d: request.durationSeconds ?? 4,
      n: Math.min(intOption(opts.polls_before_done, 1), 50),
      t: Date.now(),
    };
    if (typeof opts.fail_with === "string") job.f = opts.fail_with.slice(0, 200);
    return { upstreamJobId: encode(job) };
  },

  async poll(upstreamJobId: string, _call: CallContext): Promise<VideoPollResult> {
    const job = decode(upstreamJobId);
    const seen = polls.get(upstreamJobId);
    const count = seen ?? Math.floor((Date.now() - job.t) / MS_PER_POLL_AFTER_RESTART);
    polls.set(upstreamJobId, count + 1);
    if (count < job.n) return { status: "in_progress", progress: Math.round((100 * count) / (job.n + 1)) };
    polls.delete(upstreamJobId);
    if (job.f) return { status: "failed", error: job.f };
    return { status: "completed", durationSeconds: job.d, contentCount: 1 };
  },

  async content(upstreamJobId: string, index: number, _call: CallContext) {
    const job = decode(upstreamJobId);
    if (job.f || index !== 0) {
      throw new UpstreamError({
        kind: "http",
        status: 404,
        message: "Sandbox video has no such content",
        retryable: false,
      });
    }
    const bytes = sandboxMp4(job.d);
    return new Response(bytes, {
      headers: { "Content-Type": "video/mp4", "Content-Length": String(bytes.byteLength) },
    });
  },
};
