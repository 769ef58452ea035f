// One typed error for every expected failure; the runtime turns it into the contract's body.
export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'invalid_credentials',
  'forbidden',
  'csrf_mismatch',
  'step_up_required',
  'not_found',
  'method_not_allowed',
  'conflict',
  'gone',
  'precondition_failed',
  'payload_too_large',
  'not_diffable',
  'not_detectable',
  'rate_limited',
  'internal_error',
  'service_unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

const statusOf: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  invalid_credentials: 401,
  forbidden: 403,
  csrf_mismatch: 403,
  step_up_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  not_diffable: 422,
  not_detectable: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
};

export interface ErrorDetail {
  field?: string;
  message: string;
  [extra: string]: unknown;
}

export class HttpError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    // Expected failures (401, 404...) are answered, not debugged: capturing a stack trace for
    // each would cost more than the rest of the request.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = statusOf[code];
  }
}

/** The client went away while its request body was being read: nobody is left to answer. */
export class ClientAbortError extends HttpError {
  constructor() {
    super('bad_request', 'The request body was aborted by the client');
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new HttpError('bad_request', message, details);
export const notFound = (what = 'Not found') => new HttpError('not_found', what);
export const conflict = (message: string) => new HttpError('conflict', message);
export const preconditionFailed = (message: string) => new HttpError('precondition_failed', message);
export const unauthorized = (message = 'Authentication required') => new HttpError('unauthorized', message);
export const forbidden = (message = 'Not allowed') => new HttpError('forbidden', message);
export const unavailable = (message: string) => new HttpError('service_unavailable', message);
