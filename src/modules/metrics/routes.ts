import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../http/errors.js';
import { asArray } from '../../http/route-hooks.js';
import type { IngestOutcome, Metrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the request came in (the metrics plugin's onRequest hook). */
    metricsStartMs: number;
  }
}

type OnSend = (
  req: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: null, p: unknown) => void,
) => void;

/** The route whose answers carry the ingestion outcome counts. */
const INGEST_ROUTE = '/api/v1/ingest/events';

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '');
  const want = Buffer.from(`Bearer ${token}`);
  return given.length === want.length && timingSafeEqual(given, want);
}

/**
 * GET /metrics (Prometheus text format) and the HTTP instrumentation. Not encapsulated, so its
 * hooks see every route: register it before the routes it instruments.
 */
export function metricsRoutes({ metrics, token }: { metrics: Metrics; token?: string }): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    // Latency from onRequest to onSend (the reply handed to the socket). Not onResponse: any
    // onResponse hook makes Fastify add and remove two listeners on every response, which cost
    // more than the rest of the instrumentation on the smallest routes. Callback-style hooks: an
    // async one would cost a promise per request.
    app.decorateRequest('metricsStartMs', 0);
    // Requests that matched no route (the 404 handler has only the global hooks) are counted when
    // their answer is finished: a listener on those alone, where a global onSend hook would run
    // on every request of every route.
    const unmatched = metrics.httpRoute('unmatched');
    app.addHook('onRequest', (req, reply, done) => {
      req.metricsStartMs = performance.now();
      if (req.is404)
        reply.raw.once('finish', () =>
          unmatched.observe(req.method, reply.statusCode, (performance.now() - req.metricsStartMs) / 1000),
        );
      done();
    });
    // Each route gets its own hook holding its series (the pattern, so the label set stays small):
    // a request then costs two map look-ups and a few additions, and allocates nothing.
    app.addHook('onRoute', (route) => {
      const series = metrics.httpRoute(route.url);
      const observe: OnSend = (req, reply, payload, done) => {
        series.observe(req.method, reply.statusCode, (performance.now() - req.metricsStartMs) / 1000);
        done(null, payload);
      };
      route.onSend = [...asArray(route.onSend), observe];
      if (route.url !== INGEST_ROUTE || route.method !== 'POST') return;
      const count = (
        _req: unknown,
        reply: { statusCode: number },
        payload: unknown,
        done: (err: null, p: unknown) => void,
      ) => {
        if (reply.statusCode === 202) metrics.countIngest(payload as Record<IngestOutcome, number>);
        done(null, payload);
      };
      route.preSerialization = [...asArray(route.preSerialization), count];
    });

    app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
      if (token && !tokenMatches(req.headers.authorization, token)) {
        throw new AppError(
          req.headers.authorization ? 'invalid_credentials' : 'missing_credentials',
          'A valid metrics bearer token is required',
        );
      }
      reply.header('content-type', metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  };
  // Fastify's documented opt-out of encapsulation (what fastify-plugin sets).
  (plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
  return plugin;
}
