import type { FastifyServerFactory } from 'fastify';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { requestIdOf } from './request-id.js';

/**
 * The few request headers a fast path reads, taken from `rawHeaders` in one pass: reading
 * `req.headers` would build the whole header object, a large share of a small request's cost.
 */
export interface FastHeaders {
  host: boolean;
  apiKey?: string;
  ifNoneMatch?: string;
  requestId?: string;
}

/** The headers every API answer starts with (request id, security headers), as a fresh flat list. */
export type BaseHeaders = (requestId: string | undefined) => string[];

/**
 * A request answered by the raw server before Fastify routes it: the hottest exact request (the
 * SDK's version check), answered from memory, synchronously, with the same bytes and headers the
 * route would send. It returns false, having written nothing, to hand the request to Fastify.
 */
export type FastPath = (req: IncomingMessage, res: ServerResponse, h: FastHeaders, base: BaseHeaders) => boolean;

/** The headers a fast path reads, by lower-case name. A Map: a name like `__proto__` is just a name. */
const READ = new Map<string, 'apiKey' | 'requestId' | 'ifNoneMatch'>([
  ['x-api-key', 'apiKey'],
  ['x-request-id', 'requestId'],
  ['if-none-match', 'ifNoneMatch'],
]);
/** Lengths of the names that matter (those above, host, content-length, transfer-encoding). */
const LENGTHS = new Set([4, 9, 12, 13, 14, 17]);

/**
 * The headers of a bodiless request, or undefined when a fast path must not take it: a body
 * (Content-Length, Transfer-Encoding), or a header it reads sent twice (Node would join the two;
 * the route then judges the joined value).
 */
function fastHeaders(raw: string[]): FastHeaders | undefined {
  const h: FastHeaders = { host: false };
  for (let i = 0; i < raw.length; i += 2) {
    // Lengths first: most headers are passed over without lower-casing their names.
    if (!LENGTHS.has(raw[i].length)) continue;
    const name = raw[i].toLowerCase();
    if (name === 'host') h.host = true;
    else if (name === 'content-length' || name === 'transfer-encoding') return undefined;
    else {
      const field = READ.get(name);
      if (field === undefined) continue;
      if (h[field] !== undefined) return undefined;
      h[field] = raw[i + 1];
    }
  }
  return h;
}

/** Fastify's options for the server it would make, defaults applied (fastify.js). */
interface Timeouts {
  keepAliveTimeout: number;
  requestTimeout: number;
  connectionTimeout: number;
  maxRequestsPerSocket: number;
}

/**
 * Fastify's server factory with the fast paths in front, for GET requests to their exact URLs.
 * While `open()` is false (the app is closing) everything goes to Fastify, which answers with
 * `Connection: close` while it drains. Not used with CORS on (app.ts): CORS headers are Fastify's.
 */
export function serverWithFastPaths(
  fastPaths: Record<string, FastPath>,
  apiHeaders: Record<string, string>,
  open: () => boolean,
): FastifyServerFactory {
  const constant = Object.entries(apiHeaders).flat();
  const base: BaseHeaders = (given) => ['x-request-id', requestIdOf(given), ...constant];
  const paths = new Map(Object.entries(fastPaths));
  const take = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'GET' || !open()) return false;
    const fast = paths.get(req.url ?? '');
    if (!fast) return false;
    const h = fastHeaders(req.rawHeaders);
    return h?.host === true && fast(req, res, h, base);
  };
  return (handler, opts) => {
    const options = opts as unknown as Timeouts;
    // Node's Host check is ours (below): Node's reads req.headers, which builds the whole header
    // object on every request, fast or not.
    const server = http.createServer({ requireHostHeader: false }, (req, res) => {
      if (take(req, res)) return;
      // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400, as Node itself answers it.
      if (req.httpVersion === '1.1' && req.headers.host === undefined)
        res.writeHead(400, ['Connection', 'close']).end();
      else handler(req, res);
    });
    // What Fastify does to the server it makes itself (fastify/lib/server.js).
    server.keepAliveTimeout = options.keepAliveTimeout;
    server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  };
}
