import type { Db, Queryable } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import { type SecretBox, UnknownKeyError } from '../../lib/secret-box.js';
import type { AttemptLogEntry, DeliveryRow } from './store.js';

/**
 * The delivery worker's SQL. Unlike store.ts these statements work across tenants on purpose:
 * the worker drains one shared queue. Each row it touches carries its own tenant and app ids.
 */

/** A delivery row as the worker claims it, with what it needs to send: the endpoint's URL and secrets. */
export interface ClaimedDelivery
  extends Pick<
    DeliveryRow,
    | 'id'
    | 'tenant_id'
    | 'app_id'
    | 'kind'
    | 'endpoint_id'
    | 'environment'
    | 'event_type'
    | 'body'
    | 'attempts'
    | 'max_attempts'
  > {
  url: string;
  secrets: string[];
  /** The endpoint has a failure streak that a success must end. */
  endpoint_failing: boolean;
}

export interface SuccessOutcome {
  id: string;
  attempts: number;
  statusCode: number;
  durationMs: number;
}

const LOG_CAP = 25;

export function createQueueStore(db: Db, box: SecretBox) {
  return {
    /**
     * Moves up to `limit` outbox rows into deliveries, one per enabled endpoint of the row's app
     * subscribed to its type, and deletes them from the outbox, in one statement (atomic; the
     * payload never travels through Node). SKIP LOCKED lets many workers drain it at once;
     * deleting (rather than a watermark) is immune to ids that commit out of order.
     */
    async fanOut(
      limit: number,
      maxAttempts: number,
    ): Promise<{ events: number; deliveries: number; byEndpoint: Record<string, number> }> {
      const { rows } = await db.query<{
        events: number;
        deliveries: number;
        by_endpoint: Record<string, number> | null;
      }>(
        `WITH claimed AS (
           SELECT id, tenant_id, app_id, environment, event_type, payload, created_at
             FROM outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
         ), consumed AS (
           DELETE FROM outbox o USING claimed c WHERE o.id = c.id
         ), created AS (
           INSERT INTO webhook_deliveries (tenant_id, app_id, kind, endpoint_id, environment, event_type, body, max_attempts, next_attempt_at)
           SELECT c.tenant_id, c.app_id, 'webhook', e.id, c.environment, c.event_type,
                  -- { type, timestamp, environment, data } in that order; data is the outbox payload's
                  -- text as written (json, not jsonb: an event's envelope keeps its bytes).
                  '{"type":' || to_json(c.event_type)::text
                    || ',"timestamp":"' || to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                    || '","environment":' || to_json(c.environment)::text
                    || ',"data":' || c.payload::text || '}',
                  $2, now()
             FROM claimed c
             JOIN webhook_endpoints e ON e.app_id = c.app_id AND e.tenant_id = c.tenant_id AND e.enabled AND c.event_type = ANY (e.events)
           RETURNING endpoint_id
         )
         SELECT (SELECT count(*) FROM claimed)::int AS events, (SELECT count(*) FROM created)::int AS deliveries,
                (SELECT jsonb_object_agg(endpoint_id, n) FROM (SELECT endpoint_id, count(*) AS n FROM created GROUP BY 1) g) AS by_endpoint`,
        [limit, maxAttempts],
      );
      return { events: rows[0].events, deliveries: rows[0].deliveries, byEndpoint: rows[0].by_endpoint ?? {} };
    },

    /**
     * Takes due deliveries under a lease and counts the attempt now. The attempt number is the
     * fence: only the holder of that attempt can record its outcome, so two workers never send
     * the same attempt, and a worker that died mid-send is retried once the lease lapses.
     */
    async claimDue(
      limit: number,
      leaseSeconds: number,
      cap: { perEndpoint: number; inFlight: Map<string, number> },
      /** A row whose secret this instance's keys cannot open (an instance left on an old ENCRYPTION_KEY). */
      onUnopenable: (err: unknown) => void = () => undefined,
    ): Promise<ClaimedDelivery[]> {
      const saturated = [...cap.inFlight].filter(([, n]) => n >= cap.perEndpoint).map(([id]) => id);
      const { rows } = await db.query<ClaimedDelivery>(
        `WITH seen AS (
           -- Endpoints at the cap are skipped in the scan itself, so rows of other endpoints behind
           -- a large backlog of one slow endpoint are still found.
           SELECT id, endpoint_id, next_attempt_at FROM webhook_deliveries
            WHERE status = 'pending' AND next_attempt_at <= now()
              AND (leased_until IS NULL OR leased_until < now())
              AND (endpoint_id IS NULL OR NOT (endpoint_id = ANY ($3::uuid[])))
            ORDER BY next_attempt_at
            LIMIT $1 * 4
         ), ranked AS (
           SELECT id, row_number() OVER (PARTITION BY coalesce(endpoint_id, id) ORDER BY next_attempt_at) AS rn,
                  $4::int - coalesce(($5::jsonb ->> endpoint_id::text)::int, 0) AS room
             FROM seen
         ), due AS (
           SELECT d.id, coalesce(d.url, e.url) AS url,
                  CASE WHEN d.kind = 'callback' THEN ARRAY[d.secret]
                       WHEN e.previous_secret IS NOT NULL AND e.previous_secret_expires_at > now() THEN ARRAY[e.secret, e.previous_secret]
                       ELSE ARRAY[e.secret] END AS secrets,
                  coalesce(e.failing_since IS NOT NULL, false) AS endpoint_failing
             FROM webhook_deliveries d LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.id IN (SELECT id FROM ranked WHERE rn <= room)
              AND d.status = 'pending' AND d.next_attempt_at <= now()
              AND (d.leased_until IS NULL OR d.leased_until < now())
              AND (d.kind = 'callback' OR e.enabled)
            ORDER BY d.next_attempt_at
            LIMIT $1
            FOR UPDATE OF d SKIP LOCKED
         )
         UPDATE webhook_deliveries d
            SET attempts = d.attempts + 1, leased_until = now() + make_interval(secs => $2), last_attempt_at = now()
           FROM due WHERE d.id = due.id
         RETURNING d.id, d.tenant_id, d.app_id, d.kind, d.endpoint_id, d.environment, d.event_type, d.body,
                   d.attempts, d.max_attempts, due.url, due.secrets, due.endpoint_failing`,
        [limit, leaseSeconds, saturated, cap.perEndpoint, JSON.stringify(Object.fromEntries(cap.inFlight))],
      );
      // Secrets are sealed at rest; opened only here, for signing. A row this instance cannot open is
      // handed back at once (lease and attempt undone) for an instance with the right key to send.
      const unopenable: string[] = [];
      const ready = rows.filter((r) => {
        try {
          r.secrets = r.secrets.map(box.open);
          return true;
        } catch (err) {
          if (!(err instanceof UnknownKeyError)) throw err;
          if (unopenable.length === 0) onUnopenable(err);
          unopenable.push(r.id);
          return false;
        }
      });
      if (unopenable.length > 0)
        await db.query(
          'UPDATE webhook_deliveries SET leased_until = NULL, attempts = attempts - 1 WHERE id = ANY($1::uuid[])',
          [unopenable],
        );
      return ready;
    },

    /**
     * Records one attempt's outcome. `retryInS` null = no further automatic attempt.
     * Returns false when the lease was lost (another worker owns a newer attempt).
     */
    async recordOutcome(
      d: Pick<ClaimedDelivery, 'id' | 'attempts'>,
      o: {
        succeeded: boolean;
        retryInS: number | null;
        statusCode: number | null;
        error: string | null;
        durationMs: number;
      },
    ): Promise<boolean> {
      const entry: AttemptLogEntry = {
        attempt: d.attempts,
        at: new Date().toISOString(),
        status_code: o.statusCode,
        duration_ms: o.durationMs,
        error: o.error,
      };
      const { rowCount } = await db.query(
        `UPDATE webhook_deliveries SET
           status = CASE WHEN $3 THEN 'succeeded' WHEN $4::float8 IS NULL THEN 'failed' ELSE 'pending' END,
           next_attempt_at = CASE WHEN $3 OR $4::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $4::float8) END,
           succeeded_at = CASE WHEN $3 THEN now() ELSE succeeded_at END,
           leased_until = NULL,
           last_status_code = $5, last_error = $6, last_duration_ms = $7,
           attempt_log = CASE WHEN jsonb_array_length(attempt_log) >= ${LOG_CAP} THEN (attempt_log - 0) ELSE attempt_log END || $8::jsonb
         WHERE id = $1 AND attempts = $2 AND leased_until IS NOT NULL`,
        [d.id, d.attempts, o.succeeded, o.retryInS, o.statusCode, o.error, o.durationMs, JSON.stringify([entry])],
      );
      return (rowCount ?? 0) > 0;
    },

    /** Successful attempts, written in one statement (the common case, batched by the worker); fenced like recordOutcome. */
    async recordSuccesses(items: SuccessOutcome[]): Promise<void> {
      const at = new Date().toISOString();
      const rows = items.map((i) => ({
        id: i.id,
        attempts: i.attempts,
        code: i.statusCode,
        ms: i.durationMs,
        entry: [
          {
            attempt: i.attempts,
            at,
            status_code: i.statusCode,
            duration_ms: i.durationMs,
            error: null,
          } satisfies AttemptLogEntry,
        ],
      }));
      await db.query(
        `UPDATE webhook_deliveries d SET
           status = 'succeeded', succeeded_at = now(), next_attempt_at = NULL, leased_until = NULL,
           last_status_code = x.code, last_error = NULL, last_duration_ms = x.ms,
           attempt_log = CASE WHEN jsonb_array_length(d.attempt_log) >= ${LOG_CAP} THEN (d.attempt_log - 0) ELSE d.attempt_log END || x.entry
          FROM json_to_recordset($1::json) AS x(id uuid, attempts int, code int, ms int, entry jsonb)
         WHERE d.id = x.id AND d.attempts = x.attempts AND d.leased_until IS NOT NULL`,
        [JSON.stringify(rows)],
      );
    },

    /** Success ends a failure streak. */
    async endpointSucceeded(endpointId: string): Promise<void> {
      await db.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [
        endpointId,
      ]);
    },

    /** Starts or extends the failure streak; returns when it began. */
    async endpointFailed(endpointId: string): Promise<Date | null> {
      const { rows } = await db.query<{ failing_since: Date }>(
        'UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()) WHERE id = $1 RETURNING failing_since',
        [endpointId],
      );
      return rows[0]?.failing_since ?? null;
    },

    /** Disables an endpoint and fails its waiting deliveries (they can be retried by hand once it is enabled again). */
    async disableEndpoint(
      endpointId: string,
      reason: string,
    ): Promise<{ tenant_id: string; app_id: string; url: string } | null> {
      return withTx(db, async (tx) => {
        const { rows } = await tx.query<{ tenant_id: string; app_id: string; url: string }>(
          `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, disabled_at = now(), updated_at = now()
            WHERE id = $1 AND enabled RETURNING tenant_id, app_id, url`,
          [endpointId, reason],
        );
        if (rows.length > 0) await failWaiting(tx, endpointId);
        return rows[0] ?? null;
      });
    },

    async failWaiting(endpointId: string): Promise<void> {
      await failWaiting(db, endpointId);
    },

    /** Retention: deliveries older than `days` go, in bounded batches so no statement runs long. */
    async deleteOlderThan(days: number, batch = 5000): Promise<number> {
      let total = 0;
      for (;;) {
        const { rowCount } = await db.query(
          `DELETE FROM webhook_deliveries WHERE id IN (
             SELECT id FROM webhook_deliveries WHERE created_at < now() - make_interval(days => $1) LIMIT $2)`,
          [days, batch],
        );
        total += rowCount ?? 0;
        if ((rowCount ?? 0) < batch) return total;
      }
    },
  };
}

async function failWaiting(q: Queryable, endpointId: string): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = 'endpoint disabled'
      WHERE endpoint_id = $1 AND status = 'pending' AND (leased_until IS NULL OR leased_until < now())`,
    [endpointId],
  );
}

export type QueueStore = ReturnType<typeof createQueueStore>;
