import type { Logger } from 'pino';
import type { FastifyError, FastifyInstance, preValidationHookHandler } from 'fastify';

/** The closed set of error codes clients can rely on, with their HTTP status. */
export const ERROR_STATUS = {
  missing_credentials: 401,
  invalid_credentials: 401,
  forbidden: 403,
  signup_disabled: 403,
  not_found: 404,
  validation_failed: 400,
  webhooks_not_supported: 400,
  conflict: 409,
  export_not_ready: 409,
  export_expired: 409,
  email_taken: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
  ad_network_reauth_required: 409,
  upstream_error: 502,
  srm_detected: 409,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  path: string;
  message: string;
}

const TITLES: Record<ErrorCode, string> = {
  missing_credentials: 'Credentials missing',
  invalid_credentials: 'Invalid credentials',
  forbidden: 'Forbidden',
  signup_disabled: 'Signup is disabled',
  not_found: 'Not found',
  validation_failed: 'Validation failed',
  webhooks_not_supported: 'Webhooks not supported',
  conflict: 'Conflict',
  export_not_ready: 'Export not ready',
  export_expired: 'Export expired',
  email_taken: 'Email already registered',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal_error: 'Internal error',
  service_unavailable: 'Service unavailable',
  ad_network_reauth_required: 'Ad-network connection must be redone',
  upstream_error: 'Upstream service error',
  srm_detected: 'Sample ratio mismatch',
};

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string = TITLES[code],
    readonly errors?: FieldError[],
    /** Extra response headers, e.g. Retry-After and RateLimit-* on a 429. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what = 'Resource') => new AppError('not_found', `${what} not found`);
export const forbidden = (why = 'Not allowed') => new AppError('forbidden', why);
export const invalid = (message: string, path = '') => new AppError('validation_failed', message, [{ path, message }]);

export function problem(code: ErrorCode, detail: string, errors?: FieldError[]) {
  const status = ERROR_STATUS[code];
  return { type: 'about:blank', title: TITLES[code], status, detail, code, ...(errors ? { errors } : {}) };
}

/**
 * Maps every error to RFC 9457 problem+json; driver and internal messages never reach the client.
 * `notFound` holds the hooks of requests that match no route (e.g. the input check).
 */
export function registerErrorHandling(
  app: FastifyInstance,
  logger: Logger,
  notFound: { preValidation?: preValidationHookHandler } = {},
): void {
  app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
    let body;
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      body = problem(err.code, err.message, err.errors);
    } else if ((err as FastifyError).validation) {
      const fe = err as FastifyError;
      const ctx = fe.validationContext ?? 'body';
      const errors = (fe.validation ?? []).slice(0, 50).map((v) => {
        const missing =
          v.keyword === 'required' ? `/${(v.params as { missingProperty?: string }).missingProperty}` : '';
        return { path: `/${ctx}${v.instancePath}${missing}`, message: v.message ?? 'is invalid' };
      });
      body = problem('validation_failed', `Request ${ctx} is invalid`, errors);
    } else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      body = problem('payload_too_large', 'Request body exceeds the size limit');
    } else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      body = problem('unsupported_media_type', 'Send the body as application/json');
    } else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      // Malformed JSON, empty JSON body and the like: a client error, never a 500.
      body = problem(
        'validation_failed',
        err.code?.startsWith('FST_ERR_CTP') ? 'Request body is not valid JSON' : 'Bad request',
      );
    } else {
      logger.error({ err, reqId: request.id, method: request.method, url: request.url }, 'unhandled error');
      body = problem('internal_error', 'An internal error occurred');
    }
    reply.status(body.status).type('application/problem+json').send(body);
  });

  app.setNotFoundHandler(notFound, (request, reply) => {
    reply
      .status(404)
      .type('application/problem+json')
      .send(problem('not_found', `No route ${request.method} ${request.url.split('?')[0]}`));
  });
}
