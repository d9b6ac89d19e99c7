import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildApp } from './app.js';
import { compose } from './compose.js';
import type { Config } from './config.js';
import { startEmbeddedDb, type EmbeddedDb } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { createPool, warmPool } from './db/pool.js';
import { createJobQueue } from './jobs/queue.js';
import { ensureEventPartitions } from './modules/ingest/store.js';

export interface RunningServer {
  app?: FastifyInstance;
  url?: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

/** Start-up order: database -> migrations -> services -> jobs -> HTTP. */
export async function startServer(
  config: Config,
  logger: Logger = pino({ level: config.logLevel }),
): Promise<RunningServer> {
  let embedded: EmbeddedDb | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedDb(config.dataDir, config.embeddedPgPort, (m) => logger.info(m));
    databaseUrl = embedded.url;
  }
  const db = createPool(databaseUrl, config.dbPoolMax);
  await migrate(db, (m) => logger.info(m));
  await ensureEventPartitions(db);
  await warmPool(db, config.dbPoolMax);

  const jobs = createJobQueue({
    url: databaseUrl,
    runsWorkers: config.runsWorkers,
    onError: (err) => logger.error({ err }, 'job queue error'),
  });
  const { plugins, opsPlugins, jobHandlers, drain, close } = await compose({ db, databaseUrl, config, jobs, logger });
  await jobs.start(jobHandlers);

  let app: FastifyInstance | undefined;
  let url: string | undefined;
  if (config.runsApi) {
    app = await buildApp({
      logger,
      plugins,
      version: config.version,
      corsOrigins: config.corsOrigins,
      publicUrl: config.publicUrl,
    });
    url = await app.listen({ port: config.port, host: config.host });
    logger.info({ url, role: config.role }, 'service listening');
  } else if (config.opsPort !== undefined) {
    // A worker serves only /livez, /readyz and /metrics, on a port of its own.
    app = await buildApp({ logger, plugins: opsPlugins, version: config.version });
    url = await app.listen({ port: config.opsPort, host: config.host });
    logger.info({ url, role: config.role }, 'operations endpoints listening');
  }

  let stopping: Promise<void> | undefined;
  return {
    app,
    url,
    databaseUrl,
    stop: () =>
      (stopping ??= (async () => {
        // Graceful: /readyz answers 503 from now on; close() stops accepting connections, waits for the
        // requests in flight (long-lived responses such as event streams end in a preClose hook), then
        // the workers finish their current job and the pool closes.
        drain();
        await app?.close();
        await jobs.stop().catch((err) => logger.warn({ err }, 'job queue stop failed'));
        await close();
        await db.end();
        await embedded?.stop();
      })()),
  };
}
