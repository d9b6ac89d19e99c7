import { Type, type Static, type TSchema } from '@sinclair/typebox';

export interface JobDefinition<P extends TSchema = TSchema> {
  payload: P;
  retryLimit: number;
  retryDelaySeconds: number;
  retryBackoff: boolean;
  expireInSeconds: number;
  /** Singleton queues never run two jobs at once, across all workers; stately also keeps at most one queued. */
  policy: 'standard' | 'singleton' | 'stately';
  /** Runs on this cron schedule (UTC) when set. */
  cron?: string;
}

const def = <P extends TSchema>(d: JobDefinition<P>) => d;

/** Every background job of the service: name, payload, retry policy and timeout. */
export const JOBS = {
  // Ad network: hourly state polling (no webhooks exist) and DAY stats pull for every connected app.
  'ad-network.sync': def({
    payload: Type.Object({}),
    retryLimit: 2,
    retryDelaySeconds: 300,
    retryBackoff: true,
    expireInSeconds: 3000,
    policy: 'singleton',
    cron: '7 * * * *',
  }),
  'maintenance.event-partitions': def({
    payload: Type.Object({}),
    retryLimit: 5,
    retryDelaySeconds: 60,
    retryBackoff: true,
    expireInSeconds: 300,
    policy: 'singleton',
    cron: '17 3 * * *',
  }),
  // Deletes config-stream changes past CONFIG_STREAM_RETENTION_H (older resume ids get a resync).
  'config-stream.prune': def({
    payload: Type.Object({}),
    retryLimit: 3,
    retryDelaySeconds: 60,
    retryBackoff: true,
    expireInSeconds: 600,
    policy: 'singleton',
    cron: '23 * * * *',
  }),
  'webhooks.cleanup': def({
    payload: Type.Object({}),
    retryLimit: 3,
    retryDelaySeconds: 300,
    retryBackoff: true,
    expireInSeconds: 1800,
    policy: 'singleton',
    cron: '41 4 * * *',
  }),
  // One job per bulk export, keyed by its id: never two runs of one export at once. The handler
  // counts runs itself (MAX_EXPORT_ATTEMPTS) and marks the export failed; the limit here is a backstop.
  'export.bulk': def({
    payload: Type.Object({
      exportId: Type.String({ maxLength: 36 }),
      tenantId: Type.String({ maxLength: 36 }),
      appId: Type.String({ maxLength: 36 }),
    }),
    retryLimit: 8,
    retryDelaySeconds: 2,
    retryBackoff: true,
    expireInSeconds: 3 * 3600,
    policy: 'singleton',
  }),
  'export.cleanup': def({
    payload: Type.Object({}),
    retryLimit: 3,
    retryDelaySeconds: 60,
    retryBackoff: true,
    expireInSeconds: 1800,
    policy: 'singleton',
    cron: '*/10 * * * *',
  }),
  // One job per deletion request, keyed by its id (docs/privacy.md): durable, each store done once;
  // a crash mid-way is retried and skips the stores already cleared.
  'privacy.delete': def({
    payload: Type.Object({
      deletionId: Type.String({ maxLength: 36 }),
      tenantId: Type.String({ maxLength: 36 }),
      appId: Type.String({ maxLength: 36 }),
    }),
    retryLimit: 20,
    retryDelaySeconds: 5,
    retryBackoff: true,
    expireInSeconds: 3600,
    policy: 'singleton',
  }),
  // Runs again the deletions whose job died (kill -9): at worker start all running ones, then every
  // minute those whose heartbeat stopped. Steps are serialized and done once, so a second run is safe.
  'privacy.resume': def({
    payload: Type.Object({ all: Type.Optional(Type.Boolean()) }),
    retryLimit: 2,
    retryDelaySeconds: 30,
    retryBackoff: false,
    expireInSeconds: 3600,
    policy: 'singleton',
    cron: '* * * * *',
  }),
  // Drops raw events and completed exports past each app's retention_days (docs/privacy.md, "Retention").
  'privacy.retention': def({
    payload: Type.Object({}),
    retryLimit: 3,
    retryDelaySeconds: 300,
    retryBackoff: true,
    expireInSeconds: 3 * 3600,
    policy: 'singleton',
    cron: '37 2 * * *',
  }),
  // Folds new events into the analytics rollups. Self-rescheduling every ROLLUP_INTERVAL_S;
  // the minute cron only revives the chain. Stately: at most one queued and one running.
  'analytics.rollup': def({
    payload: Type.Object({}),
    retryLimit: 2,
    retryDelaySeconds: 5,
    retryBackoff: false,
    expireInSeconds: 3600,
    policy: 'stately',
    cron: '* * * * *',
  }),
  // Folds exposures and metric events into per-device experiment state; same chain as analytics.rollup.
  'experiments.fold': def({
    payload: Type.Object({}),
    retryLimit: 2,
    retryDelaySeconds: 5,
    retryBackoff: false,
    expireInSeconds: 3600,
    policy: 'stately',
    cron: '* * * * *',
  }),
};

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = Static<(typeof JOBS)[N]['payload']>;
export type JobHandlers = { [N in JobName]: (payload: JobPayload<N>) => Promise<void> };
