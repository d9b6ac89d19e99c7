import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { keyOf, type Auth } from '../../http/auth.js';
import { enforceRate, type RateLimiter } from '../../http/rate-limit.js';
import { Environment, errors } from '../../http/schemas.js';
import type { BootstrapService } from './service.js';

const BOOTSTRAP_PER_MINUTE = 60;

const Bootstrap = Type.Object({
  orgId: Type.String(),
  appId: Type.String(),
  environment: Environment,
  storePath: Type.String({ description: 'Remote-config document path the SDK subscribes to' }),
  settings: Type.Object({ flushInterval: Type.Integer(), batchSize: Type.Integer(), configTTL: Type.Integer() }),
  runtime_lock: Type.Optional(
    Type.Object({
      reason: Type.Union([Type.Literal('billing_lapsed'), Type.Literal('account_locked')]),
      locked_at: Type.String(),
      message: Type.String(),
    }),
  ),
});

export const sdkRoutes =
  ({
    auth,
    bootstrap,
    limiter,
  }: {
    auth: Auth;
    bootstrap: BootstrapService;
    limiter: RateLimiter;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/sdk/bootstrap',
      {
        preHandler: auth.sdkKey,
        schema: {
          tags: ['sdk'],
          summary: 'Organization, app and runtime settings for SDK start-up (cacheable 24 h, 60/min per key)',
          response: { 200: Bootstrap, ...errors(401, 429) },
        },
      },
      async (req, reply) => {
        const key = keyOf(req);
        await enforceRate(limiter, reply, `bootstrap:${key.keyId}`, 1, BOOTSTRAP_PER_MINUTE, 'requests');
        reply.header('cache-control', 'private, max-age=86400');
        return bootstrap.bootstrap(key);
      },
    );
  };
