// The one error type handlers throw; app.ts's onError turns it into the wire envelope.

export type ErrorStatus =
  | 400
  | 401
  | 402
  | 403
  | 404
  | 405
  | 408
  | 409
  | 413
  | 415
  | 429
  | 500
  | 502
  | 503
  | 524
  | 529;

export class ApiError extends Error {
  constructor(
    readonly status: ErrorStatus,
    /** Safe to show the caller; internal detail goes to logs, never here. */
    message: string,
    readonly metadata?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, metadata?: Record<string, unknown>) =>
  new ApiError(400, message, metadata);
export const unauthorized = (message = "Missing or invalid API key") => new ApiError(401, message);
export const forbidden = (message: string, metadata?: Record<string, unknown>) =>
  new ApiError(403, message, metadata);
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string) => new ApiError(409, message);

export const MANAGEMENT_ONLY_MESSAGE = "Only management keys can perform this operation";

/** The JSON body of every error response: `error.code` always equals the HTTP status. */
export function errorEnvelope(status: number, message: string, metadata?: Record<string, unknown>) {
  return {
    error: metadata ? { code: status, message, metadata } : { code: status, message },
  };
}
