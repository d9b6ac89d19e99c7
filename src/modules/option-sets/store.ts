import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { IndexRow, PageRow } from '../../types/option-set-rows.js';

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

export type { PageRow };

export interface PageQuery {
  /** The version to read (pinned by a cursor, or the current one). */
  version: number;
  after: { sort_order: number; value: string } | null;
  /** Search words; each must occur in the folded value + label. */
  tokens: string[];
  /** False: skip the trigram attempt (the caller knows this search is broad). */
  tryIndex?: boolean;
  limit: number;
}

/** A search matching more items than this walks the order index instead of sorting its matches. */
const SEARCH_CANDIDATES = 1000;

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

    async currentVersion(scope: Scope, setId: string): Promise<number | null> {
      // Runs on every read without a cursor: a named statement is parsed and planned once per connection.
      const { rows } = await db.query<{ version: number }>({
        name: 'option_sets_current_version',
        text: `SELECT version FROM option_sets WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3`,
        values: [scope.tenantId, scope.appId, setId],
      });
      return rows[0]?.version ?? null;
    },

    /** Flushes the search index's pending list and refreshes planner statistics. */
    async maintain(): Promise<void> {
      await db.query(`SELECT gin_clean_pending_list('option_items_search'::regclass)`);
      await db.query('ANALYZE option_items');
    },

    /**
     * Current rows of the items a sync names, by external id or by value. Joins against the
     * unnested lists (not `= ANY(array)`, which a sequential scan would test row by row).
     */
    async matching(scope: Scope, setId: string, ids: string[], values: string[], tx: Tx): Promise<StoredItem[]> {
      const cols = 'i.item_id, i.ext_id, i.value, i.label, i.sort_order, i.option_data, i.archived';
      const where = 'i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3 AND i.valid_to IS NULL';
      const { rows } = await tx.query<StoredItem>(
        `SELECT ${cols} FROM unnest($4::text[]) AS k(ext_id) JOIN option_items i ON i.ext_id = k.ext_id WHERE ${where}
         UNION
         SELECT ${cols} FROM unnest($5::text[]) AS k(value) JOIN option_items i ON i.value = k.value WHERE ${where}`,
        [scope.tenantId, scope.appId, setId, ids, values],
      );
      return rows;
    },

    async lockedValues(scope: Scope, setId: string, values: string[], tx: Tx): Promise<Set<string>> {
      if (values.length === 0) return new Set();
      const { rows } = await tx.query<{ value: string }>(
        `SELECT l.value FROM unnest($4::text[]) AS k(value)
           JOIN option_value_locks l ON l.app_id = $2 AND l.set_id = $3 AND l.value = k.value
          WHERE l.tenant_id = $1`,
        [scope.tenantId, scope.appId, setId, values],
      );
      return new Set(rows.map((r) => r.value));
    },

    /** Ends the current row of each item; their next versions are inserted by writeVersions. */
    async closeItems(scope: Scope, setId: string, itemIds: number[], version: number, tx: Tx): Promise<void> {
      if (itemIds.length === 0) return;
      await tx.query(
        `UPDATE option_items i SET valid_to = $4 FROM unnest($5::bigint[]) AS k(id)
          WHERE i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3 AND i.valid_to IS NULL AND i.item_id = k.id`,
        [scope.tenantId, scope.appId, setId, version, itemIds],
      );
    },

    /** Records that a sync named these items without changing them (replace after merges needs it). */
    async markSent(scope: Scope, setId: string, itemIds: number[], version: number, tx: Tx): Promise<void> {
      if (itemIds.length === 0) return;
      await tx.query(
        `INSERT INTO option_item_touches (tenant_id, app_id, set_id, item_id, version)
         SELECT $1, $2, $3, id, $4 FROM unnest($5::bigint[]) AS id
         ON CONFLICT (app_id, set_id, item_id) DO UPDATE SET version = EXCLUDED.version`,
        [scope.tenantId, scope.appId, setId, version, itemIds],
      );
    },

    /** Replace mode: every visible item not sent since `since` gets an archived version. Returns how many. */
    async archiveUnsent(scope: Scope, setId: string, since: number, version: number, tx: Tx): Promise<number> {
      const { rows } = await tx.query<{ n: number }>(
        `WITH closed AS (
           UPDATE option_items i SET valid_to = $4
            WHERE i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3 AND i.valid_to IS NULL AND NOT i.archived
              AND i.last_sent_version < $5
              AND i.item_id NOT IN (SELECT t.item_id FROM option_item_touches t
                                     WHERE t.tenant_id = $1 AND t.app_id = $2 AND t.set_id = $3 AND t.version >= $5)
           RETURNING i.item_id, i.ext_id, i.value, i.label, i.sort_order, i.option_data, i.search_text, i.last_sent_version
         ), ins AS (
           INSERT INTO option_items (tenant_id, app_id, set_id, item_id, ext_id, value, label, sort_order, option_data, search_text, archived, last_sent_version, valid_from)
           SELECT $1, $2, $3, item_id, ext_id, value, label, sort_order, option_data, search_text, true, last_sent_version, $4 FROM closed
           RETURNING 1
         )
         SELECT count(*)::int AS n FROM ins`,
        [scope.tenantId, scope.appId, setId, version, since],
      );
      return rows[0]?.n ?? 0;
    },

    async writeVersions(scope: Scope, setId: string, items: ItemVersion[], version: number, tx: Tx): Promise<void> {
      if (items.length === 0) return;
      await tx.query(
        `INSERT INTO option_items (tenant_id, app_id, set_id, item_id, ext_id, value, label, sort_order, option_data, search_text, archived, last_sent_version, valid_from)
         SELECT $1, $2, $3, COALESCE(r.item_id, nextval('option_item_seq')), r.ext_id, r.value, r.label, r.sort_order, r.option_data,
                option_fold(r.value || ' ' || r.label), false, $4, $4
           FROM jsonb_to_recordset($5::jsonb) AS r(item_id bigint, ext_id text, value text, label text, sort_order double precision, option_data jsonb)`,
        [scope.tenantId, scope.appId, setId, version, JSON.stringify(items)],
      );
    },

    /** Every visible row of one version in read order, for the in-process index; at most `max` (+1 tells "more"). */
    async versionRows(scope: Scope, setId: string, version: number, max: number): Promise<IndexRow[]> {
      const { rows } = await db.query<IndexRow>(
        `SELECT i.ext_id AS id, i.value, i.label, i.sort_order, i.option_data, i.search_text, pg_column_size(i.option_data) AS data_bytes FROM option_items i
          WHERE i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3
            AND i.valid_from <= $4::int AND (i.valid_to IS NULL OR i.valid_to > $4::int) AND NOT i.archived
          ORDER BY i.sort_order, i.value LIMIT $5`,
        [scope.tenantId, scope.appId, setId, version, max + 1],
      );
      return rows;
    },

    /** Search words folded exactly as the stored search_text was (the database's own fold). */
    async fold(words: string[]): Promise<string[]> {
      const { rows } = await db.query<{ f: string }>(
        `SELECT option_fold(w) AS f FROM unnest($1::text[]) WITH ORDINALITY AS k(w, n) ORDER BY n`,
        [words],
      );
      return rows.map((r) => r.f);
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
     * One page of visible items in read order as of `version`: exactly that version's content,
     * whatever syncs commit meanwhile. Each row also carries the set's current version.
     *
     * Search picks its plan itself, because the planner cannot estimate `LIKE '%word%'`: a word
     * that matches a handful of items would otherwise walk the whole set in order. First the
     * trigram index collects at most SEARCH_CANDIDATES matches; when there are that few, sorting
     * them is the answer. A broad search (many matches, so a walk in order finds a page quickly)
     * or one of an older version walks the order index, with the trigram index kept out of it.
     */
    async page(
      scope: Scope,
      setId: string,
      q: PageQuery,
      tx?: Queryable,
    ): Promise<{ current: number | null; rows: PageRow[]; broad?: boolean }> {
      const run = tx ?? db;
      const params: unknown[] = [scope.tenantId, scope.appId, setId, q.version, q.limit];
      const keyset: string[] = [];
      if (q.after) {
        params.push(q.after.sort_order, q.after.value);
        keyset.push(`(i.sort_order, i.value) > ($${params.length - 1}::float8, $${params.length}::text)`);
      }
      const patterns = q.tokens.map((t) => {
        params.push(`%${escapeLike(t)}%`);
        return `option_fold($${params.length}::text)`;
      });
      const visible = `i.tenant_id = $1 AND i.app_id = $2 AND i.set_id = $3
            AND i.valid_from <= $4::int AND (i.valid_to IS NULL OR i.valid_to > $4::int) AND NOT i.archived`;
      const current = `(SELECT s.version FROM option_sets s WHERE s.tenant_id = $1 AND s.app_id = $2 AND s.set_id = $3)`;
      const cols = 'i.ext_id AS id, i.value, i.label, i.sort_order, i.option_data';
      const shape = (rows: (PageRow & { current: number | null })[]) => ({
        current: rows[0]?.current ?? null,
        rows: rows.map((r) => ({
          id: r.id,
          value: r.value,
          label: r.label,
          sort_order: r.sort_order,
          option_data: r.option_data,
        })),
      });

      let broad = false;
      if (q.tryIndex !== false && q.tokens.some((t) => t.length >= 3)) {
        // The trigram index holds current rows only: complete when `version` is still the current
        // one, which the same statement (one snapshot) reports.
        const conds = [...keyset, ...patterns.map((p) => `i.search_text LIKE ${p}`)];
        const { rows } = await run.query<PageRow & { current: number | null; n: number }>(
          `WITH found AS MATERIALIZED (
             SELECT ${cols} FROM option_items i
              WHERE ${visible} AND i.valid_to IS NULL AND ${conds.join(' AND ')} LIMIT ${SEARCH_CANDIDATES + 1}
           )
           SELECT c.current, (SELECT count(*)::int FROM found) AS n, f.*
             FROM (SELECT ${current} AS current) c LEFT JOIN found f ON true
            ORDER BY f.sort_order, f.value LIMIT $5`,
          params,
        );
        const head = rows[0]!;
        if (head.current === null) return { current: null, rows: [] };
        if (head.current === q.version && head.n <= SEARCH_CANDIDATES) return shape(head.n === 0 ? [] : rows);
        broad = head.n > SEARCH_CANDIDATES;
      }
      // `|| ''` keeps the trigram index out: here walking the order index is the right plan.
      const conds = [...keyset, ...patterns.map((p) => `(i.search_text || '') LIKE ${p}`)];
      const { rows } = await run.query<PageRow & { current: number }>(
        `SELECT ${current} AS current, ${cols} FROM option_items i
          WHERE ${visible} ${conds.map((c) => `AND ${c}`).join(' ')}
          ORDER BY i.sort_order, i.value LIMIT $5`,
        params,
      );
      return { ...shape(rows), broad };
    },
  };
}

export type OptionSetStore = ReturnType<typeof createOptionSetStore>;
