// The normalized upstream failure every adapter throws, and the default mapping from an HTTP response.
import { redactKeyShapes, redactSecrets } from "../lib/redact";

export type UpstreamFailureKind = "http" | "timeout" | "connection" | "credential" | "invalid_response";

/** Longest message an UpstreamError carries (cut after redaction, so a cut never leaves part of a key). */
const MAX_MESSAGE = 1000;

/**
 * The texts as the upstream wrote them, kept beside each error (never on it, so never logged or
 * serialised with it): the exact credential is removed from these, before anything key-shaped is
 * (removing a key's shape first leaves the rest of a key with `/`, `+` or `=` in it unfound).
 */
const rawTexts = new WeakMap<UpstreamError, { message: string; providerCode?: string }>();

const bounded = (text: string) => (text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}...` : text);

/**
 * One failed attempt. `retryable` decides failover: the router tries the next candidate only when it is
 * true. The message is safe to show callers: anything shaped like a credential is removed here, and
 * the attempt runner removes the exact credential the attempt used (see withoutSecrets).
 */
export class UpstreamError extends Error {
  readonly kind: UpstreamFailureKind;
  /** HTTP status the upstream answered with (http kind only). */
  readonly status?: number;
  /** The provider's own error code (string or number) when it gave one, else its HTTP status. */
  readonly providerCode?: string | number;
  /** Seconds the upstream asked us to wait (Retry-After), when it said. */
  readonly retryAfterSeconds?: number;
  readonly retryable: boolean;

  constructor(init: {
    kind: UpstreamFailureKind;
    message: string;
    status?: number;
    providerCode?: string | number;
    retryAfterSeconds?: number;
    retryable?: boolean;
  }) {
    super(bounded(redactKeyShapes(init.message)));
    this.name = "UpstreamError";
    this.kind = init.kind;
    this.status = init.status;
    this.providerCode =
      typeof init.providerCode === "string" ? bounded(redactKeyShapes(init.providerCode)) : init.providerCode;
    rawTexts.set(this, {
      message: init.message,
      providerCode: typeof init.providerCode === "string" ? init.providerCode : undefined,
    });
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.retryable = init.retryable ?? defaultRetryable(init.kind, init.status);
  }
}

type Amendable = Partial<Pick<UpstreamError, "providerCode" | "retryAfterSeconds" | "retryable">>;

/** The failure made again from the upstream's own texts (see rawTexts), passed through `text`, with `changes`. */
function rebuilt(err: UpstreamError, text: (raw: string) => string, changes: Amendable = {}): UpstreamError {
  const raw = rawTexts.get(err) ?? { message: err.message };
  const code = changes.providerCode ?? raw.providerCode ?? err.providerCode;
  return new UpstreamError({
    kind: err.kind,
    status: err.status,
    message: text(raw.message),
    providerCode: typeof code === "string" ? text(code) : code,
    retryAfterSeconds: "retryAfterSeconds" in changes ? changes.retryAfterSeconds : err.retryAfterSeconds,
    retryable: changes.retryable ?? err.retryable,
  });
}

/** The same failure with some of its fields changed; its text stays the upstream's. */
export const amended = (err: UpstreamError, changes: Amendable): UpstreamError =>
  rebuilt(err, (text) => text, changes);

/** The same failure with every one of `secrets` (the credentials the attempt sent) removed from its text. */
export function withoutSecrets(err: UpstreamError, secrets: Iterable<string>): UpstreamError {
  const list = [...secrets].filter((s) => s.length >= 4);
  if (list.length === 0) return err;
  return rebuilt(err, (text) => redactSecrets(text, list));
}

/**
 * The iterator of an upstream stream whose failures after the first event have `secrets` removed too
 * (an upstream's mid-stream error event can echo the credential as well as its error answer).
 */
export function scrubbingIterator<T>(iterator: AsyncIterator<T>, secrets: string[]): AsyncIterator<T> {
  const scrub = (err: unknown) => (err instanceof UpstreamError ? withoutSecrets(err, secrets) : err);
  return {
    next: () =>
      iterator.next().catch((err: unknown) => {
        throw scrub(err);
      }),
    return: (value?: unknown) =>
      iterator.return?.(value).catch((err: unknown) => {
        throw scrub(err);
      }) ?? Promise.resolve({ done: true, value: undefined as T }),
  };
}

/**
 * 429, 408, 5xx, a rejected key (401/403: that provider's key, not the caller's request), timeouts,
 * connection failures, refused credentials and malformed answers move on to the next candidate.
 * Other 4xx mean the request itself is wrong for the upstream: trying elsewhere would not help.
 */
function defaultRetryable(kind: UpstreamFailureKind, status?: number): boolean {
  if (kind !== "http" || status == null) return true;
  return status === 408 || status === 429 || status === 401 || status === 403 || status >= 500;
}

/** Retry-After as seconds: delta-seconds or an HTTP date; undefined when absent or unparseable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

const MAX_ERROR_BODY = 16 * 1024;

/** Reads at most MAX_ERROR_BODY bytes of an error body (upstream error pages can be large). */
async function readErrorBody(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return new TextDecoder().decode(all.subarray(0, MAX_ERROR_BODY));
}

/** Pulls `code` and `message` from the common error body shapes ({error:{code,message}}, {message}, ...). */
export function extractProviderError(text: string): { code?: string | number; message?: string } {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== "object" || body === null) return {};
    const record = body as Record<string, unknown>;
    const inner =
      typeof record.error === "object" && record.error !== null
        ? (record.error as Record<string, unknown>)
        : record;
    const code = inner.code ?? inner.type ?? record.code;
    const message =
      inner.message ?? (typeof record.error === "string" ? record.error : undefined) ?? record.message;
    return {
      code: typeof code === "string" || typeof code === "number" ? code : undefined,
      message: typeof message === "string" ? message : undefined,
    };
  } catch {
    return {};
  }
}

/** The default mapping of a non-2xx upstream response; adapters with odd error bodies may wrap it. */
export async function upstreamErrorFromResponse(res: Response, provider: string): Promise<UpstreamError> {
  const text = await readErrorBody(res);
  const { code, message } = extractProviderError(text);
  return new UpstreamError({
    kind: "http",
    status: res.status,
    providerCode: code ?? res.status,
    retryAfterSeconds: parseRetryAfter(res.headers.get("Retry-After")),
    message: `Provider ${provider} answered ${res.status}${message ? `: ${message}` : ""}`,
  });
}

/** Turns whatever an adapter call threw into an UpstreamError (fetch failures, aborts, bugs). */
export function toUpstreamError(err: unknown, provider: string, timedOut: boolean): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (timedOut) {
    return new UpstreamError({ kind: "timeout", message: `Provider ${provider} did not answer in time` });
  }
  return new UpstreamError({ kind: "connection", message: `Could not reach provider ${provider}` });
}
