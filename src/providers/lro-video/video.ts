// Long-running-operation video (Veo-style): `:predictLongRunning` starts an operation, polled until `done`.

import { UpstreamError, upstreamErrorFromResponse } from "../errors";
import { optionsOf } from "../options";
import type { CallContext, VideoAdapter, VideoPollResult } from "../types";

interface Operation {
  name: string;
  done?: boolean;
  error?: { code?: number; message?: string };
  metadata?: { progressPercent?: number };
  response?: { generateVideoResponse?: { generatedSamples?: Array<{ video?: { uri?: string } }> } };
}

const auth = (call: CallContext) => ({ "x-goog-api-key": call.credential.apiKey });

async function readOperation(res: Response, call: CallContext): Promise<Operation> {
  if (!res.ok) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
  const op = (await res.json().catch(() => null)) as Operation | null;
  if (!op || typeof op.name !== "string" || !/^[\w./-]+$/.test(op.name)) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: `Provider ${call.endpoint.provider} sent an unreadable operation`,
    });
  }
  return op;
}

async function getOperation(name: string, call: CallContext): Promise<Operation> {
  return readOperation(
    await call.fetch(`${call.endpoint.baseUrl}/${name}`, { headers: auth(call), signal: call.signal }),
    call,
  );
}

const samples = (op: Operation) => op.response?.generateVideoResponse?.generatedSamples ?? [];

export const lroVideos: VideoAdapter = {
  async submit(request, call) {
    const image =
      request.frameImages?.find((f) => f.frameType === "first_frame") ??
      request.references?.find((r) => r.type === "image");
    const last = request.frameImages?.find((f) => f.frameType === "last_frame");
    const parameters: Record<string, unknown> = { ...optionsOf(request.passthrough) };
    if (request.aspectRatio) parameters.aspectRatio = request.aspectRatio;
    if (request.resolution) parameters.resolution = request.resolution;
    if (request.durationSeconds !== undefined) parameters.durationSeconds = request.durationSeconds;
    if (request.generateAudio !== undefined) parameters.generateAudio = request.generateAudio;
    if (request.seed !== undefined) parameters.seed = request.seed;
    if (last) parameters.lastFrame = { uri: last.url };
    const instance: Record<string, unknown> = {};
    if (request.prompt) instance.prompt = request.prompt;
    if (image) instance.image = { uri: image.url };
    const res = await call.fetch(
      `${call.endpoint.baseUrl}/models/${encodeURIComponent(call.endpoint.upstreamModel)}:predictLongRunning`,
      {
        method: "POST",
        headers: { ...auth(call), "Content-Type": "application/json" },
        body: JSON.stringify({ instances: [instance], parameters }),
        signal: call.signal,
      },
    );
    return { upstreamJobId: (await readOperation(res, call)).name };
  },

  async poll(upstreamJobId, call): Promise<VideoPollResult> {
    const op = await getOperation(upstreamJobId, call);
    if (!op.done) return { status: "in_progress", progress: op.metadata?.progressPercent };
    if (op.error)
      return { status: "failed", error: op.error.message ?? "The provider could not generate the video" };
    const count = samples(op).filter((s) => s.video?.uri).length;
    if (count === 0) return { status: "failed", error: "The provider finished without a video" };
    return { status: "completed", contentCount: count };
  },

  /** The operation names the file; it is fetched with the same key and streamed through. */
  async content(upstreamJobId, index, call) {
    const uri = samples(await getOperation(upstreamJobId, call))[index]?.video?.uri;
    if (!uri)
      throw new UpstreamError({
        kind: "http",
        status: 404,
        message: "No such video content",
        retryable: false,
      });
    // The key goes only to the provider's own host, whatever URI the operation names.
    if (new URL(uri, call.endpoint.baseUrl).origin !== new URL(call.endpoint.baseUrl).origin) {
      throw new UpstreamError({
        kind: "invalid_response",
        message: `Provider ${call.endpoint.provider} named content on another host`,
      });
    }
    const res = await call.fetch(new URL(uri, call.endpoint.baseUrl).href, {
      headers: auth(call),
      signal: call.signal,
    });
    if (!res.ok || !res.body) throw await upstreamErrorFromResponse(res, call.endpoint.provider);
    return res;
  },
};
