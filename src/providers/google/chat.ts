// Gemini chat over `:streamGenerateContent?alt=sse`: the request, Google's error bodies, the chunk stream.
import { amended, UpstreamError, upstreamErrorFromResponse } from "../errors";
import { chatStream, midStreamFailure, postForStream, readSse } from "../sse";
import type { CallContext, ChatChunk, ChatRequest, ChatStream } from "../types";
import { geminiBody } from "./request";
import { type GeminiEvent, GeminiStreamReader } from "./stream";

/** Error bodies are small JSON; a misbehaving upstream's page is cut here. */
const MAX_ERROR_TEXT = 16 * 1024;

interface GoogleErrorDetail {
  "@type"?: string;
  reason?: string;
  retryDelay?: string;
}

function errorBodyOf(text: string): { status?: string; details: GoogleErrorDetail[] } {
  try {
    const error = (JSON.parse(text) as { error?: { status?: unknown; details?: unknown } }).error;
    return {
      status: typeof error?.status === "string" ? error.status : undefined,
      details: Array.isArray(error?.details) ? (error.details as GoogleErrorDetail[]) : [],
    };
  } catch {
    return { details: [] };
  }
}

/** google.rpc.RetryInfo's `retryDelay` ("23s", "1.5s") as whole seconds. */
function retryDelaySeconds(details: GoogleErrorDetail[]): number | undefined {
  const delay = details.find((d) => d["@type"]?.endsWith("google.rpc.RetryInfo"))?.retryDelay;
  const seconds = delay ? Number.parseFloat(delay) : Number.NaN;
  return Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds) : undefined;
}

/**
 * Google's error body is `{error:{code,message,status,details}}`. The status name (RESOURCE_EXHAUSTED,
 * INVALID_ARGUMENT...) is the provider code, not the number that repeats the HTTP status. Two quirks:
 * the wait comes as RetryInfo in the details more often than as Retry-After, and a rejected key is a
 * 400 (reason API_KEY_INVALID), which is the platform key's fault, so the attempt may fail over.
 */
async function geminiError(res: Response, provider: string): Promise<UpstreamError> {
  const text = (await res.text().catch(() => "")).slice(0, MAX_ERROR_TEXT);
  const err = await upstreamErrorFromResponse(
    new Response(text, { status: res.status, headers: res.headers }),
    provider,
  );
  const { status, details } = errorBodyOf(text);
  const keyRejected = details.some((d) => d.reason === "API_KEY_INVALID");
  return amended(err, {
    providerCode: status,
    retryAfterSeconds: err.retryAfterSeconds ?? retryDelaySeconds(details),
    retryable: err.retryable || keyRejected,
  });
}

async function* chunks(res: Response, call: CallContext): AsyncGenerator<ChatChunk, void, undefined> {
  const reader = new GeminiStreamReader(call.endpoint.provider);
  try {
    for await (const event of readSse(res.body!)) {
      let parsed: GeminiEvent;
      try {
        parsed = JSON.parse(event.data) as GeminiEvent;
      } catch {
        throw new UpstreamError({
          kind: "invalid_response",
          message: `Provider ${call.endpoint.provider} sent an unreadable stream event`,
        });
      }
      const chunk = reader.read(parsed);
      if (chunk) yield chunk;
    }
  } catch (err) {
    throw midStreamFailure(err, call);
  }
  const last = reader.end();
  if (last) yield last;
}

export async function geminiChat(request: ChatRequest, call: CallContext): Promise<ChatStream> {
  const { baseUrl, upstreamModel } = call.endpoint;
  const body = geminiBody(request, upstreamModel);
  const res = await postForStream(
    call,
    `${baseUrl}/models/${encodeURIComponent(upstreamModel)}:streamGenerateContent?alt=sse`,
    { "x-goog-api-key": call.credential.apiKey },
    body,
    geminiError,
  );
  return chatStream(chunks(res, call));
}
