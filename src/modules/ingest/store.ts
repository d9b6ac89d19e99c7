import { withTx, type Db, type Queryable } from '../../db/pool.js';
import type { Scope } from '../../http/auth.js';
import type { Environment } from '../api-keys/service.js';

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

/**
 * Builds the statement's json input by hand: JSON.stringify of a row object per event was a tenth of the
 * service's CPU at 500-event batches. Ids, platform, country, ts_ms and consent were validated by the envelope
 * check to forms JSON never escapes; free text (event_name, user_id) still goes through JSON.stringify, and the
 * payload is the text the size check already produced.
 */
function rowsJson(rows: EventRow[]): string {
  const parts = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    parts[i] =
      `{"event_id":"${r.event_id}","event_name":${JSON.stringify(r.event_name)},"ts_ms":${r.ts_ms},"anon_id":"${r.anon_id}",` +
      `"user_id":${r.user_id === null ? 'null' : JSON.stringify(r.user_id)},"session_id":"${r.session_id}",` +
      `"platform":"${r.platform}","country":"${r.country}","consent":${r.consent},"payload":${r.payloadJson}}`;
  }
  return `[${parts.join(',')}]`;
}

export interface OptionLock {
  set_id: string;
  value: string;
}

/** Event names that become outbox entries for webhook delivery, with their webhook type. */
export const OUTBOX_TYPES: Record<string, string> = {
  onboarding_flow_started: 'onboarding.started',
  onboarding_flow_completed: 'onboarding.completed',
  experiment_exposure: 'experiment.exposure',
};

const OUTBOX_CASE = `CASE i.event_name ${Object.entries(OUTBOX_TYPES)
  .map(([k, v]) => `WHEN '${k}' THEN '${v}'`)
  .join(' ')} END`;

/**
 * One statement stores the batch: json (not jsonb) input spares Postgres a binary copy of the
 * whole batch, which measured ~30% more events/s. New ids claim their dedupe slot, only those rows enter
 * events, outbox entries and option-value locks are written alongside. A single statement is
 * atomic, so the 202 that follows it means everything is committed, and a retry stores nothing twice.
 */
const INSERT_BATCH = `
WITH input AS (
  SELECT * FROM json_to_recordset($4::json) AS x(
    event_id uuid, event_name text, ts_ms double precision, anon_id uuid, user_id text,
    session_id uuid, platform text, country text, consent boolean, payload json)
), fresh AS (
  INSERT INTO event_ids (app_id, event_id) SELECT $2, event_id FROM input
  ON CONFLICT DO NOTHING RETURNING event_id
), stored AS (
  INSERT INTO events (tenant_id, app_id, environment, event_id, event_name, ts, anon_id, user_id,
                      session_id, platform, country, consent, payload)
  SELECT $1, $2, $3, i.event_id, i.event_name, to_timestamp(i.ts_ms / 1000.0), i.anon_id, i.user_id,
         i.session_id, i.platform, i.country, i.consent, i.payload
    FROM input i JOIN fresh f USING (event_id)
  RETURNING event_id, event_name, consent, payload, received_at
), outboxed AS (
  INSERT INTO outbox (tenant_id, app_id, environment, event_type, payload)
  SELECT $1, $2, $3, ${OUTBOX_CASE.replaceAll('i.event_name', 's.event_name')},
         jsonb_build_object('app_id', $2::text, 'event', s.payload)
    FROM stored s WHERE s.consent AND s.event_name IN (${Object.keys(OUTBOX_TYPES).map((k) => `'${k}'`).join(', ')})
  RETURNING 1
), locked AS (
  INSERT INTO option_value_locks (tenant_id, app_id, set_id, value)
  SELECT DISTINCT $1::uuid, $2::uuid, l.set_id, l.value FROM json_to_recordset($5::json) AS l(set_id text, value text)
  ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT count(*) FROM stored) AS stored, (SELECT count(*) FROM outboxed) AS outboxed`;

export function createIngestStore(db: Queryable) {
  return {
    async insertEvents(scope: Scope, environment: Environment, rows: EventRow[], locks: OptionLock[]): Promise<{ stored: number }> {
      const { rows: r } = await db.query<{ stored: number }>(INSERT_BATCH, [
        scope.tenantId,
        scope.appId,
        environment,
        rowsJson(rows),
        JSON.stringify(locks),
      ]);
      return { stored: r[0].stored };
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
        [scope.tenantId, scope.appId, environment, p.anon_id, p.user_id, p.ts_ms, p.traits === null ? null : JSON.stringify(p.traits)],
      );
      return { newLink: rows[0].new_link };
    },
  };
}

export type IngestStore = ReturnType<typeof createIngestStore>;

/** Platform maintenance, not tenant data: monthly event partitions around today. */
export async function ensureEventPartitions(db: Queryable, monthsBack = 4, monthsAhead = 3): Promise<void> {
  await db.query(`SELECT ensure_event_partitions((now() - make_interval(months => $1))::date, $2)`, [monthsBack, monthsBack + monthsAhead + 1]);
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
  await Promise.all(sets.filter((s) => s.length > 0).map((s) => withTx(db, async (tx) => {
    // Autovacuum holds the same lock while it vacuums a partition. PostgreSQL cancels it for a waiter
    // after the waiter's deadlock_timeout (1 s by default): each round of the folds stalled that long
    // while autovacuum worked through a bulk load's partitions (measured: 7 s of a 94 s fold).
    await tx.query(`SELECT set_config('deadlock_timeout', '50ms', true) WHERE current_setting('is_superuser') = 'on'`);
    await tx.query(`SELECT brin_summarize_new_values(x) FROM unnest($1::regclass[]) x`, [s]);
  })));
}
