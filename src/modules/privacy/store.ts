import { randomBytes } from 'node:crypto';
import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Subject, SubjectKind } from './hash.js';

export type DeletionStatus = 'pending' | 'running' | 'done' | 'failed' | 'cancelled';

/** One store's part of a receipt. */
export interface StepReceipt {
  deleted: number;
  finished_at: string;
  /** What a search for the subjects finds in that store afterwards: 0 when verified. */
  remaining: number;
}

export interface DeletionRow {
  id: string;
  tenant_id: string;
  app_id: string;
  status: DeletionStatus;
  subjects: Subject[];
  subject_hashes: string[];
  suppress: boolean;
  requested_by: string | null;
  anon_ids: string[] | null;
  user_ids: string[] | null;
  steps: Record<string, StepReceipt>;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export interface SuppressionRow {
  hash: string;
  kind: SubjectKind;
  deletion_id: string | null;
  created_by: string | null;
  created_at: Date;
}

const COLUMNS = `id, tenant_id, app_id, status, subjects, subject_hashes, suppress, requested_by, anon_ids, user_ids,
  steps, error, created_at, started_at, completed_at`;

/** Deletion requests and suppressions of an app (SQL only here). */
export function createPrivacyStore(db: Queryable) {
  return {
    /** The app's hash key, made on first use (two racing callers get the same one). */
    async hashKey(scope: Scope, tx?: Tx): Promise<Buffer> {
      const q = tx ?? db;
      const made = await q.query<{ hash_key: Buffer }>(
        `INSERT INTO privacy_keys (app_id, tenant_id, hash_key) VALUES ($2, $1, $3)
         ON CONFLICT (app_id) DO NOTHING RETURNING hash_key`,
        [scope.tenantId, scope.appId, randomBytes(32)],
      );
      if (made.rows[0]) return made.rows[0].hash_key;
      // Another caller made it: a new statement sees its row (one statement's snapshot would not).
      const { rows } = await q.query<{ hash_key: Buffer }>(
        'SELECT hash_key FROM privacy_keys WHERE tenant_id = $1 AND app_id = $2',
        [scope.tenantId, scope.appId],
      );
      return rows[0].hash_key;
    },

    async insertDeletion(
      scope: Scope,
      d: { subjects: Subject[]; hashes: string[]; suppress: boolean; requestedBy: string },
      tx: Tx,
    ): Promise<DeletionRow> {
      const { rows } = await tx.query<DeletionRow>(
        `INSERT INTO privacy_deletions (tenant_id, app_id, subjects, subject_hashes, suppress, requested_by)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
        [scope.tenantId, scope.appId, JSON.stringify(d.subjects), d.hashes, d.suppress, d.requestedBy],
      );
      return rows[0];
    },

    async suppress(
      scope: Scope,
      items: { hash: string; kind: SubjectKind }[],
      by: { deletionId: string; userId: string },
      tx: Tx,
    ): Promise<number> {
      const { rowCount } = await tx.query(
        `INSERT INTO privacy_suppressions (tenant_id, app_id, hash, kind, deletion_id, created_by)
         SELECT $1, $2, h, k, $5, $6 FROM unnest($3::text[], $4::text[]) AS t(h, k)
         ON CONFLICT (app_id, hash) DO NOTHING`,
        [scope.tenantId, scope.appId, items.map((i) => i.hash), items.map((i) => i.kind), by.deletionId, by.userId],
      );
      return rowCount ?? 0;
    },

    async deletion(scope: Scope, id: string, tx?: Tx): Promise<DeletionRow | null> {
      const { rows } = await (tx ?? db).query<DeletionRow>(
        `SELECT ${COLUMNS} FROM privacy_deletions WHERE tenant_id = $1 AND app_id = $2 AND id = $3
         ${tx ? 'FOR UPDATE' : ''}`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    async deletions(scope: Scope, limit: number, offset: number): Promise<{ rows: DeletionRow[]; total: number }> {
      const { rows } = await db.query<DeletionRow & { total: number }>(
        `SELECT ${COLUMNS}, count(*) OVER ()::int AS total FROM privacy_deletions
          WHERE tenant_id = $1 AND app_id = $2 ORDER BY created_at DESC, id LIMIT $3 OFFSET $4`,
        [scope.tenantId, scope.appId, limit, offset],
      );
      return { rows, total: rows[0]?.total ?? 0 };
    },

    /** Cancels a pending request; null when it is not pending (or not found). */
    async cancel(scope: Scope, id: string): Promise<DeletionRow | null> {
      const { rows } = await db.query<DeletionRow>(
        `UPDATE privacy_deletions SET status = 'cancelled', subjects = '[]', completed_at = now()
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 AND status = 'pending' RETURNING ${COLUMNS}`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    /** Marks a request running (once) and answers it; null when it was cancelled or is already over. */
    async start(scope: Scope, id: string): Promise<DeletionRow | null> {
      const { rows } = await db.query<DeletionRow>(
        `UPDATE privacy_deletions SET status = 'running', started_at = coalesce(started_at, now()), heartbeat_at = now()
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 AND status IN ('pending', 'running') RETURNING ${COLUMNS}`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    /** The running job is alive: touched at every store and while it waits for the analytics rebuild. */
    async touch(scope: Scope, id: string): Promise<void> {
      await db.query(
        'UPDATE privacy_deletions SET heartbeat_at = now() WHERE tenant_id = $1 AND app_id = $2 AND id = $3',
        [scope.tenantId, scope.appId, id],
      );
    },

    /** Running deletions (every app) whose job stopped touching them for `staleS` seconds (0: all of them). */
    async stalled(staleS: number): Promise<{ id: string; tenant_id: string; app_id: string }[]> {
      const { rows } = await db.query(
        `SELECT id, tenant_id, app_id FROM privacy_deletions
          WHERE status = 'running' AND coalesce(heartbeat_at, started_at) <= now() - make_interval(secs => $1)
          ORDER BY started_at`,
        [staleS],
      );
      return rows;
    },

    async setExpansion(scope: Scope, id: string, anonIds: string[], userIds: string[], tx: Tx): Promise<void> {
      await tx.query(
        `UPDATE privacy_deletions SET anon_ids = $4, user_ids = $5 WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [scope.tenantId, scope.appId, id, anonIds, userIds],
      );
    },

    /** Records one store's receipt, in the transaction that changed the store: a step is done once. */
    async recordStep(scope: Scope, id: string, step: string, receipt: StepReceipt, tx: Queryable): Promise<void> {
      await tx.query(
        `UPDATE privacy_deletions SET steps = steps || jsonb_build_object($4::text, $5::jsonb)
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [scope.tenantId, scope.appId, id, step, JSON.stringify(receipt)],
      );
    },

    /** Ends a request: the clear identifiers go, the hashes and the receipt stay. */
    async finish(scope: Scope, id: string, status: 'done' | 'failed', error: string | null): Promise<void> {
      await db.query(
        `UPDATE privacy_deletions SET status = $4, error = $5, completed_at = now(),
                subjects = '[]', anon_ids = NULL, user_ids = NULL
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [scope.tenantId, scope.appId, id, status, error],
      );
    },

    async suppressions(
      scope: Scope,
      limit: number,
      offset: number,
    ): Promise<{ rows: SuppressionRow[]; total: number }> {
      const { rows } = await db.query<SuppressionRow & { total: number }>(
        `SELECT hash, kind, deletion_id, created_by, created_at, count(*) OVER ()::int AS total
           FROM privacy_suppressions WHERE tenant_id = $1 AND app_id = $2
          ORDER BY created_at DESC, hash LIMIT $3 OFFSET $4`,
        [scope.tenantId, scope.appId, limit, offset],
      );
      return { rows, total: rows[0]?.total ?? 0 };
    },

    async suppression(scope: Scope, hash: string): Promise<SuppressionRow | null> {
      const { rows } = await db.query<SuppressionRow>(
        `SELECT hash, kind, deletion_id, created_by, created_at FROM privacy_suppressions
          WHERE tenant_id = $1 AND app_id = $2 AND hash = $3`,
        [scope.tenantId, scope.appId, hash],
      );
      return rows[0] ?? null;
    },

    async lift(scope: Scope, hash: string): Promise<boolean> {
      const { rowCount } = await db.query(
        'DELETE FROM privacy_suppressions WHERE tenant_id = $1 AND app_id = $2 AND hash = $3',
        [scope.tenantId, scope.appId, hash],
      );
      return (rowCount ?? 0) > 0;
    },

    /** Every suppressed hash of an app, with the app's hash key (ingestion's cache). */
    async suppressedSet(scope: Scope): Promise<{ key: Buffer | null; hashes: string[] }> {
      const { rows } = await db.query<{ hash_key: Buffer | null; hashes: string[] }>(
        `SELECT (SELECT hash_key FROM privacy_keys WHERE tenant_id = $1 AND app_id = $2) AS hash_key,
                coalesce((SELECT array_agg(hash) FROM privacy_suppressions WHERE tenant_id = $1 AND app_id = $2), '{}')
                  AS hashes`,
        [scope.tenantId, scope.appId],
      );
      return { key: rows[0].hash_key, hashes: rows[0].hashes };
    },
  };
}

export type PrivacyStore = ReturnType<typeof createPrivacyStore>;
