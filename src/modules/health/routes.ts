import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../../db/pool.js';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  version: Type.String(),
  uptime_s: Type.Integer(),
  checks: Type.Object({ database: Type.Union([Type.Literal('ok'), Type.Literal('down')]) }),
});

export const healthRoutes =
  ({ db, version }: { db: Db; version: string }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const started = Date.now();
    app.get('/api/v1/ingest/health', {
      schema: { tags: ['health'], summary: 'Liveness and database reachability', response: { 200: Health, 503: Health } },
    }, async (_req, reply) => {
      let database: 'ok' | 'down' = 'ok';
      try {
        await Promise.race([
          db.query('SELECT 1'),
          new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
        ]);
      } catch {
        database = 'down';
      }
      const body = { status: database === 'ok' ? ('ok' as const) : ('degraded' as const), version, uptime_s: Math.floor((Date.now() - started) / 1000), checks: { database } };
      return reply.status(database === 'ok' ? 200 : 503).send(body);
    });
  };
