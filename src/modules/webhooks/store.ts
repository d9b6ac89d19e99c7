import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { SecretBox } from '../../lib/secret-box.js';

export interface EndpointRow {
  id: string;
  tenant_id: string;
  app_id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  /** Sealed (SecretBox); only the delivery worker opens it. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  disabled_reason: string | null;
  disabled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptLogEntry {
  attempt: number;
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface DeliveryRow {
  id: string;
  tenant_id: string;
  app_id: string;
  kind: 'webhook' | 'callback';
  endpoint_id: string | null;
  environment: string | null;
  event_type: string;
  body: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  max_attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  succeeded_at: Date | null;
  attempt_log: AttemptLogEntry[];
  created_at: Date;
}

const ENDPOINT_COLS = `id, tenant_id, app_id, url, description, events, enabled, secret, previous_secret, previous_secret_expires_at,
  failing_since, disabled_reason, disabled_at, created_at, updated_at`;
const DELIVERY_COLS = `id, tenant_id, app_id, kind, endpoint_id, environment, event_type, body, status, attempts, max_attempts,
  next_attempt_at, last_attempt_at, last_status_code, last_error, last_duration_ms, succeeded_at, attempt_log, created_at`;

export interface EndpointPatch {
  url?: string;
  events?: string[];
  enabled?: boolean;
  description?: string | null;
}

/** Tenant-scoped SQL of the webhook configuration and delivery log. Signing secrets are written sealed. */
export function createWebhookStore(db: Queryable, box: SecretBox) {
  return {
    async countEndpoints(scope: Scope, tx?: Tx): Promise<number> {
      const { rows } = await (tx ?? db).query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_endpoints WHERE tenant_id = $1 AND app_id = $2',
        [scope.tenantId, scope.appId],
      );
      return rows[0].n;
    },

    async insertEndpoint(
      scope: Scope,
      e: {
        url: string;
        events: string[];
        description: string | null;
        enabled: boolean;
        secret: string;
        createdBy: string;
      },
      tx?: Tx,
    ): Promise<EndpointRow> {
      const { rows } = await (tx ?? db).query<EndpointRow>(
        `INSERT INTO webhook_endpoints (tenant_id, app_id, url, events, description, enabled, secret, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${ENDPOINT_COLS}`,
        [scope.tenantId, scope.appId, e.url, e.events, e.description, e.enabled, box.seal(e.secret), e.createdBy],
      );
      return rows[0];
    },

    async listEndpoints(scope: Scope): Promise<EndpointRow[]> {
      const { rows } = await db.query<EndpointRow>(
        `SELECT ${ENDPOINT_COLS} FROM webhook_endpoints WHERE tenant_id = $1 AND app_id = $2 ORDER BY created_at, id LIMIT 1000`,
        [scope.tenantId, scope.appId],
      );
      return rows;
    },

    async getEndpoint(scope: Scope, id: string, tx?: Tx): Promise<EndpointRow | null> {
      const { rows } = await (tx ?? db).query<EndpointRow>(
        `SELECT ${ENDPOINT_COLS} FROM webhook_endpoints WHERE tenant_id = $1 AND app_id = $2 AND id = $3 ${tx ? 'FOR UPDATE' : ''}`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    /** Re-enabling clears the failure streak and the reason it was disabled. */
    async updateEndpoint(scope: Scope, id: string, p: EndpointPatch, tx?: Tx): Promise<EndpointRow | null> {
      const { rows } = await (tx ?? db).query<EndpointRow>(
        `UPDATE webhook_endpoints SET
           url = coalesce($4, url),
           events = coalesce($5, events),
           description = CASE WHEN $7 THEN $8 ELSE description END,
           enabled = coalesce($6, enabled),
           failing_since = CASE WHEN $6 IS TRUE THEN NULL ELSE failing_since END,
           disabled_reason = CASE WHEN $6 IS NOT NULL THEN NULL ELSE disabled_reason END,
           disabled_at = CASE WHEN $6 IS TRUE THEN NULL WHEN $6 IS FALSE AND enabled THEN now() ELSE disabled_at END,
           updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND id = $3 RETURNING ${ENDPOINT_COLS}`,
        [
          scope.tenantId,
          scope.appId,
          id,
          p.url ?? null,
          p.events ?? null,
          p.enabled ?? null,
          p.description !== undefined,
          p.description ?? null,
        ],
      );
      return rows[0] ?? null;
    },

    async rotateSecret(scope: Scope, id: string, secret: string, overlapUntil: Date): Promise<EndpointRow | null> {
      const { rows } = await db.query<EndpointRow>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $5, secret = $4, updated_at = now()
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 RETURNING ${ENDPOINT_COLS}`,
        [scope.tenantId, scope.appId, id, box.seal(secret), overlapUntil],
      );
      return rows[0] ?? null;
    },

    /** A disabled endpoint's waiting deliveries fail at once; they can be retried by hand after re-enabling. */
    async failWaiting(scope: Scope, endpointId: string): Promise<void> {
      await db.query(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = 'endpoint disabled'
          WHERE tenant_id = $1 AND app_id = $2 AND endpoint_id = $3 AND status = 'pending' AND (leased_until IS NULL OR leased_until < now())`,
        [scope.tenantId, scope.appId, endpointId],
      );
    },

    async deleteEndpoint(scope: Scope, id: string): Promise<boolean> {
      const { rowCount } = await db.query(
        'DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND app_id = $2 AND id = $3',
        [scope.tenantId, scope.appId, id],
      );
      return (rowCount ?? 0) > 0;
    },

    async listDeliveries(
      scope: Scope,
      endpointId: string,
      q: { limit: number; offset: number; status?: string },
    ): Promise<{ rows: DeliveryRow[]; total: number }> {
      const args = [scope.tenantId, scope.appId, endpointId, q.status ?? null];
      const where = `tenant_id = $1 AND app_id = $2 AND endpoint_id = $3 AND ($4::text IS NULL OR status = $4)`;
      const [list, count] = await Promise.all([
        db.query<DeliveryRow>(
          `SELECT ${DELIVERY_COLS} FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, id LIMIT $5 OFFSET $6`,
          [...args, q.limit, q.offset],
        ),
        db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE ${where}`, args),
      ]);
      return { rows: list.rows, total: count.rows[0].n };
    },

    async getDelivery(scope: Scope, endpointId: string, id: string): Promise<DeliveryRow | null> {
      const { rows } = await db.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLS} FROM webhook_deliveries WHERE tenant_id = $1 AND app_id = $2 AND endpoint_id = $3 AND id = $4`,
        [scope.tenantId, scope.appId, endpointId, id],
      );
      return rows[0] ?? null;
    },

    /**
     * Makes the delivery due now with one more attempt allowed. A pending delivery keeps its
     * remaining schedule; a finished one gets exactly one new attempt (replay).
     */
    async requeueDelivery(scope: Scope, endpointId: string, id: string): Promise<DeliveryRow | null> {
      const { rows } = await db.query<DeliveryRow>(
        `UPDATE webhook_deliveries SET
           max_attempts = CASE WHEN status = 'pending' THEN greatest(max_attempts, attempts + 1) ELSE attempts + 1 END,
           status = 'pending', next_attempt_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND endpoint_id = $3 AND id = $4
           AND (leased_until IS NULL OR leased_until < now())
         RETURNING ${DELIVERY_COLS}`,
        [scope.tenantId, scope.appId, endpointId, id],
      );
      return rows[0] ?? null;
    },

    /** A delivery to one endpoint outside the outbox (the console's "send test event"). */
    async insertTestDelivery(
      scope: Scope,
      endpointId: string,
      c: { eventType: string; body: string; maxAttempts: number },
    ): Promise<DeliveryRow> {
      const { rows } = await db.query<DeliveryRow>(
        `INSERT INTO webhook_deliveries (tenant_id, app_id, kind, endpoint_id, event_type, body, max_attempts, next_attempt_at)
         VALUES ($1, $2, 'webhook', $3, $4, $5, $6, now()) RETURNING *`,
        [scope.tenantId, scope.appId, endpointId, c.eventType, c.body, c.maxAttempts],
      );
      return rows[0];
    },

    /** A callback delivery: its own target and secret, the body exactly as given. */
    async insertCallback(
      scope: Scope,
      c: { url: string; secret: string; eventType: string; body: string; maxAttempts: number },
    ): Promise<string> {
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (tenant_id, app_id, kind, url, secret, event_type, body, max_attempts, next_attempt_at)
         VALUES ($1, $2, 'callback', $3, $4, $5, $6, $7, now()) RETURNING id`,
        [scope.tenantId, scope.appId, c.url, box.seal(c.secret), c.eventType, c.body, c.maxAttempts],
      );
      return rows[0].id;
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
