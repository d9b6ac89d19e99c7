import { copyIn } from '../../db/copy.js';
import { CopyWriter } from '../../db/copy-writer.js';
import { withTx, type Db, type Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Environment } from '../../types/domain.js';

/** One validated event: ids are UUIDs, platform ios|android, country two letters, ts_ms a finite number >= 0. */
export interface EventRow {
  event_id: string;
  event_name: string;
  ts_ms: number;
  anon_id: string;
  user_id: string | null;
  session_id: string;
  platform: string;
  country: string;
  consent: boolean;
  /** The envelope as received, already serialised (the size check needed it anyway). */
  payloadJson: string;
}

export interface OptionLock {
  set_id: string;
  value: string;
}

/** One request's share of a group commit: its scope and environment, its rows (ids unique within it) and locks. */
export interface EventWrite {
  scope: Scope;
  environment: Environment;
  rows: EventRow[];
  locks: OptionLock[];
}

/** Event names that become outbox entries for webhook delivery, with their webhook type. */
const OUTBOX_TYPE = new Map([
  ['onboarding_flow_started', 'onboarding.started'],
  ['onboarding_flow_completed', 'onboarding.completed'],
  ['experiment_exposure', 'experiment.exposure'],
]);

/**
 * Claims the dedupe slots of a group's events, (app, event_id) forever, and answers the positions
 * (1-based) of those already taken: usually none, so one empty row comes back however big the group.
 */
const CLAIM_IDS = `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS t(app_id, event_id, n)
), fresh AS (
  INSERT INTO event_ids (app_id, event_id) SELECT app_id, event_id FROM input
  ON CONFLICT DO NOTHING RETURNING app_id, event_id
)
SELECT coalesce(array_agg(n::int), '{}') AS taken
  FROM input i WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.app_id = i.app_id AND f.event_id = i.event_id)`;

const EVENT_COLUMNS =
  'events (tenant_id, app_id, environment, event_id, event_name, ts, anon_id, user_id, session_id, platform, country, consent, payload)';

/** Outbox entries and option-value locks of the stored events, written in their transaction. */
const SIDE_EFFECTS = `
WITH outboxed AS (
  INSERT INTO outbox (tenant_id, app_id, environment, event_type, payload)
  SELECT tenant_id, app_id, environment, event_type, payload -- json: the envelope's bytes reach webhooks unchanged
    FROM json_to_recordset($1::json) AS x(tenant_id uuid, app_id uuid, environment text, event_type text, payload json)
  RETURNING 1
), locked AS (
  INSERT INTO option_value_locks (tenant_id, app_id, set_id, value)
  SELECT tenant_id, app_id, set_id, value
    FROM json_to_recordset($2::json) AS l(tenant_id uuid, app_id uuid, set_id text, value text)
  ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT count(*) FROM outboxed) AS outboxed`;

const EPOCH_2000_MS = 946_684_800_000;
const TRUE_FIELD = Uint8Array.of(0, 0, 0, 1, 1);
const FALSE_FIELD = Uint8Array.of(0, 0, 0, 1, 0);

/** A lower-case UUID's 16 bytes into `out` (the envelope check guaranteed its form). */
function uuidBytes(s: string, out: Uint8Array): Uint8Array {
  for (let i = 0, k = 0; k < 16; k++) {
    if (s.charCodeAt(i) === 45) i++; // '-'
    out[k] = (hex(s.charCodeAt(i)) << 4) | hex(s.charCodeAt(i + 1));
    i += 2;
  }
  return out;
}

const hex = (c: number) => (c <= 57 ? c - 48 : (c | 32) - 87);

interface Stored {
  write: EventWrite;
  row: EventRow;
}

/**
 * The fresh events as one binary COPY: no JSON to parse per row, and each payload is validated once
 * as it enters its json column (json_to_recordset parsed it twice; measured in bench/RESULTS.md).
 */
function eventsCopy(stored: Stored[]): CopyWriter {
  // Sized for ASCII payloads plus the other columns (under 256 bytes a row): a group's buffer is megabytes,
  // and growing it copied all of it (measured in a profile of the service under load).
  let bytes = 64 * 1024;
  for (const { row } of stored) bytes += row.payloadJson.length + 256;
  const w = new CopyWriter(bytes);
  const tenant = new Uint8Array(16);
  const app = new Uint8Array(16);
  const id = new Uint8Array(16);
  let last: EventWrite | null = null;
  for (const { write, row: r } of stored) {
    if (write !== last) {
      uuidBytes(write.scope.tenantId, tenant);
      uuidBytes(write.scope.appId, app);
      last = write;
    }
    w.row(13).uuid(tenant, 0).uuid(app, 0).text(write.environment);
    w.uuid(uuidBytes(r.event_id, id), 0)
      .text(r.event_name)
      .int8(Math.round((r.ts_ms - EPOCH_2000_MS) * 1000));
    w.uuid(uuidBytes(r.anon_id, id), 0).text(r.user_id).uuid(uuidBytes(r.session_id, id), 0);
    w.text(r.platform)
      .text(r.country)
      .raw(r.consent ? TRUE_FIELD : FALSE_FIELD)
      .text(r.payloadJson);
  }
  return w;
}

/** Outbox entries of the stored events (consented, webhook types only), as json_to_recordset input. */
function outboxJson(stored: Stored[]): string {
  const parts: string[] = [];
  for (const { write: w, row: r } of stored) {
    const type = r.consent ? OUTBOX_TYPE.get(r.event_name) : undefined;
    if (!type) continue;
    const { tenantId, appId } = w.scope;
    parts.push(
      `{"tenant_id":"${tenantId}","app_id":"${appId}","environment":"${w.environment}","event_type":"${type}",` +
        `"payload":{"app_id":"${appId}","event":${r.payloadJson}}}`,
    );
  }
  return `[${parts.join(',')}]`;
}

/** Option-value locks of a group, once each and in key order (concurrent groups then never deadlock on them). */
function locksOf(writes: EventWrite[]): { tenant_id: string; app_id: string; set_id: string; value: string }[] {
  const byKey = new Map<string, { tenant_id: string; app_id: string; set_id: string; value: string }>();
  for (const w of writes) {
    for (const l of w.locks) {
      byKey.set(JSON.stringify([w.scope.appId, l.set_id, l.value]), {
        tenant_id: w.scope.tenantId,
        app_id: w.scope.appId,
        ...l,
      });
    }
  }
  return [...byKey.keys()].sort().map((k) => byKey.get(k)!);
}

export function createIngestStore(db: Db) {
  return {
    /**
     * Stores the events of several requests (any apps) in one transaction: the dedupe slots, then
     * the fresh rows by COPY, then their outbox entries and option-value locks. All of it commits or
     * none of it does, so each request's 202 after this means committed, and a retry stores nothing
     * twice. Scopes come from each write (already authenticated): one group spans tenants.
     */
    async insertGroup(writes: EventWrite[]): Promise<{ stored: number }> {
      const apps: string[] = [];
      const ids: string[] = [];
      const all: Stored[] = [];
      // Ids are unique within a request; across requests of one group the first copy is kept.
      const seen = writes.length > 1 ? new Set<string>() : null;
      for (const write of writes) {
        for (const row of write.rows) {
          if (seen) {
            const k = write.scope.appId + row.event_id;
            if (seen.has(k)) continue;
            seen.add(k);
          }
          apps.push(write.scope.appId);
          ids.push(row.event_id);
          all.push({ write, row });
        }
      }
      return withTx(db, async (tx) => {
        // Array literals built by hand: UUIDs need no quoting, and pg's generic array encoder escaped each one.
        const { rows: r } = await tx.query<{ taken: number[] }>(CLAIM_IDS, [
          `{${apps.join(',')}}`,
          `{${ids.join(',')}}`,
        ]);
        // Positions of ids stored before (by an earlier request, or a concurrent group that committed first).
        const taken = new Set(r[0].taken);
        const stored = taken.size === 0 ? all : all.filter((_, i) => !taken.has(i + 1));
        await copyIn(tx, EVENT_COLUMNS, eventsCopy(stored));
        const outbox = outboxJson(stored);
        const locks = locksOf(writes);
        if (outbox !== '[]' || locks.length > 0) await tx.query(SIDE_EFFECTS, [outbox, JSON.stringify(locks)]);
        return { stored: stored.length };
      });
    },

    /** Records the link (history kept, idempotent per link), latest-by-time wins, merges traits. */
    async identify(
      scope: Scope,
      environment: Environment,
      p: { anon_id: string; user_id: string; ts_ms: number; traits: Record<string, unknown> | null },
    ): Promise<{ newLink: boolean }> {
      const { rows } = await db.query<{ new_link: boolean }>(
        `WITH link AS (
           INSERT INTO identity_links (tenant_id, app_id, environment, anon_id, user_id, ts, traits)
           VALUES ($1, $2, $3, $4, $5, to_timestamp($6::double precision / 1000.0), $7)
           ON CONFLICT DO NOTHING RETURNING 1
         ), current_link AS (
           INSERT INTO identities (tenant_id, app_id, environment, anon_id, user_id, ts)
           VALUES ($1, $2, $3, $4, $5, to_timestamp($6::double precision / 1000.0))
           ON CONFLICT (app_id, environment, anon_id) DO UPDATE
             SET user_id = EXCLUDED.user_id, ts = EXCLUDED.ts, updated_at = now()
             WHERE identities.ts <= EXCLUDED.ts
           RETURNING 1
         ), traits AS (
           INSERT INTO user_traits (tenant_id, app_id, environment, user_id, traits)
           SELECT $1, $2, $3, $5, coalesce($7::jsonb, '{}') WHERE EXISTS (SELECT 1 FROM link)
           ON CONFLICT (app_id, environment, user_id) DO UPDATE
             SET traits = user_traits.traits || EXCLUDED.traits, updated_at = now()
           RETURNING 1
         ), outboxed AS (
           INSERT INTO outbox (tenant_id, app_id, environment, event_type, payload)
           SELECT $1, $2, $3, 'user.identified',
                  jsonb_build_object('app_id', $2::text, 'anon_id', $4::text, 'user_id', $5::text,
                                     'traits', coalesce($7::jsonb, '{}'), 'ts_ms', $6::bigint)
            WHERE EXISTS (SELECT 1 FROM link)
           RETURNING 1
         )
         SELECT EXISTS (SELECT 1 FROM link) AS new_link`,
        [
          scope.tenantId,
          scope.appId,
          environment,
          p.anon_id,
          p.user_id,
          p.ts_ms,
          p.traits === null ? null : JSON.stringify(p.traits),
        ],
      );
      return { newLink: rows[0].new_link };
    },
  };
}

export type IngestStore = ReturnType<typeof createIngestStore>;

/** Platform maintenance, not tenant data: monthly event partitions around today. */
export async function ensureEventPartitions(db: Queryable, monthsBack = 4, monthsAhead = 3): Promise<void> {
  await db.query(`SELECT ensure_event_partitions((now() - make_interval(months => $1))::date, $2)`, [
    monthsBack,
    monthsBack + monthsAhead + 1,
  ]);
}

/**
 * Platform maintenance: summarizes the seq BRIN ranges written since the last summary. The
 * readers of "seq after a watermark" (the analytics and export schema folds) then read only the
 * pages that can hold it: an unsummarized range is read whatever it holds, so after a bulk load
 * every round would read every page. Summarizing a partition takes its ShareUpdateExclusive lock,
 * so partitions are spread over `lanes` concurrent statements, largest first.
 */
export async function summarizeNewEvents(db: Db, lanes: number): Promise<void> {
  const { rows } = await db.query<{ idx: string; bytes: string }>(`
SELECT i.inhrelid::regclass::text AS idx, pg_relation_size(x.indrelid) AS bytes
  FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
 WHERE i.inhparent = 'events_seq_brin'::regclass
 ORDER BY 2 DESC`);
  const load = new Array<number>(lanes).fill(0);
  const sets = load.map((): string[] => []);
  for (const r of rows) {
    const k = load.indexOf(Math.min(...load));
    load[k] += Number(r.bytes);
    sets[k].push(r.idx);
  }
  await Promise.all(
    sets
      .filter((s) => s.length > 0)
      .map((s) =>
        withTx(db, async (tx) => {
          // Autovacuum holds the same lock while it vacuums a partition. PostgreSQL cancels it for a waiter
          // after the waiter's deadlock_timeout (1 s by default): each round of the folds stalled that long
          // while autovacuum worked through a bulk load's partitions (measured: 7 s of a 94 s fold).
          await tx.query(
            `SELECT set_config('deadlock_timeout', '50ms', true) WHERE current_setting('is_superuser') = 'on'`,
          );
          await tx.query(`SELECT brin_summarize_new_values(x) FROM unnest($1::regclass[]) x`, [s]);
        }),
      ),
  );
}
