import { withTx, type Db } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export interface VariantRow {
  id: string;
  position: number;
  name: string;
  role: 'control' | 'treatment';
  creative_id: string;
  adsquad_id: string;
  ad_id: string | null;
  status: 'ACTIVE' | 'PAUSED';
}

export interface ExperimentRow {
  id: string;
  ad_account_id: string;
  campaign_id: string;
  name: string;
  status: 'running' | 'stopped';
  dry_run: boolean;
  created_at: Date;
  variants: VariantRow[];
}

export function createExperimentStore(db: Db) {
  async function variants(s: Scope, ids: string[]): Promise<Map<string, VariantRow[]>> {
    const { rows } = await db.query(
      `SELECT experiment_id, id, position, name, role, creative_id, adsquad_id, ad_id, status FROM ad_network_experiment_variants
       WHERE tenant_id = $1 AND app_id = $2 AND experiment_id = ANY($3) ORDER BY position`,
      [s.tenantId, s.appId, ids],
    );
    const m = new Map<string, VariantRow[]>();
    for (const { experiment_id, ...v } of rows) m.set(experiment_id, [...(m.get(experiment_id) ?? []), v]);
    return m;
  }
  return {
    async byKey(s: Scope, key: string): Promise<ExperimentRow | undefined> {
      const { rows } = await db.query(
        'SELECT id FROM ad_network_experiments WHERE tenant_id = $1 AND app_id = $2 AND idempotency_key = $3',
        [s.tenantId, s.appId, key],
      );
      return rows[0] ? this.get(s, rows[0].id) : undefined;
    },
    async insert(
      s: Scope,
      e: Omit<ExperimentRow, 'id' | 'created_at' | 'variants' | 'status'> & {
        key: string;
        actor: string | null;
        variants: Omit<VariantRow, 'id'>[];
      },
    ): Promise<string> {
      return withTx(db, async (tx) => {
        const { rows } = await tx.query(
          `INSERT INTO ad_network_experiments (tenant_id, app_id, ad_account_id, campaign_id, name, status, dry_run, idempotency_key, created_by)
           VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8) RETURNING id`,
          [s.tenantId, s.appId, e.ad_account_id, e.campaign_id, e.name, e.dry_run, e.key, e.actor],
        );
        for (const v of e.variants) {
          await tx.query(
            `INSERT INTO ad_network_experiment_variants (experiment_id, tenant_id, app_id, position, name, role, creative_id, adsquad_id, ad_id, status)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
            [
              rows[0].id,
              s.tenantId,
              s.appId,
              v.position,
              v.name,
              v.role,
              v.creative_id,
              v.adsquad_id,
              v.ad_id,
              v.status,
            ],
          );
        }
        return rows[0].id as string;
      });
    },
    async get(s: Scope, id: string): Promise<ExperimentRow | undefined> {
      const { rows } = await db.query(
        'SELECT * FROM ad_network_experiments WHERE tenant_id = $1 AND app_id = $2 AND id = $3',
        [s.tenantId, s.appId, id],
      );
      if (!rows[0]) return undefined;
      return { ...rows[0], variants: (await variants(s, [id])).get(id) ?? [] };
    },
    async list(
      s: Scope,
      accountId: string,
      limit: number,
      offset: number,
    ): Promise<{ rows: ExperimentRow[]; total: number }> {
      const where = 'WHERE tenant_id = $1 AND app_id = $2 AND ad_account_id = $3';
      const { rows } = await db.query(
        `SELECT * FROM ad_network_experiments ${where} ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`,
        [s.tenantId, s.appId, accountId, limit, offset],
      );
      const total = await db.query(`SELECT count(*)::int AS n FROM ad_network_experiments ${where}`, [
        s.tenantId,
        s.appId,
        accountId,
      ]);
      const vs = await variants(
        s,
        rows.map((r) => r.id),
      );
      return { rows: rows.map((r) => ({ ...r, variants: vs.get(r.id) ?? [] })), total: total.rows[0].n };
    },
    async setVariantStatus(s: Scope, experimentId: string, variantId: string, status: 'ACTIVE' | 'PAUSED') {
      await db.query(
        'UPDATE ad_network_experiment_variants SET status = $5 WHERE tenant_id = $1 AND app_id = $2 AND experiment_id = $3 AND id = $4',
        [s.tenantId, s.appId, experimentId, variantId, status],
      );
    },
    async setStatus(s: Scope, id: string, status: 'running' | 'stopped') {
      await db.query('UPDATE ad_network_experiments SET status = $4 WHERE tenant_id = $1 AND app_id = $2 AND id = $3', [
        s.tenantId,
        s.appId,
        id,
        status,
      ]);
    },
  };
}

export type ExperimentStore = ReturnType<typeof createExperimentStore>;
