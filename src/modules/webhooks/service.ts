import type { Db } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { AppError, notFound } from '../../http/errors.js';
import { assertPublicTarget } from '../../outbound/guard.js';
import { newWebhookSecret } from '../../outbound/signer.js';
import type { ActivityStore } from '../activity/store.js';
import type { DeliveryRow, EndpointRow, WebhookStore } from './store.js';

export const WEBHOOK_EVENT_TYPES = [
  'onboarding.started',
  'onboarding.completed',
  'experiment.exposure',
  'experiment.shipped',
  'user.identified',
] as const;
export const MAX_ENDPOINTS_PER_APP = 50;
/** The type of the console's test deliveries; no endpoint subscribes to it, it is sent on request only. */
export const TEST_EVENT_TYPE = 'webhook.test';
/** Both the old and the new secret sign for this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function endpointView(e: EndpointRow) {
  const overlap =
    e.previous_secret && e.previous_secret_expires_at && e.previous_secret_expires_at.getTime() > Date.now();
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    disabled_at: iso(e.disabled_at),
    failing_since: iso(e.failing_since),
    previous_secret_expires_at: overlap ? iso(e.previous_secret_expires_at) : null,
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
  };
}

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    created_at: d.created_at.toISOString(),
    last_attempt_at: iso(d.last_attempt_at),
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    succeeded_at: iso(d.succeeded_at),
    last_error: d.last_error,
    last_duration_ms: d.last_duration_ms,
    environment: d.environment,
    attempt_log: d.attempt_log,
  };
}

/** Ad-network types are refused with their own code; anything else outside the list is a validation error. */
function checkEvents(events: string[]): string[] {
  if (events.some((t) => t.toLowerCase().startsWith('ad_network'))) {
    throw new AppError(
      'webhooks_not_supported',
      'Webhooks are not supported for the ad network; its state changes are found by the hourly metrics sync',
    );
  }
  const bad = events.findIndex((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (bad >= 0) {
    throw new AppError('validation_failed', `Unknown webhook event type "${events[bad]}"`, [
      { path: `/body/events/${bad}`, message: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` },
    ]);
  }
  return [...new Set(events)];
}

export interface WebhookServiceDeps {
  db: Db;
  store: WebhookStore;
  activity: ActivityStore;
  allowPrivateTargets: boolean;
  scheduleS: number[];
  /** Nudges the local delivery worker (when this process runs one). */
  wake?: () => void;
}

export function createWebhookService({
  db,
  store,
  activity,
  allowPrivateTargets,
  scheduleS,
  wake = () => undefined,
}: WebhookServiceDeps) {
  async function mustGet(scope: Scope, id: string): Promise<EndpointRow> {
    const e = await store.getEndpoint(scope, id);
    if (!e) throw notFound('Webhook');
    return e;
  }

  const record = (scope: Scope, id: string, action: string, description: string, userId: string) =>
    activity.record(scope, {
      entityType: 'webhook',
      entityId: id,
      action,
      description: description.slice(0, 500),
      actorUserId: userId,
    });

  return {
    async create(
      scope: Scope,
      userId: string,
      input: { url: string; events: string[]; description?: string; enabled?: boolean },
    ) {
      const events = checkEvents(input.events);
      const url = (await assertPublicTarget(input.url, 'url', allowPrivateTargets)).toString();
      const secret = newWebhookSecret();
      const row = await withTx(db, async (tx) => {
        // Serialises concurrent creations of one app so the cap holds.
        await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`webhooks:${scope.appId}`]);
        if ((await store.countEndpoints(scope, tx)) >= MAX_ENDPOINTS_PER_APP) {
          throw new AppError('conflict', `An app can have at most ${MAX_ENDPOINTS_PER_APP} webhooks`);
        }
        return store.insertEndpoint(
          scope,
          {
            url,
            events,
            description: input.description ?? null,
            enabled: input.enabled ?? true,
            secret,
            createdBy: userId,
          },
          tx,
        );
      });
      await record(scope, row.id, 'created', `Webhook ${url} created for ${events.join(', ')}`, userId);
      return { ...endpointView(row), secret };
    },

    async list(scope: Scope) {
      return (await store.listEndpoints(scope)).map(endpointView);
    },

    async get(scope: Scope, id: string) {
      return endpointView(await mustGet(scope, id));
    },

    async update(
      scope: Scope,
      userId: string,
      id: string,
      patch: { url?: string; events?: string[]; enabled?: boolean; description?: string | null },
    ) {
      const events = patch.events ? checkEvents(patch.events) : undefined;
      const url =
        patch.url !== undefined
          ? (await assertPublicTarget(patch.url, 'url', allowPrivateTargets)).toString()
          : undefined;
      await mustGet(scope, id);
      const row = await store.updateEndpoint(scope, id, {
        url,
        events,
        enabled: patch.enabled,
        description: patch.description,
      });
      if (!row) throw notFound('Webhook');
      if (patch.enabled === false) await store.failWaiting(scope, id);
      const changed = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
      await record(
        scope,
        id,
        patch.enabled === false ? 'disabled' : patch.enabled === true ? 'enabled' : 'updated',
        `Webhook ${row.url} updated (${changed.join(', ') || 'no fields'})`,
        userId,
      );
      return endpointView(row);
    },

    async remove(scope: Scope, userId: string, id: string) {
      const e = await mustGet(scope, id);
      if (!(await store.deleteEndpoint(scope, id))) throw notFound('Webhook');
      await record(scope, id, 'deleted', `Webhook ${e.url} deleted`, userId);
    },

    async rotateSecret(scope: Scope, userId: string, id: string) {
      await mustGet(scope, id);
      const secret = newWebhookSecret();
      const row = await store.rotateSecret(scope, id, secret, new Date(Date.now() + ROTATION_OVERLAP_MS));
      if (!row) throw notFound('Webhook');
      await record(
        scope,
        id,
        'secret_rotated',
        `Webhook ${row.url} signing secret rotated; the old one signs for 24 h more`,
        userId,
      );
      return { ...endpointView(row), secret };
    },

    async deliveries(scope: Scope, id: string, q: { limit: number; offset: number; status?: string }) {
      await mustGet(scope, id);
      const { rows, total } = await store.listDeliveries(scope, id, q);
      return { rows: rows.map(deliveryView), total };
    },

    async delivery(scope: Scope, id: string, deliveryId: string) {
      const d = await store.getDelivery(scope, id, deliveryId);
      if (!d) throw notFound('Delivery');
      return { ...deliveryView(d), body: d.body };
    },

    async retry(scope: Scope, userId: string, id: string, deliveryId: string) {
      const e = await mustGet(scope, id);
      if (!(await store.getDelivery(scope, id, deliveryId))) throw notFound('Delivery');
      if (!e.enabled)
        throw new AppError('conflict', 'The webhook is disabled; enable it before retrying its deliveries');
      const d = await store.requeueDelivery(scope, id, deliveryId);
      if (!d) throw new AppError('conflict', 'An attempt of this delivery is in progress; retry when it has finished');
      await record(
        scope,
        id,
        'delivery_retried',
        `Delivery ${deliveryId} of webhook ${e.url} queued for a manual retry`,
        userId,
      );
      wake();
      return deliveryView(d);
    },

    /** Queues a `webhook.test` delivery to one enabled endpoint, signed and retried as any other. */
    async sendTest(scope: Scope, userId: string, id: string) {
      const e = await mustGet(scope, id);
      if (!e.enabled) throw new AppError('conflict', 'The webhook is disabled; enable it before sending a test event');
      const body = JSON.stringify({
        type: TEST_EVENT_TYPE,
        timestamp: new Date().toISOString(),
        environment: null,
        data: { webhook_id: id, test: true },
      });
      const d = await store.insertTestDelivery(scope, id, {
        eventType: TEST_EVENT_TYPE,
        body,
        maxAttempts: 1 + scheduleS.length,
      });
      await record(scope, id, 'test_sent', `Test event queued for webhook ${e.url}`, userId);
      wake();
      return deliveryView(d);
    },

    /**
     * Durably queues a signed callback (the export completion callback): sent by the same worker,
     * client, guard and retry schedule as webhooks, signed with `secret` alone, body exactly as given.
     */
    async sendCallback(
      scope: Scope,
      input: { url: string; secret: string; eventType: string; body: object },
    ): Promise<void> {
      await store.insertCallback(scope, {
        url: input.url,
        secret: input.secret,
        eventType: input.eventType.slice(0, 100),
        body: JSON.stringify(input.body),
        maxAttempts: 1 + scheduleS.length,
      });
      wake();
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
