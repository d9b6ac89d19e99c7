import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Db } from '../../db/pool.js';
import { pendingMigrations } from '../../db/migrate.js';
import type { Lifecycle } from './lifecycle.js';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  version: Type.String(),
  uptime_s: Type.Integer(),
  checks: Type.Object({ database: Type.Union([Type.Literal('ok'), Type.Literal('down')]) }),
});

const Ready = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  checks: Type.Object({
    database: Type.Union([Type.Literal('ok'), Type.Literal('down')]),
    migrations: Type.Union([Type.Literal('ok'), Type.Literal('pending'), Type.Literal('unknown')]),
    draining: Type.Boolean(),
  }),
});

const DB_CHECK_TIMEOUT_MS = 2000;

function withTimeout<T>(p: Promise<T>): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), DB_CHECK_TIMEOUT_MS).unref()),
  ]);
}

async function databaseUp(db: Db): Promise<boolean> {
  try {
    await withTimeout(db.query('SELECT 1'));
    return true;
  } catch {
    return false;
  }
}

export const healthRoutes =
  ({ db, version, lifecycle }: { db: Db; version: string; lifecycle: Lifecycle }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const started = Date.now();
    app.get(
      '/api/v1/ingest/health',
      {
        schema: {
          tags: ['health'],
          summary: 'Liveness and database reachability',
          response: { 200: Health, 503: Health },
        },
      },
      async (_req, reply) => {
        const database = (await databaseUp(db)) ? ('ok' as const) : ('down' as const);
        const body = {
          status: database === 'ok' ? ('ok' as const) : ('degraded' as const),
          version,
          uptime_s: Math.floor((Date.now() - started) / 1000),
          checks: { database },
        };
        return reply.status(database === 'ok' ? 200 : 503).send(body);
      },
    );

    // Liveness: the process answers. Restarting it would not fix a database that is down, so nothing else is checked.
    app.get(
      '/livez',
      {
        schema: {
          tags: ['health'],
          summary: 'Liveness: the process serves HTTP',
          response: { 200: Type.Object({ status: Type.Literal('ok') }) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    // Readiness: send traffic here only when the database answers, its schema is this version's, and no shutdown is under way.
    app.get(
      '/readyz',
      {
        schema: {
          tags: ['health'],
          summary: 'Readiness: database reachable, migrations applied, not draining',
          response: { 200: Ready, 503: Ready },
        },
      },
      async (_req, reply) => {
        const database = (await databaseUp(db)) ? ('ok' as const) : ('down' as const);
        let migrations: 'ok' | 'pending' | 'unknown' = 'unknown';
        if (database === 'ok') {
          try {
            migrations = (await withTimeout(pendingMigrations(db))).length === 0 ? 'ok' : 'pending';
          } catch {
            migrations = 'unknown';
          }
        }
        const draining = lifecycle.draining;
        const ready = database === 'ok' && migrations === 'ok' && !draining;
        return reply
          .status(ready ? 200 : 503)
          .send({ status: ready ? 'ready' : 'not_ready', checks: { database, migrations, draining } });
      },
    );
  };
