import type { Queryable, Tx } from '../../db/pool.js';
import { type ErasedRows, eraseDevices } from '../analytics/fold/erase.js';
import { eraseExperimentDevices } from '../experiments/fold-store.js';
import type { Scope } from '../../types/domain.js';

/** Who a request reaches once expanded: every anon id and user id to erase, in clear (while it runs). */
export interface Reach {
  anonIds: string[];
  userIds: string[];
}

export interface OptionLockKey {
  set_id: string;
  value: string;
}

/** LIKE patterns that find an id as a JSON string anywhere in a stored payload or body. */
export function jsonStringPatterns(reach: Reach): string[] {
  const escape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  return [...reach.anonIds, ...reach.userIds].map((id) => `%${escape(JSON.stringify(id))}%`);
}

/** The locks among candidates (c) that no remaining event of the app holds. */
const CANDIDATES = 'unnest($3::text[], $4::text[]) AS c(set_id, value)';
const ORPHAN_LOCKS = `
 WHERE l.tenant_id = $1 AND l.app_id = $2 AND l.set_id = c.set_id AND l.value = c.value
   AND NOT EXISTS (
     SELECT 1 FROM events e WHERE e.tenant_id = $1 AND e.app_id = $2 AND e.payload::text LIKE '%option_set_id%'
        AND (e.payload::jsonb) -> 'properties' ->> 'option_set_id' = c.set_id
        AND ((e.payload::jsonb) -> 'properties' -> 'option_value' = to_jsonb(c.value)
             OR (e.payload::jsonb) -> 'properties' -> 'option_value' @> jsonb_build_array(c.value)))`;

const lockParams = (scope: Scope, locks: OptionLockKey[]) => [
  scope.tenantId,
  scope.appId,
  locks.map((l) => l.set_id),
  locks.map((l) => l.value),
];

const SUBJECT_EVENTS = `tenant_id = $1 AND app_id = $2 AND (anon_id = ANY ($3::uuid[]) OR user_id = ANY ($4::text[]))`;

/**
 * The erasure of a person store by store (docs/privacy.md). Each function is one statement or one
 * transaction's worth, run in the caller's transaction with the step's receipt, so a step is done
 * whole or not at all; each has a search that finds what is left (the receipt's `remaining`).
 */
export function createEraseStore(db: Queryable) {
  return {
    /** Every anon id the user ids were ever linked to (identify, or an event carrying both), both environments. */
    async expand(scope: Scope, anonIds: string[], userIds: string[]): Promise<Reach> {
      const { rows } = await db.query<{ anon_id: string }>(
        `SELECT anon_id::text FROM identities WHERE tenant_id = $1 AND app_id = $2 AND user_id = ANY ($3::text[])
         UNION SELECT anon_id::text FROM identity_links WHERE tenant_id = $1 AND app_id = $2 AND user_id = ANY ($3::text[])
         UNION SELECT anon_id::text FROM events
                WHERE tenant_id = $1 AND app_id = $2 AND user_id = ANY ($3::text[])`,
        [scope.tenantId, scope.appId, userIds],
      );
      const all = new Set([...anonIds, ...rows.map((r) => r.anon_id)]);
      return { anonIds: [...all].sort(), userIds: [...new Set(userIds)].sort() };
    },

    /** Deletes the raw events (every partition) and answers their count, time span and option locks. */
    async deleteEvents(
      scope: Scope,
      reach: Reach,
      tx: Tx,
    ): Promise<{
      deleted: number;
      from: string | null;
      to: string | null;
      lastSeq: number;
      locks: OptionLockKey[];
    }> {
      const { rows } = await tx.query(
        `WITH gone AS (DELETE FROM events WHERE ${SUBJECT_EVENTS} RETURNING ts, seq, payload),
         props AS (SELECT (payload::jsonb) -> 'properties' AS p FROM gone WHERE payload::text LIKE '%option_set_id%'),
         locks AS (
           SELECT DISTINCT p ->> 'option_set_id' AS set_id, v AS value FROM props,
                  LATERAL jsonb_array_elements_text(CASE jsonb_typeof(p -> 'option_value') WHEN 'array'
                          THEN p -> 'option_value' ELSE jsonb_build_array(p -> 'option_value') END) v
            WHERE jsonb_typeof(p -> 'option_set_id') = 'string')
         SELECT (SELECT count(*)::int FROM gone) AS deleted, (SELECT min(ts) FROM gone) AS "from",
                (SELECT max(ts) FROM gone) AS "to",
                (SELECT coalesce(max(seq), 0) FROM gone) AS last_seq,
                coalesce((SELECT jsonb_agg(jsonb_build_object('set_id', set_id, 'value', value)) FROM locks), '[]') AS locks`,
        [scope.tenantId, scope.appId, reach.anonIds, reach.userIds],
      );
      const r = rows[0];
      return {
        deleted: r.deleted,
        from: r.from?.toISOString() ?? null,
        to: r.to?.toISOString() ?? null,
        lastSeq: Number(r.last_seq),
        locks: r.locks,
      };
    },

    async countEvents(scope: Scope, reach: Reach): Promise<number> {
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM events WHERE ${SUBJECT_EVENTS}`, [
        scope.tenantId,
        scope.appId,
        reach.anonIds,
        reach.userIds,
      ]);
      return rows[0].n;
    },

    /** Identify records and traits. */
    async deleteIdentity(scope: Scope, reach: Reach, tx: Tx): Promise<number> {
      const { rows } = await tx.query(
        `WITH a AS (DELETE FROM identities WHERE tenant_id = $1 AND app_id = $2
                      AND (anon_id = ANY ($3::uuid[]) OR user_id = ANY ($4::text[])) RETURNING 1),
              b AS (DELETE FROM identity_links WHERE tenant_id = $1 AND app_id = $2
                      AND (anon_id = ANY ($3::uuid[]) OR user_id = ANY ($4::text[])) RETURNING 1),
              c AS (DELETE FROM user_traits WHERE tenant_id = $1 AND app_id = $2 AND user_id = ANY ($4::text[]) RETURNING 1)
         SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c) AS n`,
        [scope.tenantId, scope.appId, reach.anonIds, reach.userIds],
      );
      return Number(rows[0].n);
    },

    async countIdentity(scope: Scope, reach: Reach): Promise<number> {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM identities WHERE tenant_id = $1 AND app_id = $2
                   AND (anon_id = ANY ($3::uuid[]) OR user_id = ANY ($4::text[])))
              + (SELECT count(*) FROM identity_links WHERE tenant_id = $1 AND app_id = $2
                   AND (anon_id = ANY ($3::uuid[]) OR user_id = ANY ($4::text[])))
              + (SELECT count(*) FROM user_traits WHERE tenant_id = $1 AND app_id = $2 AND user_id = ANY ($4::text[])) AS n`,
        [scope.tenantId, scope.appId, reach.anonIds, reach.userIds],
      );
      return Number(rows[0].n);
    },

    /** Option-set value locks that only the deleted events held (a value still used elsewhere stays locked). */
    async releaseLocks(scope: Scope, locks: OptionLockKey[], tx: Tx): Promise<number> {
      if (locks.length === 0) return 0;
      const { rowCount } = await tx.query(
        `DELETE FROM option_value_locks l USING ${CANDIDATES} ${ORPHAN_LOCKS}`,
        lockParams(scope, locks),
      );
      return rowCount ?? 0;
    },

    /** Locks of those values that no remaining event holds: what releaseLocks leaves, 0 once done. */
    async countOrphanLocks(scope: Scope, locks: OptionLockKey[]): Promise<number> {
      if (locks.length === 0) return 0;
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM option_value_locks l, ${CANDIDATES} ${ORPHAN_LOCKS}`,
        lockParams(scope, locks),
      );
      return rows[0].n;
    },

    /** Webhook events waiting in the outbox and deliveries (any state) whose bytes carry the subjects. */
    async deleteWebhookCopies(scope: Scope, reach: Reach, tx: Queryable): Promise<number> {
      const { rows } = await tx.query(
        `WITH o AS (DELETE FROM outbox WHERE tenant_id = $1 AND app_id = $2 AND payload::text LIKE ANY ($3) RETURNING 1),
              d AS (DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND app_id = $2 AND kind = 'webhook'
                      AND body LIKE ANY ($3) RETURNING 1)
         SELECT (SELECT count(*) FROM o) + (SELECT count(*) FROM d) AS n`,
        [scope.tenantId, scope.appId, jsonStringPatterns(reach)],
      );
      return Number(rows[0].n);
    },

    async countWebhookCopies(scope: Scope, reach: Reach): Promise<number> {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM outbox WHERE tenant_id = $1 AND app_id = $2 AND payload::text LIKE ANY ($3))
              + (SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1 AND app_id = $2 AND kind = 'webhook'
                   AND body LIKE ANY ($3)) AS n`,
        [scope.tenantId, scope.appId, jsonStringPatterns(reach)],
      );
      return Number(rows[0].n);
    },

    /**
     * Completed (or running) bulk exports whose window held the subjects' events expire now: their
     * download is refused and the export cleanup removes their files.
     */
    async expireExports(scope: Scope, span: { from: string; to: string }, before: string, tx: Tx): Promise<number> {
      const { rowCount } = await tx.query(
        `UPDATE exports SET expires_at = now() - interval '1 millisecond'
          WHERE tenant_id = $1 AND app_id = $2 AND status IN ('completed', 'processing') AND created_at <= $5
            AND start_date <= $4 AND end_date >= $3 AND (expires_at IS NULL OR expires_at > now())`,
        [scope.tenantId, scope.appId, span.from, span.to, before],
      );
      return rowCount ?? 0;
    },

    /** Exports that may hold the subjects' events and can still be downloaded, or still have a file. */
    async countExports(scope: Scope, span: { from: string; to: string }, before: string): Promise<number> {
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM exports
          WHERE tenant_id = $1 AND app_id = $2 AND created_at <= $5 AND start_date <= $4 AND end_date >= $3
            AND ((status = 'completed' AND file_deleted_at IS NULL) OR expires_at IS NULL OR expires_at > now())`,
        [scope.tenantId, scope.appId, span.from, span.to, before],
      );
      return rows[0].n;
    },

    /**
     * The subjects' devices out of the analytics rollups (their contributions subtracted, their rows
     * deleted); null while the fold has not passed `folded` (the seq of their last deleted event).
     */
    analytics: (scope: Scope, reach: Reach, folded: number, tx: Tx): Promise<ErasedRows | null> =>
      eraseDevices(tx, scope, reach.anonIds, folded),

    /** The subjects' devices out of the experiments' state (exposures, metric events, sums, health). */
    experiments: (scope: Scope, reach: Reach, tx: Tx): Promise<number> =>
      eraseExperimentDevices(tx, scope, reach.anonIds),

    async countExperiments(scope: Scope, reach: Reach): Promise<number> {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM exp_devices WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[]))
              + (SELECT count(*) FROM exp_events WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[])) AS n`,
        [scope.tenantId, scope.appId, reach.anonIds],
      );
      return Number(rows[0].n);
    },

    /** The subjects' rows left in the analytics read models (device, session, purchase, funnel-step rows). */
    async countAnalytics(scope: Scope, reach: Reach): Promise<number> {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM an_devices WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[]))
              + (SELECT count(*) FROM an_sessions WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[]))
              + (SELECT count(*) FROM an_purchases WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[]))
              + (SELECT count(*) FROM an_steps WHERE tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[])) AS n`,
        [scope.tenantId, scope.appId, reach.anonIds],
      );
      return Number(rows[0].n);
    },
  };
}

export type EraseStore = ReturnType<typeof createEraseStore>;
