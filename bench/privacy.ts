// npm run bench:privacy [-- --events 1000000]
// Erasure of 1, 100 and 1,000 people (devices with a user id each) from an app of N events, through
// the real service (request -> receipt `done`), against the baseline of the plain DELETE statements of
// the raw stores run in the same session on other people of the same data.
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { client, createTenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { spawnService } from './lib/service.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '1000000' } } });
const N = Number(values.events);
const PER_DEVICE = 20;
const DEVICES = Math.ceil(N / PER_DEVICE);
const SIZES = [1, 100, 1000];

const service = await spawnService({
  ROLLUP_INTERVAL_S: '3600',
  KEY_CACHE_TTL_MS: '1000',
  SUPER_ADMIN_EMAILS: 'root@example.com',
  LOG_LEVEL: 'error',
});
const db = new pg.Client({ connectionString: service.databaseUrl });
try {
  db.on('error', () => undefined);
  await db.connect();
  const c = client(service.url);
  const t = await createTenant(c);
  const signup = await c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
  const root = { authorization: `Bearer ${signup.body.token}` };
  const end = Date.now() - 60_000;
  const start = end - 30 * 86_400_000;

  // Device d is anon id md5('d'), user id 'user-d'; its events spread over 30 days.
  const genStarted = performance.now();
  for (let from = 0; from < N; from += 100_000) {
    await db.query(
      `INSERT INTO events (tenant_id, app_id, environment, event_id, event_name, ts, anon_id, user_id, session_id, platform, country, consent, payload)
       SELECT $1, $2, 'production', x.id, x.name, to_timestamp(x.ms / 1000.0), x.anon, x.uid, x.anon, 'ios', 'US', true,
              ('{"schema_version":1,"event_id":"' || x.id || '","event_name":"' || x.name || '","ts_ms":' || x.ms ||
               ',"user":{"anon_id":"' || x.anon || '","user_id":"' || x.uid || '"},"device":{"platform":"ios","os":"17.4","app_version":"1.2.3","sdk_version":"2.0.0","locale":"en_US","country":"US"}' ||
               ',"context":{"session_id":"' || x.anon || '"},"properties":{},"privacy":{"consent":{"analytics":true}}}')::json
         FROM (SELECT i, gen_random_uuid() AS id, md5((i % $8)::text)::uuid AS anon, 'user-' || (i % $8) AS uid,
                      CASE WHEN i % 10 = 0 THEN 'session_start' ELSE 'screen_view' END AS name,
                      ($3::bigint + (i::bigint * ($4::bigint - $3::bigint)) / $5) AS ms
                 FROM generate_series($6::int, $7::int) AS i) x`,
      [t.orgId, t.appId, start, end, N, from, Math.min(N, from + 100_000) - 1, DEVICES],
    );
  }
  await db.query('ANALYZE events');
  console.log(
    `generated ${N} events of ${DEVICES} devices in ${((performance.now() - genStarted) / 1000).toFixed(1)} s`,
  );
  const fold = await c.post('/api/v1/admin/analytics/rollup', {}, root);
  if (fold.status !== 200) throw new Error(`fold ${fold.status} ${fold.text}`);

  let next = 0;
  const people = (k: number) => Array.from({ length: k }, () => next++);
  const rows: string[] = [];
  for (const k of SIZES) {
    // The service: request -> done, with the settle wait (KEY_CACHE_TTL_MS + 1 s) included and shown apart.
    const subjects = people(k).map((d) => ({ user_id: `user-${d}` }));
    const t0 = performance.now();
    const r = await c.post('/api/v1/privacy/deletions', { subjects }, t.console);
    if (r.status !== 202) throw new Error(`request ${r.status} ${r.text}`);
    let done: any;
    for (;;) {
      const g = await c.get(`/api/v1/privacy/deletions/${r.body.data.id}`, t.console);
      if (g.body.data.status === 'failed') throw new Error(`failed: ${g.text}`);
      if (g.body.data.status === 'done') {
        done = g.body.data;
        break;
      }
      await new Promise((res) => setTimeout(res, 200));
    }
    const totalS = (performance.now() - t0) / 1000;
    const s = done.receipt.stores;
    const at = (name: string) => Date.parse(s[name].finished_at);
    const started = Date.parse(done.started_at);
    const settleS = (started - Date.parse(done.created_at)) / 1000;
    const eventsS = (at('events') - started) / 1000;
    const rawS = (at('exports') - at('events')) / 1000;
    const analyticsS = (at('analytics') - at('exports')) / 1000;
    const experimentsS = (at('experiments') - at('analytics')) / 1000;
    const verifyS = (Date.parse(done.completed_at) - at('experiments')) / 1000;

    // Baseline: the plain DELETE statements of the raw stores for k other people, no job, no receipt.
    const others = people(k);
    const b0 = performance.now();
    await db.query('BEGIN');
    await db.query(
      `DELETE FROM events WHERE app_id = $1 AND (anon_id = ANY ($2::uuid[]) OR user_id = ANY ($3::text[]))`,
      [t.appId, others.map((d) => md5uuid(d)), others.map((d) => `user-${d}`)],
    );
    await db.query('DELETE FROM identities WHERE app_id = $1 AND user_id = ANY ($2::text[])', [
      t.appId,
      others.map((d) => `user-${d}`),
    ]);
    await db.query('COMMIT');
    const baseS = (performance.now() - b0) / 1000;
    const figures = [totalS, settleS, eventsS, rawS, analyticsS, experimentsS, verifyS, baseS];
    console.log({
      k,
      events: s.events.deleted,
      totalS,
      settleS,
      eventsS,
      rawS,
      analyticsS,
      experimentsS,
      verifyS,
      baseS,
    });
    rows.push(
      `| ${k} | ${s.events.deleted.toLocaleString('en-US')} | ${figures.map((f) => f.toFixed(1)).join(' | ')} |`,
    );
  }

  writeResultsSection(
    'privacy: erasing people',
    `${machine()}; \`npm run bench:privacy -- --events ${N}\`: ${N.toLocaleString('en-US')} events of ${DEVICES.toLocaleString('en-US')} devices (each with a user id), 30 days, one app, embedded PostgreSQL, the service in its own process. Each row erases other people.

| people | their events | request to verified receipt, s | of which: settle wait | events | identity, locks, webhooks, exports | analytics (subtracted) | experiments | verification | baseline: plain DELETEs of events + identities, s |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

The request-to-receipt time includes the settle wait (KEY_CACHE_TTL_MS, 1 s here, + 1 s) before the erasure, so that
every instance drops the people's new events first. The analytics step subtracts the people's contributions from the
rollups (docs/privacy.md); the verification searches every store for them again.`,
  );
} finally {
  await db.end().catch(() => undefined);
  await service.stop();
}

/** PostgreSQL's md5(text)::uuid of a device number. */
function md5uuid(d: number): string {
  const h = createHash('md5').update(String(d)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
