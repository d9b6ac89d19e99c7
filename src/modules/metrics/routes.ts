import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../http/errors.js';
import type { IngestOutcome, Metrics } from './metrics.js';

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
    // Callback style and the route's pattern (not the URL), so the label set stays small.
    app.addHook('onResponse', (req, reply, done) => {
      metrics.observeHttp(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
    app.addHook('onRoute', (route) => {
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
      const prior = route.preSerialization;
      route.preSerialization = prior ? [...(Array.isArray(prior) ? prior : [prior]), count] : [count];
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
