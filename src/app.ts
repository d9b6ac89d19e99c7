import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { registerErrorHandling } from './http/errors.js';
import { serverWithFastPaths, type FastPath } from './http/fast-path.js';
import { clientErrorHandler, frameworkErrors, registerJsonBodies, unmatchedInputChecks } from './http/json-body.js';
import { swaggerOptions } from './http/openapi.js';
import { Problem } from './http/schemas.js';
import { requestIdOf } from './http/request-id.js';
import { apiHeaders, isPage, pageHelmet, servesHttps } from './http/security-headers.js';

const CORS_EXPOSED = [
  'x-request-id',
  'etag',
  'retry-after',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
];

/** The HTTP application: conventions shared by every route, then the capability plugins. */
export async function buildApp({
  logger,
  plugins,
  version,
  corsOrigins = [],
  publicUrl,
  fastPaths = {},
}: {
  logger: Logger;
  plugins: FastifyPluginAsync[];
  version: string;
  /** Browser origins allowed to call the API (CORS_ORIGINS); none by default. */
  corsOrigins?: string[];
  /** PUBLIC_URL: HSTS is sent only when it is https. */
  publicUrl?: string;
  /** GET requests answered before routing, by exact URL (src/http/fast-path.ts); off with CORS on. */
  fastPaths?: Record<string, FastPath>;
}): Promise<FastifyInstance> {
  const https = servesHttps(publicUrl);
  const headers = apiHeaders(https);
  let closing = false;
  const fast = Object.keys(fastPaths).length > 0 && corsOrigins.length === 0;
  const app = Fastify({
    // No Fastify logger: its per-request plumbing (a child logger per request, request logs) cost
    // up to 20% on the smallest routes (measured on the bundle version check). Failures are logged by
    // the error handler, with the request id, through the service's own logger.
    bodyLimit: 1024 * 1024,
    // Fastify's default of 10 s per plugin failed starts on a loaded machine (@fastify/swagger-ui,
    // three instances starting at once in test/startup.test.ts): a slow start is not a broken one.
    pluginTimeout: 60_000,
    // While closing, requests already on an open connection are served, not answered 503: a rolling
    // restart must not fail requests that arrived before the listener closed.
    return503OnClosing: false,
    trustProxy: true,
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers['x-request-id']),
    ...(fast ? { serverFactory: serverWithFastPaths(fastPaths, headers, () => !closing) } : {}),
    clientErrorHandler,
    frameworkErrors,
    ajv: { customOptions: { coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: true } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Callback style: an async hook would cost a promise per request on the hottest routes.
  // Pages (console, docs) set their own security headers through helmet (security-headers.ts).
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (!isPage(req.url)) reply.headers(headers);
    done();
  });

  // Draining: Fastify answers with `Connection: close` from here on; the fast paths step aside.
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  registerErrorHandling(app, logger, { preValidation: unmatchedInputChecks });
  registerJsonBodies(app);
  app.addSchema(Problem);
  if (corsOrigins.length > 0) {
    // Preflights are answered before authentication; a preflight without Origin is not refused (no plain-text 400).
    await app.register(cors, {
      origin: corsOrigins,
      strictPreflight: false,
      maxAge: 600,
      exposedHeaders: CORS_EXPOSED,
    });
  }

  await app.register(swagger, swaggerOptions(version));
  // The API reference in a scope of its own, under helmet's page policy (swagger-ui's own staticCSP
  // would allow framing by the same origin). Its page has no inline script; its bundle injects a
  // <style> element when it starts: inline styles are allowed there (styles cannot run script; a
  // hash would break with each swagger-ui release).
  await app.register(async (docs) => {
    await docs.register(helmet, pageHelmet({ https, styleSrc: ["'unsafe-inline'"] }));
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });

  for (const plugin of plugins) await app.register(plugin);
  return app as unknown as FastifyInstance;
}
