import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export type ContentKind = 'onboarding_flow' | 'paywall' | 'in_app_message';
export type ItemStatus = 'draft' | 'published';

export interface ItemRow {
  id: string;
  kind: ContentKind;
  name: string;
  body: Record<string, unknown>;
  sdk_min_version: string | null;
  option_set_ids: string[];
  status: ItemStatus;
  published_at: Date | null;
  published_by: string | null;
  created_by: string | null;
  updated_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface FlagRow {
  key: string;
  enabled: boolean;
  rules: unknown[];
  rollout_pct: number;
  description: string | null;
  sdk_min_version: string | null;
  created_by: string | null;
  updated_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface RemoteConfigRow {
  values: Record<string, unknown>;
  updated_by: string | null;
  updated_at: Date | null;
}

/** Everything the bundle is built from: published items, remote config and flags. */
export interface PublishedContent {
  items: ItemRow[];
  remoteConfig: Record<string, unknown>;
  flags: FlagRow[];
}

export interface ItemWrite {
  name: string;
  body: Record<string, unknown>;
  sdk_min_version: string | null;
  option_set_ids: string[];
}

const ITEM_COLS = `id, kind, name, body, sdk_min_version, option_set_ids, status, published_at, published_by, created_by, updated_by, created_at, updated_at`;
const FLAG_COLS = `key, enabled, rules, rollout_pct, description, sdk_min_version, created_by, updated_by, created_at, updated_at`;

export function createContentStore(db: Queryable) {
  const q = (tx?: Queryable) => tx ?? db;
  return {
    async countItems(scope: Scope, kind: ContentKind, tx?: Tx): Promise<number> {
      const r = await q(tx).query(
        `SELECT count(*)::int AS n FROM content_items WHERE tenant_id = $1 AND app_id = $2 AND kind = $3`,
        [scope.tenantId, scope.appId, kind],
      );
      return r.rows[0].n;
    },

    async insertItem(scope: Scope, kind: ContentKind, w: ItemWrite, actor: string, tx?: Tx): Promise<ItemRow> {
      const r = await q(tx).query(
        `INSERT INTO content_items (tenant_id, app_id, kind, name, body, sdk_min_version, option_set_ids, created_by, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING ${ITEM_COLS}`,
        [scope.tenantId, scope.appId, kind, w.name, JSON.stringify(w.body), w.sdk_min_version, w.option_set_ids, actor],
      );
      return r.rows[0];
    },

    async getItem(scope: Scope, kind: ContentKind, id: string, tx?: Tx, forUpdate = false): Promise<ItemRow | null> {
      const r = await q(tx).query(
        `SELECT ${ITEM_COLS} FROM content_items WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id = $4${forUpdate ? ' FOR UPDATE' : ''}`,
        [scope.tenantId, scope.appId, kind, id],
      );
      return r.rows[0] ?? null;
    },

    async listItems(
      scope: Scope,
      kind: ContentKind,
      opts: { status?: ItemStatus; limit: number; offset: number },
    ): Promise<{ rows: ItemRow[]; total: number }> {
      const args = [scope.tenantId, scope.appId, kind, opts.status ?? null];
      const where = `tenant_id = $1 AND app_id = $2 AND kind = $3 AND ($4::text IS NULL OR status = $4)`;
      const [rows, total] = await Promise.all([
        db.query(
          `SELECT ${ITEM_COLS} FROM content_items WHERE ${where} ORDER BY created_at DESC, id LIMIT $5 OFFSET $6`,
          [...args, opts.limit, opts.offset],
        ),
        db.query(`SELECT count(*)::int AS n FROM content_items WHERE ${where}`, args),
      ]);
      return { rows: rows.rows, total: total.rows[0].n };
    },

    async updateItem(
      scope: Scope,
      kind: ContentKind,
      id: string,
      w: ItemWrite,
      actor: string,
      tx: Tx,
    ): Promise<ItemRow> {
      const r = await tx.query(
        `UPDATE content_items SET name = $5, body = $6, sdk_min_version = $7, option_set_ids = $8, updated_by = $9, updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id = $4 RETURNING ${ITEM_COLS}`,
        [
          scope.tenantId,
          scope.appId,
          kind,
          id,
          w.name,
          JSON.stringify(w.body),
          w.sdk_min_version,
          w.option_set_ids,
          actor,
        ],
      );
      return r.rows[0];
    },

    async setStatus(
      scope: Scope,
      kind: ContentKind,
      id: string,
      status: ItemStatus,
      actor: string,
      tx: Tx,
    ): Promise<ItemRow> {
      const published = status === 'published';
      const r = await tx.query(
        `UPDATE content_items SET status = $5,
           published_at = CASE WHEN $6 THEN clock_timestamp() ELSE NULL END,
           published_by = CASE WHEN $6 THEN $7::uuid ELSE NULL END,
           updated_by = $7, updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id = $4 RETURNING ${ITEM_COLS}`,
        [scope.tenantId, scope.appId, kind, id, status, published, actor],
      );
      return r.rows[0];
    },

    async deleteItem(scope: Scope, kind: ContentKind, id: string, tx: Tx): Promise<void> {
      await tx.query(`DELETE FROM content_items WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id = $4`, [
        scope.tenantId,
        scope.appId,
        kind,
        id,
      ]);
    },

    async getRemoteConfig(scope: Scope, tx?: Queryable): Promise<RemoteConfigRow> {
      const r = await q(tx).query(
        `SELECT "values", updated_by, updated_at FROM remote_config WHERE tenant_id = $1 AND app_id = $2`,
        [scope.tenantId, scope.appId],
      );
      return r.rows[0] ?? { values: {}, updated_by: null, updated_at: null };
    },

    /** Replaces the values; null when they were already equal (no change, no new bundle). */
    async putRemoteConfig(
      scope: Scope,
      values: Record<string, unknown>,
      actor: string,
      tx: Tx,
    ): Promise<RemoteConfigRow | null> {
      const r = await tx.query(
        `INSERT INTO remote_config (tenant_id, app_id, "values", updated_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (app_id) DO UPDATE SET "values" = EXCLUDED."values", updated_by = EXCLUDED.updated_by, updated_at = now()
           WHERE remote_config."values" IS DISTINCT FROM EXCLUDED."values"
         RETURNING "values", updated_by, updated_at`,
        [scope.tenantId, scope.appId, JSON.stringify(values), actor],
      );
      return r.rows[0] ?? null;
    },

    async listFlags(
      scope: Scope,
      opts: { limit: number; offset: number },
    ): Promise<{ rows: FlagRow[]; total: number }> {
      const [rows, total] = await Promise.all([
        db.query(
          `SELECT ${FLAG_COLS} FROM feature_flags WHERE tenant_id = $1 AND app_id = $2 ORDER BY key LIMIT $3 OFFSET $4`,
          [scope.tenantId, scope.appId, opts.limit, opts.offset],
        ),
        db.query(`SELECT count(*)::int AS n FROM feature_flags WHERE tenant_id = $1 AND app_id = $2`, [
          scope.tenantId,
          scope.appId,
        ]),
      ]);
      return { rows: rows.rows, total: total.rows[0].n };
    },

    async getFlag(scope: Scope, key: string, tx?: Queryable): Promise<FlagRow | null> {
      const r = await q(tx).query(
        `SELECT ${FLAG_COLS} FROM feature_flags WHERE tenant_id = $1 AND app_id = $2 AND key = $3`,
        [scope.tenantId, scope.appId, key],
      );
      return r.rows[0] ?? null;
    },

    async countFlags(scope: Scope, tx: Tx): Promise<number> {
      const r = await tx.query(`SELECT count(*)::int AS n FROM feature_flags WHERE tenant_id = $1 AND app_id = $2`, [
        scope.tenantId,
        scope.appId,
      ]);
      return r.rows[0].n;
    },

    /** Upserts a flag; `changed` is false when the stored flag was already identical. */
    async putFlag(
      scope: Scope,
      key: string,
      f: {
        enabled: boolean;
        rules: unknown[];
        rollout_pct: number;
        description: string | null;
        sdk_min_version: string | null;
      },
      actor: string,
      tx: Tx,
    ): Promise<{ row: FlagRow; created: boolean; changed: boolean }> {
      const before = await tx.query(
        `SELECT ${FLAG_COLS} FROM feature_flags WHERE tenant_id = $1 AND app_id = $2 AND key = $3 FOR UPDATE`,
        [scope.tenantId, scope.appId, key],
      );
      const old: FlagRow | undefined = before.rows[0];
      if (
        old &&
        old.enabled === f.enabled &&
        old.rollout_pct === f.rollout_pct &&
        old.description === f.description &&
        old.sdk_min_version === f.sdk_min_version &&
        JSON.stringify(old.rules) === JSON.stringify(f.rules)
      ) {
        return { row: old, created: false, changed: false };
      }
      const r = await tx.query(
        `INSERT INTO feature_flags (tenant_id, app_id, key, enabled, rules, rollout_pct, description, sdk_min_version, created_by, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
         ON CONFLICT (app_id, key) DO UPDATE SET enabled = EXCLUDED.enabled, rules = EXCLUDED.rules, rollout_pct = EXCLUDED.rollout_pct,
           description = EXCLUDED.description, sdk_min_version = EXCLUDED.sdk_min_version, updated_by = EXCLUDED.updated_by, updated_at = now()
         RETURNING ${FLAG_COLS}`,
        [
          scope.tenantId,
          scope.appId,
          key,
          f.enabled,
          JSON.stringify(f.rules),
          f.rollout_pct,
          f.description,
          f.sdk_min_version,
          actor,
        ],
      );
      return { row: r.rows[0], created: !old, changed: true };
    },

    async deleteFlag(scope: Scope, key: string, tx: Tx): Promise<boolean> {
      const r = await tx.query(`DELETE FROM feature_flags WHERE tenant_id = $1 AND app_id = $2 AND key = $3`, [
        scope.tenantId,
        scope.appId,
        key,
      ]);
      return (r.rowCount ?? 0) > 0;
    },

    /** The bundle's source, read inside the generating transaction (after the version lock). */
    async published(scope: Scope, tx: Queryable): Promise<PublishedContent> {
      const items = await tx.query(
        `SELECT ${ITEM_COLS} FROM content_items WHERE tenant_id = $1 AND app_id = $2 AND status = 'published' ORDER BY id`,
        [scope.tenantId, scope.appId],
      );
      const rc = await this.getRemoteConfig(scope, tx);
      const flags = await tx.query(
        `SELECT ${FLAG_COLS} FROM feature_flags WHERE tenant_id = $1 AND app_id = $2 ORDER BY key`,
        [scope.tenantId, scope.appId],
      );
      return { items: items.rows, remoteConfig: rc.values, flags: flags.rows };
    },

    async flowReferences(scope: Scope, setId: string): Promise<boolean> {
      const r = await db.query(
        `SELECT 1 FROM content_items WHERE tenant_id = $1 AND app_id = $2 AND kind = 'onboarding_flow' AND status = 'published' AND option_set_ids @> ARRAY[$3]::text[] LIMIT 1`,
        [scope.tenantId, scope.appId, setId],
      );
      return (r.rowCount ?? 0) > 0;
    },
  };
}

export type ContentStore = ReturnType<typeof createContentStore>;
