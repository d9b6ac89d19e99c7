import { Value } from '@sinclair/typebox/value';
import PgBoss from 'pg-boss';
import { JOBS, type JobHandlers, type JobName, type JobPayload } from './catalog.js';

/** Instances starting together can deadlock inside pg-boss's create_queue; a retry resolves it. */
async function retryOnDeadlock<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 200 * i));
    }
  }
}

/** Longest wait of a pg-boss query for one of its pool's connections (see createJobQueue). */
const CONNECT_WAIT_MS = 10_000;

/** The durable queue (pg-boss, in the service's own database) driven by the typed catalog. */
export function createJobQueue({
  url,
  runsWorkers,
  onError,
}: {
  url: string;
  runsWorkers: boolean;
  onError: (err: unknown) => void;
}) {
  const boss = new PgBoss({
    connectionString: url,
    schema: 'pgboss',
    max: 4,
    // pg's pool, once ended, neither serves nor fails a query still waiting for a connection (checked
    // on pg-pool 3). A worker's poll queued behind the 4 busy ones when pg-boss closes its pool then
    // never returns, and pg-boss's stop polls that worker's state every second for good: a ref'd
    // timer, the likely cause of a test file lingering with two timers and no socket under load. A
    // wait for a connection now fails after this long, and the stopped worker's loop ends with it.
    // (pg-boss hands its options to pg.Pool; its types omit this one.)
    ...{ connectionTimeoutMillis: CONNECT_WAIT_MS },
    // Only worker processes maintain the queue and fire cron schedules.
    supervise: runsWorkers,
    schedule: runsWorkers,
  });
  let stopping = false;
  // Handlers running: stop waits for each (pg-boss's own wait gives up at its timeout, fails the job
  // and closes its connections while the handler still runs on the service's pool).
  const inFlight = new Set<Promise<void>>();
  // Resolved once every queue of the catalog exists: before that, a send inserts nothing and answers null.
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  // While stopping, connections closing under pg-boss's feet are expected, not errors worth reporting.
  boss.on('error', (err) => {
    if (!stopping) onError(err);
  });

  return {
    async start(handlers: JobHandlers): Promise<void> {
      await boss.start();
      for (const [name, d] of Object.entries(JOBS) as [JobName, (typeof JOBS)[JobName]][]) {
        await retryOnDeadlock(() =>
          boss.createQueue(name, {
            name,
            policy: d.policy,
            retryLimit: d.retryLimit,
            retryDelay: d.retryDelaySeconds,
            retryBackoff: d.retryBackoff,
            expireInSeconds: d.expireInSeconds,
          }),
        );
        if (!runsWorkers) continue;
        await boss.work<JobPayload<typeof name>>(name, { batchSize: 1, pollingIntervalSeconds: 1 }, async ([job]) => {
          if (!Value.Check(d.payload, job.data)) throw new Error(`invalid payload for ${name}`);
          // Fetched as the queue stopped: failed now, so pg-boss runs it again after the restart.
          if (stopping) throw new Error(`${name} not started: the job queue is stopping`);
          // The payload was checked against this job's schema just above; TS cannot tie name and payload together.
          const run = (handlers[name] as (payload: unknown) => Promise<void>)(job.data);
          inFlight.add(run);
          try {
            await run;
          } finally {
            inFlight.delete(run);
          }
        });
        if (d.cron) await boss.schedule(name, d.cron, {});
      }
      markStarted();
    },
    /** Resolves once start() has created every queue (sends before that are lost). */
    whenStarted(): Promise<void> {
      return started;
    },
    async send<N extends JobName>(
      name: N,
      payload: JobPayload<N>,
      options: PgBoss.SendOptions = {},
    ): Promise<string | null> {
      return boss.send(name, payload, options);
    },
    /**
     * No job starts from now on; the running ones are waited for, however long (their owners end
     * long work at a safe point: the caller asks them first), and recorded as done by pg-boss before
     * it closes its connections.
     */
    async stop(): Promise<void> {
      stopping = true;
      if (runsWorkers) for (const name of Object.keys(JOBS)) await boss.offWork(name).catch(() => undefined);
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      await boss.stop({ graceful: true, timeout: 10_000, wait: true });
    },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue>;
