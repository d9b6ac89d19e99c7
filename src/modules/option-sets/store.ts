import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../http/auth.js';

export interface StoredItem {
  item_id: number;
  ext_id: string | null;
  value: string;
  label: string;
  sort_order: number;
  option_data: Record<string, unknown> | null;
  archived: boolean;
}

/** A new version of an item (item_id null = a new item). */
export interface ItemVersion {
  item_id: number | null;
  ext_id: string | null;
  value: string;
  label: string;
  sort_order: number;
  option_data: Record<string, unknown> | null;
}

export interface PageRow {
  id: string | null;
  value: string;
  label: string;
  sort_order: number;
  option_data: Record<string, unknown> | null;
}

export interface PageQuery {
  /** Pinned version; null = the current one, read in the same statement. */
  version: number | null;
  after: { sort_order: number; value: string } | null;
  /** Folded search tokens, each must occur (already LIKE-escaped). */
  tokens: string[];
  limit: number;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createOptionSetStore(db: Queryable) {
  return {
    /** Creates the set at version 1 or bumps its version; the row lock serialises syncs of one set. */
    async bumpVersion(scope: Scope, setId: string, tx: Tx): Promise<number> {
      const { rows } = await tx.query<{ version: number }>(
        `INSERT INTO option_sets (tenant_id, app_id, set_id, version) VALUES ($1, $2, $3, 1)
         ON CONFLICT (app_id, set_id) DO UPDATE SET version = option_sets.version + 1, updated_at = now()
         WHERE option_sets.tenant_id = EXCLUDED.tenant_id
         RETURNING version`,
        [scope.tenantId, scope.appId, setId],
      );
      if (!rows[0]) throw new Error('option set belongs to another tenant');
      return rows[0].version;
    },

    /** Current rows of the items a sync names, by external id or by value. */
    async matching(scope: Scope, setId: string, ids: string[], values: string[], tx: Tx): Promise<StoredItem[]> {
      const { rows } = await tx.query<StoredItem>(
        `SELECT item_id, ext_id, value, label, sort_order, option_data, archived FROM option_items
          WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 AND valid_to IS NULL
            AND (ext_id = ANY($4::text[]) OR value = ANY($5::text[]))`,
        [scope.tenantId, scope.appId, setId, ids, values],
      );
      return rows;
    },

    async lockedValues(scope: Scope, setId: string, values: string[], tx: Tx): Promise<Set<string>> {
      if (values.length === 0) return new Set();
      const { rows } = await tx.query<{ value: string }>(
        `SELECT value FROM option_value_locks WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 AND value = ANY($4::text[])`,
        [scope.tenantId, scope.appId, setId, values],
      );
      return new Set(rows.map((r) => r.value));
    },

    /** Ends the current row of each item; their next versions are inserted by writeVersions. */
    async closeItems(scope: Scope, setId: string, itemIds: number[], version: number, tx: Tx): Promise<void> {
      if (itemIds.length === 0) return;
      await tx.query(
        `UPDATE option_items SET valid_to = $4
          WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 AND valid_to IS NULL AND item_id = ANY($5::bigint[])`,
        [scope.tenantId, scope.appId, setId, version, itemIds],
      );
    },

    /** Replace mode: every visible item not in `keep` gets an archived version. Returns how many. */
    async archiveAllExcept(scope: Scope, setId: string, keep: number[], version: number, tx: Tx): Promise<number> {
      const { rows } = await tx.query<{ n: number }>(
        `WITH closed AS (
           UPDATE option_items i SET valid_to = $4
            WHERE i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3 AND i.valid_to IS NULL AND NOT i.archived
              AND NOT EXISTS (SELECT 1 FROM unnest($5::bigint[]) k(id) WHERE k.id = i.item_id)
           RETURNING i.item_id, i.ext_id, i.value, i.label, i.sort_order, i.option_data
         ), ins AS (
           INSERT INTO option_items (tenant_id, app_id, set_id, item_id, ext_id, value, label, sort_order, option_data, archived, valid_from)
           SELECT $1, $2, $3, item_id, ext_id, value, label, sort_order, option_data, true, $4 FROM closed
           RETURNING 1
         )
         SELECT count(*)::int AS n FROM ins`,
        [scope.tenantId, scope.appId, setId, version, keep],
      );
      return rows[0]?.n ?? 0;
    },

    async writeVersions(scope: Scope, setId: string, items: ItemVersion[], version: number, tx: Tx): Promise<void> {
      if (items.length === 0) return;
      await tx.query(
        `INSERT INTO option_items (tenant_id, app_id, set_id, item_id, ext_id, value, label, sort_order, option_data, archived, valid_from)
         SELECT $1, $2, $3, COALESCE(r.item_id, nextval('option_item_seq')), r.ext_id, r.value, r.label, r.sort_order, r.option_data, false, $4
           FROM jsonb_to_recordset($5::jsonb) AS r(item_id bigint, ext_id text, value text, label text, sort_order double precision, option_data jsonb)`,
        [scope.tenantId, scope.appId, setId, version, JSON.stringify(items)],
      );
    },

    async visibleCount(scope: Scope, setId: string, tx: Tx): Promise<number> {
      const { rows } = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM option_items
          WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 AND valid_to IS NULL AND NOT archived`,
        [scope.tenantId, scope.appId, setId],
      );
      return rows[0]?.n ?? 0;
    },

    /**
     * One page of visible items in read order, at a pinned version or the current one. A single
     * statement: its snapshot makes the version and the rows agree even while syncs commit.
     * Answers null for an unknown set.
     */
    async page(scope: Scope, setId: string, q: PageQuery, tx?: Queryable): Promise<{ version: number; rows: PageRow[] } | null> {
      const params: unknown[] = [scope.tenantId, scope.appId, setId, q.version, q.limit];
      const conds: string[] = [];
      if (q.after) {
        params.push(q.after.sort_order, q.after.value);
        conds.push(`(i.sort_order, i.value) > ($${params.length - 1}::float8, $${params.length}::text)`);
      }
      for (const t of q.tokens) {
        params.push(`%${escapeLike(t)}%`);
        conds.push(`i.search_text LIKE option_fold($${params.length}::text)`);
      }
      const { rows } = await (tx ?? db).query<PageRow & { version: number; present: boolean }>(
        `SELECT s.version, p.* FROM option_sets s
           LEFT JOIN LATERAL (
             SELECT true AS present, i.ext_id AS id, i.value, i.label, i.sort_order, i.option_data FROM option_items i
              WHERE i.tenant_id = s.tenant_id AND i.app_id = s.app_id AND i.set_id = s.set_id
                AND i.valid_from <= COALESCE($4::int, s.version)
                AND (i.valid_to IS NULL OR i.valid_to > COALESCE($4::int, s.version))
                AND NOT i.archived ${conds.map((c) => `AND ${c}`).join(' ')}
              ORDER BY i.sort_order, i.value
              LIMIT $5
           ) p ON true
          WHERE s.tenant_id = $1 AND s.app_id = $2 AND s.set_id = $3
          ORDER BY p.sort_order, p.value`,
        params,
      );
      if (rows.length === 0) return null;
      return {
        version: rows[0]!.version,
        rows: rows.filter((r) => r.present).map((r) => ({ id: r.id, value: r.value, label: r.label, sort_order: r.sort_order, option_data: r.option_data })),
      };
    },
  };
}

export type OptionSetStore = ReturnType<typeof createOptionSetStore>;
