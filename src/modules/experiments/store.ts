import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Variant } from './definitions.js';

export type ExperimentStatus = 'draft' | 'running' | 'stopped' | 'shipped';

export interface ExperimentRow {
  id: string;
  key: string;
  name: string;
  hypothesis: string | null;
  variants: Variant[];
  coverage_pct: number;
  targeting: { rules: unknown[] } | null;
  primary_metric: string;
  secondary_metrics: string[];
  guardrail_metrics: string[];
  attribution_days: number;
  sequential_tuning: number;
  status: ExperimentStatus;
  started_at: Date | null;
  stopped_at: Date | null;
  shipped_at: Date | null;
  shipped_variant: string | null;
  created_by: string | null;
  updated_by: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The writable fields of an experiment. */
export type ExperimentWrite = Pick<
  ExperimentRow,
  | 'key'
  | 'name'
  | 'hypothesis'
  | 'variants'
  | 'coverage_pct'
  | 'targeting'
  | 'primary_metric'
  | 'secondary_metrics'
  | 'guardrail_metrics'
  | 'attribution_days'
  | 'sequential_tuning'
>;

const COLS = `id, key, name, hypothesis, variants, coverage_pct, targeting, primary_metric, secondary_metrics,
  guardrail_metrics, attribution_days, sequential_tuning, status, started_at, stopped_at, shipped_at,
  shipped_variant, created_by, updated_by, created_at, updated_at`;

const writeArgs = (w: ExperimentWrite) => [
  w.key,
  w.name,
  w.hypothesis,
  JSON.stringify(w.variants),
  w.coverage_pct,
  w.targeting === null ? null : JSON.stringify(w.targeting),
  w.primary_metric,
  w.secondary_metrics,
  w.guardrail_metrics,
  w.attribution_days,
  w.sequential_tuning,
];

export const isUniqueViolation = (e: unknown) => (e as { code?: string }).code === '23505';

export function createExperimentStore(db: Queryable) {
  const q = (tx?: Queryable) => tx ?? db;
  return {
    async count(scope: Scope, tx: Tx): Promise<number> {
      const r = await tx.query(`SELECT count(*)::int AS n FROM experiments WHERE tenant_id = $1 AND app_id = $2`, [
        scope.tenantId,
        scope.appId,
      ]);
      return r.rows[0].n;
    },

    async insert(scope: Scope, w: ExperimentWrite, actor: string, tx: Tx): Promise<ExperimentRow> {
      const r = await tx.query(
        `INSERT INTO experiments (tenant_id, app_id, key, name, hypothesis, variants, coverage_pct, targeting,
           primary_metric, secondary_metrics, guardrail_metrics, attribution_days, sequential_tuning, created_by, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14) RETURNING ${COLS}`,
        [scope.tenantId, scope.appId, ...writeArgs(w), actor],
      );
      return r.rows[0];
    },

    async get(scope: Scope, id: string, tx?: Queryable, forUpdate = false): Promise<ExperimentRow | null> {
      const r = await q(tx).query(
        `SELECT ${COLS} FROM experiments WHERE tenant_id = $1 AND app_id = $2 AND id = $3${forUpdate ? ' FOR UPDATE' : ''}`,
        [scope.tenantId, scope.appId, id],
      );
      return r.rows[0] ?? null;
    },

    async list(
      scope: Scope,
      opts: { status?: ExperimentStatus; limit: number; offset: number },
    ): Promise<{ rows: ExperimentRow[]; total: number }> {
      const args = [scope.tenantId, scope.appId, opts.status ?? null];
      const where = `tenant_id = $1 AND app_id = $2 AND ($3::text IS NULL OR status = $3)`;
      const [rows, total] = await Promise.all([
        db.query(`SELECT ${COLS} FROM experiments WHERE ${where} ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`, [
          ...args,
          opts.limit,
          opts.offset,
        ]),
        db.query(`SELECT count(*)::int AS n FROM experiments WHERE ${where}`, args),
      ]);
      return { rows: rows.rows, total: total.rows[0].n };
    },

    async update(scope: Scope, id: string, w: ExperimentWrite, actor: string, tx: Tx): Promise<ExperimentRow> {
      const r = await tx.query(
        `UPDATE experiments SET key = $4, name = $5, hypothesis = $6, variants = $7, coverage_pct = $8, targeting = $9,
           primary_metric = $10, secondary_metrics = $11, guardrail_metrics = $12, attribution_days = $13,
           sequential_tuning = $14, updated_by = $15, updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND id = $3 RETURNING ${COLS}`,
        [scope.tenantId, scope.appId, id, ...writeArgs(w), actor],
      );
      return r.rows[0];
    },

    /** Moves to `status`, stamping the matching time (and the shipped variant). */
    async setStatus(
      scope: Scope,
      id: string,
      status: Exclude<ExperimentStatus, 'draft'>,
      shippedVariant: string | null,
      actor: string,
      tx: Tx,
    ): Promise<ExperimentRow> {
      const r = await tx.query(
        `UPDATE experiments SET status = $4,
           started_at = CASE WHEN $4 = 'running' THEN clock_timestamp() ELSE started_at END,
           stopped_at = CASE WHEN $4 = 'stopped' OR ($4 = 'shipped' AND stopped_at IS NULL) THEN clock_timestamp() ELSE stopped_at END,
           shipped_at = CASE WHEN $4 = 'shipped' THEN clock_timestamp() ELSE shipped_at END,
           shipped_variant = coalesce($5, shipped_variant), updated_by = $6, updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND id = $3 RETURNING ${COLS}`,
        [scope.tenantId, scope.appId, id, status, shippedVariant, actor],
      );
      return r.rows[0];
    },

    async remove(scope: Scope, id: string, tx: Tx): Promise<void> {
      await tx.query(`DELETE FROM experiments WHERE tenant_id = $1 AND app_id = $2 AND id = $3`, [
        scope.tenantId,
        scope.appId,
        id,
      ]);
    },

    /** The bundle's experiments: every started one (running, stopped, shipped), by key. */
    async bundled(scope: Scope, tx: Queryable): Promise<ExperimentRow[]> {
      const r = await tx.query(
        `SELECT ${COLS} FROM experiments WHERE tenant_id = $1 AND app_id = $2 AND status <> 'draft' ORDER BY key`,
        [scope.tenantId, scope.appId],
      );
      return r.rows;
    },

    /** A webhook event (outbox row), written in the change's transaction. */
    async outbox(scope: Scope, eventType: string, payload: unknown, tx: Tx): Promise<void> {
      await tx.query(
        `INSERT INTO outbox (tenant_id, app_id, environment, event_type, payload) VALUES ($1, $2, 'production', $3, $4)`,
        [scope.tenantId, scope.appId, eventType, JSON.stringify(payload)],
      );
    },
  };
}

export type ExperimentStore = ReturnType<typeof createExperimentStore>;
