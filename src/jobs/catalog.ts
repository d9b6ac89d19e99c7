import { Type, type Static, type TSchema } from '@sinclair/typebox';

export interface JobDefinition<P extends TSchema = TSchema> {
  payload: P;
  retryLimit: number;
  retryDelaySeconds: number;
  retryBackoff: boolean;
  expireInSeconds: number;
  /** Singleton queues never run two jobs at once, across all workers. */
  policy: 'standard' | 'singleton';
  /** Runs on this cron schedule (UTC) when set. */
  cron?: string;
}

const def = <P extends TSchema>(d: JobDefinition<P>) => d;

/** Every background job of the service: name, payload, retry policy and timeout. */
export const JOBS = {
  'maintenance.event-partitions': def({
    payload: Type.Object({}),
    retryLimit: 5,
    retryDelaySeconds: 60,
    retryBackoff: true,
    expireInSeconds: 300,
    policy: 'singleton',
    cron: '17 3 * * *',
  }),
};

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = Static<(typeof JOBS)[N]['payload']>;
export type JobHandlers = { [N in JobName]: (payload: JobPayload<N>) => Promise<void> };
