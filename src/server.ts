import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildApp } from './app.js';
import { compose } from './compose.js';
import type { Config } from './config.js';
import { startEmbeddedDb, type EmbeddedDb } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { createPool, warmPool, type Db } from './db/pool.js';
import { createJobQueue, type JobQueue } from './jobs/queue.js';
import { ensureEventPartitions } from './modules/ingest/store.js';

export interface RunningServer {
  app?: FastifyInstance;
  url?: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

/**
 * Start-up order: database -> migrations -> services -> jobs -> HTTP. A start that fails part-way
 * stops what it had started (pool, job queue, workers, timers) before it throws: left running, they
 * held the process (seen: a plugin timing out on a loaded machine left two instances' handles open).
 */
export async function startServer(
  config: Config,
  logger: Logger = pino({ level: config.logLevel }),
): Promise<RunningServer> {
  let embedded: EmbeddedDb | undefined;
  let db: Db | undefined;
  let jobs: JobQueue | undefined;
  let services: Awaited<ReturnType<typeof compose>> | undefined;
  let app: FastifyInstance | undefined;
  let stopping: Promise<void> | undefined;
  // Graceful (docs/operations.md "Stopping"): /readyz answers 503 from now on; long work is asked to
  // end at its next safe point; close() stops accepting connections and waits for the requests in
  // flight (event streams end in a preClose hook); no job starts and the running ones are waited
  // for; then loops, timers, threads and connections close, and the pool last: nothing that could
  // still query it is left.
  const stop = () =>
    (stopping ??= (async () => {
      services?.drain();
      const winding = services?.stopWork();
      await app?.close().catch((err) => logger.warn({ err }, 'HTTP server close failed'));
      await winding;
      await jobs?.stop().catch((err) => logger.warn({ err }, 'job queue stop failed'));
      await services?.close();
      await db?.end();
      await embedded?.stop();
    })());

  let databaseUrl = config.databaseUrl;
  try {
    if (!databaseUrl) {
      embedded = await startEmbeddedDb(config.dataDir, config.embeddedPgPort, (m) => logger.info(m));
      databaseUrl = embedded.url;
    }
    db = createPool(databaseUrl, config.dbPoolMax);
    await migrate(db, (m) => logger.info(m));
    await ensureEventPartitions(db);
    await warmPool(db, config.dbPoolMax);

    jobs = createJobQueue({
      url: databaseUrl,
      runsWorkers: config.runsWorkers,
      onError: (err) => logger.error({ err }, 'job queue error'),
    });
    services = await compose({ db, databaseUrl, config, jobs, logger });
    await jobs.start(services.jobHandlers);

    let url: string | undefined;
    if (config.runsApi) {
      const { plugins, fastPaths } = services;
      app = await buildApp({
        logger,
        plugins,
        fastPaths,
        version: config.version,
        corsOrigins: config.corsOrigins,
        publicUrl: config.publicUrl,
      });
      url = await app.listen({ port: config.port, host: config.host });
      logger.info({ url, role: config.role }, 'service listening');
    } else if (config.opsPort !== undefined) {
      // A worker serves only /livez, /readyz and /metrics, on a port of its own.
      app = await buildApp({ logger, plugins: services.opsPlugins, version: config.version });
      url = await app.listen({ port: config.opsPort, host: config.host });
      logger.info({ url, role: config.role }, 'operations endpoints listening');
    }
    return { app, url, databaseUrl, stop };
  } catch (err) {
    await stop().catch((e) => logger.warn({ err: e }, 'stop after a failed start failed'));
    throw err;
  }
}
