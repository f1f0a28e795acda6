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
  | 499
  | 500
  | 502
  | 503
  | 524
  | 529;

/**
 * The status of a request whose client left before its answer (nginx's "client closed request"): no
 * client ever reads it, but the request's log line and its trace say what happened.
 */
export const CLIENT_CLOSED = 499;

const CLIENT_CLOSED_MESSAGE = "The client closed the request";

/** The error of a request whose client already left (see CLIENT_CLOSED). */
export const clientClosed = () => new ApiError(CLIENT_CLOSED, CLIENT_CLOSED_MESSAGE);

/** The same as an answer, for a route that answers rather than throws (its generation still settles). */
export const clientClosedResponse = () =>
  Response.json(errorEnvelope(CLIENT_CLOSED, CLIENT_CLOSED_MESSAGE), { status: CLIENT_CLOSED });

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
export const INFERENCE_ONLY_MESSAGE =
  "Management keys manage the account and cannot make inference requests: use an API key (POST /keys creates one)";

/** The JSON body of every error response: `error.code` always equals the HTTP status. */
export function errorEnvelope(status: number, message: string, metadata?: Record<string, unknown>) {
  return {
    error: metadata ? { code: status, message, metadata } : { code: status, message },
  };
}

/** The Anthropic Messages API's error type for a status (the `/messages` route answers in its envelope). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request_error";
    case 413:
      return "request_too_large";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 408:
    case 524:
      return "timeout_error";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

/** The body of an error on the Anthropic Messages route: `{type: "error", error: {type, message}}`. */
export function anthropicErrorEnvelope(
  status: number,
  message: string,
  metadata?: Record<string, unknown>,
  requestId?: string,
) {
  return {
    type: "error" as const,
    error: { type: anthropicErrorType(status), message, ...(metadata ? { metadata } : {}) },
    ...(requestId ? { request_id: requestId } : {}),
  };
}
