import type { QueueStore } from './queue-store.js';

/** Deliveries (webhooks and callbacks) are kept this long, then deleted by the daily cleanup. */
export const DELIVERY_RETENTION_DAYS = 30;

export function webhookJobs({ queue }: { queue: QueueStore }) {
  return {
    'webhooks.cleanup': async () => {
      await queue.deleteOlderThan(DELIVERY_RETENTION_DAYS);
    },
  };
}
