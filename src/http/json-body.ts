import type { TSchema } from '@sinclair/typebox';
import type { FastifyContextConfig, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import { AppError, problem } from './errors.js';
import { findJsonViolation, type JsonViolation } from './json-bounds.js';
import { asArray } from './route-hooks.js';
import { findNumericParamProblem, type NumericKind, numericParams } from './numbers.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'per-item': the route checks each item of its body itself (ingestion rejects a bad event alone). */
    jsonBounds?: 'per-item';
    /**
     * The body as the API document shows it, when the route validates items itself: ingestion takes
     * `unknown` items so that one bad event does not fail its batch, and documents each as an EventEnvelope.
     */
    documentedBody?: TSchema;
    /** Set for every route from its schema: the numeric query and path parameters (src/http/numbers.ts). */
    numeric?: { querystring: [string, NumericKind][]; params: [string, NumericKind][] };
  }
}

export const violationError = (where: string, v: JsonViolation) =>
  new AppError('validation_failed', `${where}${v.path} ${v.message}`, [
    { path: `${where}${v.path}`, message: v.message },
  ]);

/**
 * How request bodies and query strings are read (docs/api-conventions.md, "Hostile input"):
 * - JSON only: any other media type answers 415 (Fastify's text/plain parser is removed);
 * - an empty body (none, or `content-type: application/json` with zero bytes) reads as `{}` on a
 *   route with a body schema, so actions whose fields are all optional need no body;
 * - every string and key of the body, query and params passes the bounds and the text rule before
 *   validation, so nothing unstorable or too deep reaches a handler (400 naming the field);
 * - every number follows one rule (src/http/numbers.ts): finite and safe in bodies, plain decimal
 *   digits in the query string and path.
 */
export function registerJsonBodies(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const numeric = {
      querystring: numericParams(route.schema?.querystring),
      params: numericParams(route.schema?.params),
    };
    if (numeric.querystring.length || numeric.params.length) route.config = { ...route.config, numeric };
    route.preValidation = [inputChecks(route.schema?.body !== undefined, numeric), ...asArray(route.preValidation)];
  });
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (text.trim().length === 0) return done(null, undefined);
    // Fastify's default parser answers through the callback (its type also allows a promise).
    void parse(req, text, (err, value) => {
      if (err) return done(err);
      const violation = req.routeOptions.config.jsonBounds === 'per-item' ? null : findJsonViolation(value);
      if (violation) return done(violationError('/body', violation));
      done(null, value);
    });
  });
}

type PreValidation = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
/** Most requests have no query string and no path parameters: nothing to walk then. */
function hasKeys(o: unknown): boolean {
  for (const _ in o as object) return true;
  return false;
}

/**
 * A route's own input check, built once from its schema when the route is registered: a global hook
 * would read `req.routeOptions`, which Fastify builds and freezes anew on each read (two per request).
 * URLs that match no route get `unmatchedInputChecks` from the 404 handler.
 */
function inputChecks(hasBody: boolean, numeric: NonNullable<FastifyContextConfig['numeric']>): PreValidation {
  const numericQuery = numeric.querystring.length > 0 ? numeric.querystring : undefined;
  const numericParams = numeric.params.length > 0 ? numeric.params : undefined;
  // Callback style: an async hook would cost a promise per request on the hottest routes.
  return (req, _reply, done) => {
    if (hasBody && req.body === undefined) req.body = {};
    const inQuery = hasKeys(req.query) ? findJsonViolation(req.query) : null;
    if (inQuery) return done(violationError('/querystring', inQuery));
    const inParams = hasKeys(req.params) ? findJsonViolation(req.params) : null;
    if (inParams) return done(violationError('/params', inParams));
    // Before the schema's coercion, which would read `0x10` as 16 and `1e999` as Infinity.
    const q = numericQuery && findNumericParamProblem(numericQuery, req.query as Record<string, unknown>);
    if (q) return done(violationError('/querystring', { path: `/${q.name}`, message: q.message }));
    const p = numericParams && findNumericParamProblem(numericParams, req.params as Record<string, unknown>);
    if (p) return done(violationError('/params', { path: `/${p.name}`, message: p.message }));
    done();
  };
}

/** The same check for URLs that match no route (the 404 handler's preValidation): a hostile query is a 400 there too. */
export const unmatchedInputChecks: PreValidation = inputChecks(false, { querystring: [], params: [] });

/**
 * URLs the router refuses before any route runs (a path parameter that is not valid percent-encoded
 * UTF-8, or longer than the router allows): problem+json 400, like every other client error.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const detail =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is too long'
      : 'The URL is not valid percent-encoded UTF-8';
  reply.status(400).type('application/problem+json').send(problem('validation_failed', detail));
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (an unencoded non-ASCII URL, a
 * malformed header) get a problem+json 400 too, instead of Fastify's bare default.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const detail =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 'Request headers are too large'
        : 'Malformed HTTP request: percent-encode non-ASCII characters of the URL';
    const body = JSON.stringify(problem('validation_failed', detail));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/problem+json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
