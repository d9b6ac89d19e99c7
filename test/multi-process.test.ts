// Two ROLE=api and two ROLE=worker processes (node --import tsx src/main.ts) on one fresh database:
// global limits, jobs run once, bundles and keys agree across instances, and a rolling restart
// under load loses and duplicates nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createJobQueue } from '../src/jobs/queue.js';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { clusterEnv, makeInstance, startInstance, stopInstance, type Instance } from './helpers/processes.js';
import { createTestDatabase } from './helpers/server.js';
import { startReceiver, waitFor, type Receiver } from './webhooks-receiver.js';

const KEY_CACHE_TTL_MS = 400;
const METRICS_TOKEN = 'metrics-secret';

let dbUrl: string;
let db: pg.Pool;
let env: Record<string, string>;
let apis: Instance[];
let workers: Instance[];
let c: Client[];
let rx: Receiver;

const sdk = (k: Tenant['live']) => ({ 'x-api-key': k.public_key });
const pair = (k: Tenant['live']) => ({ 'x-api-key': k.public_key, 'x-api-secret': k.secret_key });
/** Requests spread over both APIs, as a load balancer would. */
const api = (i: number) => c[i % c.length];

before(async () => {
  dbUrl = await createTestDatabase();
  db = new pg.Pool({ connectionString: dbUrl, max: 4 });
  rx = await startReceiver();
  env = clusterEnv(dbUrl, {
    KEY_CACHE_TTL_MS: String(KEY_CACHE_TTL_MS),
    METRICS_TOKEN,
    WEBHOOK_POLL_MS: '100',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1',
    ROLLUP_INTERVAL_S: '1',
    DB_POOL_MAX: '6',
  });
  apis = [await makeInstance('api'), await makeInstance('api')];
  workers = [await makeInstance('worker'), await makeInstance('worker')];
  // The first one migrates the database and creates the job queue's schema; the others start together.
  await startInstance(workers[0], env);
  await Promise.all([...apis, workers[1]].map((i) => startInstance(i, env)));
  c = apis.map((a) => client(a.url));
});

after(async () => {
  await Promise.all([...(apis ?? []), ...(workers ?? [])].map((i) => stopInstance(i).catch(() => undefined)));
  await rx?.close();
  await db?.end();
});

async function metricsOf(inst: Instance): Promise<string> {
  const r = await fetch(`${inst.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(r.status, 200);
  return r.text();
}

/** The sum of a metric's samples whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('global limits across two API instances', () => {
  it('events per minute per app: the setting holds within 5% over both instances', async () => {
    const t = await createTenant(c[0]);
    assert.equal((await c[0].patch('/api/v1/settings', { events_per_minute: 1000 }, t.console)).status, 200);
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 30; i++) {
      const r = await api(i).post(
        '/api/v1/ingest/events',
        { batch: Array.from({ length: 50 }, () => makeEvent()) },
        sdk(t.live),
      );
      if (r.status === 202) accepted += r.body.accepted;
      else {
        assert.equal(r.status, 429, r.text);
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
        assert.equal(r.headers.get('ratelimit-limit'), '1000');
        refused++;
      }
    }
    assert.ok(accepted >= 950 && accepted <= 1050, `accepted ${accepted} of a 1000/min limit`);
    assert.ok(refused > 0);
    const stored = await db.query('SELECT count(*)::int AS n FROM events WHERE app_id = $1', [t.appId]);
    assert.equal(stored.rows[0].n, accepted, 'a refused batch stores nothing');
  });

  it('bootstrap (60/min per key) and option-set sync (20/min per key) hold over both instances', async () => {
    const t = await createTenant(c[0]);
    const boots = await Promise.all(
      Array.from({ length: 80 }, (_, i) => api(i).get('/api/v1/sdk/bootstrap', sdk(t.live))),
    );
    const okBoots = boots.filter((r) => r.status === 200).length;
    assert.ok(okBoots >= 57 && okBoots <= 63, `bootstraps allowed: ${okBoots}`);
    const r429 = boots.find((r) => r.status === 429)!;
    assert.ok(r429.headers.get('retry-after') && r429.headers.get('ratelimit-remaining') === '0');

    const syncs = [];
    for (let i = 0; i < 30; i++)
      syncs.push(
        await api(i).post(
          '/api/v1/sdk/option-sets/limits/sync',
          { items: [{ value: `v${i}`, label: `V ${i}` }] },
          pair(t.live),
        ),
      );
    const okSyncs = syncs.filter((r) => r.status === 200).length;
    assert.ok(okSyncs >= 19 && okSyncs <= 21, `syncs allowed: ${okSyncs}`);
  });
});

describe('one truth across instances', () => {
  let t: Tenant;
  before(async () => {
    t = await createTenant(c[1]);
  });

  it('concurrent publishes on both APIs give unique, increasing versions, and each serves the newest at once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await api(i).post('/api/v1/onboarding-flows', { name: `flow ${i}` }, t.console)).body.data.id);
    const before = (await c[0].get('/api/v1/sdk/config-bundle/version', sdk(t.live))).body.data.bundle_version;
    await c[1].get('/api/v1/sdk/config-bundle/version', sdk(t.live));
    const rs = await Promise.all(
      ids.map((id, i) => api(i).post(`/api/v1/onboarding-flows/${id}/publish`, {}, t.console)),
    );
    const versions = rs.map((r) => {
      assert.equal(r.status, 200, r.text);
      return r.body.bundle_version as number;
    });
    assert.deepEqual(
      [...versions].sort((a, b) => a - b),
      Array.from({ length: 10 }, (_, i) => before + 1 + i),
    );
    for (const cl of c)
      assert.equal(
        (await cl.get('/api/v1/sdk/config-bundle/version', sdk(t.live))).body.data.bundle_version,
        before + 10,
      );

    // Published on one, served by the other on the very next request.
    const id = (await c[0].post('/api/v1/onboarding-flows', { name: 'one more' }, t.console)).body.data.id;
    const p = await c[0].post(`/api/v1/onboarding-flows/${id}/publish`, {}, t.console);
    assert.equal(
      (await c[1].get('/api/v1/sdk/config-bundle/version', sdk(t.live))).body.data.bundle_version,
      p.body.bundle_version,
    );
    const full = await c[1].get('/api/v1/sdk/config-bundle', sdk(t.live));
    assert.ok(full.body.data.content.onboarding_flows[id]);
  });

  it('a key revoked on one instance stops on the other within KEY_CACHE_TTL_MS', async () => {
    const k = (await c[0].post('/api/v1/sdk/api-keys', { environment: 'production', permissions: [] }, t.console)).body
      .data;
    assert.equal(
      (await c[1].get('/api/v1/sdk/config-bundle/version', sdk(k))).status,
      200,
      'cached on the other instance',
    );
    assert.equal((await c[0].del(`/api/v1/sdk/api-keys/${k.id}`, t.console)).status, 200);
    const revokedAt = Date.now();
    assert.equal(
      (await c[0].get('/api/v1/sdk/config-bundle/version', sdk(k))).status,
      401,
      'at once where it was revoked',
    );
    await waitFor(
      async () => (await c[1].get('/api/v1/sdk/config-bundle/version', sdk(k))).status === 401,
      'revocation on the other instance',
      5000,
    );
    const took = Date.now() - revokedAt;
    // The bound is the cache's TTL; the slack is the polling requests' own time on a busy machine.
    assert.ok(took <= KEY_CACHE_TTL_MS + 1000, `stopped after ${took} ms`);
  });

  it('option-set search answers agree on both instances, after syncs on either', async () => {
    const items = Array.from({ length: 300 }, (_, i) => ({
      value: `city-${i}`,
      label: `City ${i} ${i % 7 === 0 ? 'São' : 'Port'}`,
    }));
    assert.equal(
      (await c[0].post('/api/v1/sdk/option-sets/cities/sync', { mode: 'replace', items }, pair(t.live))).status,
      200,
    );
    const search = async (q: string) =>
      Promise.all(
        c.map(async (cl) =>
          (
            await cl.get(`/api/v1/sdk/option-sets/cities?q=${encodeURIComponent(q)}&limit=500`, sdk(t.live))
          ).body.data.items.map((x: any) => x.value),
        ),
      );
    for (const q of ['sao', 'city 1', 'PORT']) {
      const [a, b] = await search(q);
      assert.ok(a.length > 0, q);
      assert.deepEqual(a, b, q);
    }
    assert.equal(
      (
        await c[1].post(
          '/api/v1/sdk/option-sets/cities/sync',
          { items: [{ value: 'city-new', label: 'Newport Sao' }] },
          pair(t.live),
        )
      ).status,
      200,
    );
    const [a, b] = await search('newport');
    assert.deepEqual(a, ['city-new']);
    assert.deepEqual(b, ['city-new']);
  });
});

describe('every job runs once with two workers', () => {
  let t: Tenant;
  before(async () => {
    t = await createTenant(c[0]);
  });

  it('webhook deliveries: one request per delivery, one attempt each', async () => {
    const hook = await c[0].post(
      '/api/v1/webhooks',
      { url: rx.url('/identified'), events: ['user.identified'] },
      t.console,
    );
    assert.equal(hook.status, 201);
    for (let i = 0; i < 20; i++) {
      assert.equal(
        (
          await api(i).post(
            '/api/v1/ingest/identify',
            { anon_id: randomUUID(), user_id: `u${i}`, ts_ms: Date.now() },
            sdk(t.live),
          )
        ).status,
        202,
      );
    }
    await waitFor(
      async () => {
        const r = await db.query(
          `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok, count(*)::int AS n FROM webhook_deliveries WHERE app_id = $1 AND kind = 'webhook'`,
          [t.appId],
        );
        return r.rows[0].n === 20 && r.rows[0].ok === 20;
      },
      'webhook deliveries',
      30_000,
    );
    const got = rx.at('/identified');
    assert.equal(got.length, 20);
    assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 20);
    const attempts = await db.query('SELECT max(attempts)::int AS m FROM webhook_deliveries WHERE app_id = $1', [
      t.appId,
    ]);
    assert.equal(attempts.rows[0].m, 1);
  });

  it('rollup fold, export and its callback: each event folded once, one export run, one callback', async () => {
    const base = Date.now() - 3600_000;
    const events = Array.from({ length: 400 }, (_, i) => makeEvent({ ts_ms: base + i }));
    for (let i = 0; i < 4; i++)
      assert.equal(
        (await api(i).post('/api/v1/ingest/events', { batch: events.slice(i * 100, (i + 1) * 100) }, sdk(t.live)))
          .status,
        202,
      );
    // Folded exactly once: the fold's count equals the stored events once it has caught up.
    await waitFor(
      async () => {
        const r =
          await db.query(`SELECT (SELECT min(watermark) FROM an_rollup_state) >= (SELECT max(seq) FROM events) AS caught_up,
                                       (SELECT sum(events_folded) FROM an_rollup_state)::int AS folded, (SELECT count(*)::int FROM events) AS stored`);
        if (!r.rows[0].caught_up) return false;
        assert.equal(r.rows[0].folded, r.rows[0].stored);
        return true;
      },
      'the fold to catch up',
      30_000,
    );

    const x = await c[1].post(
      '/api/v1/sdk/events/export/bulk',
      {
        start_date: new Date(base).toISOString(),
        end_date: new Date(base + 1000).toISOString(),
        callback_url: rx.url('/export-done'),
      },
      sdk(t.live),
    );
    assert.equal(x.status, 202, x.text);
    const done = await waitFor(
      async () => {
        const r = await c[0].get(`/api/v1/sdk/events/export/bulk/${x.body.data.id}`, sdk(t.live));
        return r.body.data.status === 'completed' && r.body.data;
      },
      'the export',
      30_000,
    );
    assert.equal(done.event_count, 400);
    await waitFor(
      async () => {
        const r = await db.query(`SELECT status FROM webhook_deliveries WHERE app_id = $1 AND kind = 'callback'`, [
          t.appId,
        ]);
        return r.rows.length === 1 && r.rows[0].status === 'succeeded';
      },
      'the callback',
      30_000,
    );
    assert.equal(rx.at('/export-done').length, 1);
    assert.equal((await db.query('SELECT attempts FROM exports WHERE id = $1', [x.body.data.id])).rows[0].attempts, 1);
  });

  it('queued jobs (ad-network sync, partition maintenance, clean-ups) each run once over both workers', async () => {
    const queue = createJobQueue({ url: dbUrl, runsWorkers: false, onError: () => undefined });
    await queue.start({} as never);
    const names = ['ad-network.sync', 'maintenance.event-partitions', 'webhooks.cleanup', 'export.cleanup'] as const;
    try {
      for (const n of names) assert.ok(await queue.send(n, {}));
    } finally {
      await queue.stop();
    }
    // Every job of the queue that completed ran exactly once: the workers' run counts equal the queue's completions.
    for (const n of [...names, 'analytics.rollup']) {
      await waitFor(
        async () => {
          const done = await db.query(
            `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'`,
            [n],
          );
          const runs = (await Promise.all(workers.map(metricsOf))).map((m) => sample(m, 'job_runs_total', { job: n }));
          const failed = (await Promise.all(workers.map(metricsOf))).map((m) =>
            sample(m, 'job_runs_total', { job: n, outcome: 'failed' }),
          );
          assert.equal(failed[0] + failed[1], 0, `${n} failed`);
          return done.rows[0].n > 0 && runs[0] + runs[1] === done.rows[0].n;
        },
        `${n} runs to equal its completions`,
        30_000,
      );
    }
  });
});

describe('operations endpoints', () => {
  it('serve /livez, /readyz and a token-protected /metrics on every instance', async () => {
    for (const inst of [...apis, ...workers]) {
      assert.equal((await fetch(`${inst.url}/livez`)).status, 200);
      const ready = await (await fetch(`${inst.url}/readyz`)).json();
      assert.deepEqual(ready, { status: 'ready', checks: { database: 'ok', migrations: 'ok', draining: false } });
      assert.equal((await fetch(`${inst.url}/metrics`)).status, 401);
    }
    const m = await metricsOf(apis[0]);
    assert.ok(sample(m, 'ingest_events_total', { outcome: 'accepted' }) > 0);
    assert.ok(sample(m, 'http_requests_total', { route: '/api/v1/ingest/events', status: '202' }) > 0);
    // The bootstrap refusals of the global-limits test, over both APIs: with chunked reservations the
    // instance that reserved first can serve all its share, and the other gives every 429.
    const refused = (await Promise.all(apis.map(metricsOf))).map((x) =>
      sample(x, 'http_request_duration_seconds_count', { route: '/api/v1/sdk/bootstrap', status: '429' }),
    );
    assert.ok(refused[0] + refused[1] > 0, `bootstrap 429s counted: ${refused}`);
    for (const name of [
      'analytics_fold_lag_events',
      'analytics_fold_lag_seconds',
      'job_queue_jobs',
      'webhook_deliveries',
      'db_pool_connections',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.match(m, new RegExp(`^${name}`, 'm'), name);
    }
  });
});

describe('rolling restart under load', () => {
  it('each instance in turn gets SIGTERM and comes back: no acknowledged event lost or stored twice, no 5xx, nothing half-done', async () => {
    const t = await createTenant(c[0]);
    await c[0].patch('/api/v1/settings', { events_per_minute: 10_000_000 }, t.console);
    assert.equal(
      (await c[0].post('/api/v1/webhooks', { url: rx.url('/restart'), events: ['user.identified'] }, t.console)).status,
      201,
    );
    const acked = new Set<string>();
    const identified = new Set<string>();
    const failures: string[] = [];
    let retried = 0;
    let stop = false;

    // A client behind a load balancer: a refused or reset connection is retried on the other API
    // (the same request: ingestion and identify are idempotent). Any 5xx is a failure.
    async function send(path: string, body: unknown, start: number): Promise<boolean> {
      for (let attempt = 0; attempt < 200; attempt++) {
        const target = apis[(start + attempt) % 2];
        let res: Response;
        try {
          res = await fetch(target.url + path, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...sdk(t.live) },
            body: JSON.stringify(body),
          });
        } catch {
          retried++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const text = await res.text();
        if (res.status === 202) return true;
        failures.push(`${res.status} ${path}: ${text.slice(0, 200)}`);
        return false;
      }
      failures.push(`${path}: no API answered`);
      return false;
    }
    const loops = Array.from({ length: 3 }, async (_, n) => {
      for (let i = 0; !stop; i++) {
        const batch = Array.from({ length: 20 }, () => makeEvent());
        if (await send('/api/v1/ingest/events', { batch }, n + i)) for (const e of batch) acked.add(e.event_id);
      }
    });
    const identify = (async () => {
      for (let i = 0; !stop; i++) {
        const anon = randomUUID();
        if (await send('/api/v1/ingest/identify', { anon_id: anon, user_id: `r${i}`, ts_ms: Date.now() }, i))
          identified.add(anon);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    let restartedAt = 0;
    try {
      for (const inst of [apis[0], apis[1], workers[0], workers[1]]) {
        const before = acked.size;
        await waitFor(() => acked.size >= before + 200, 'load before the restart', 20_000);
        assert.equal(await stopInstance(inst), 0, `${inst.role} on ${inst.port} exits 0 on SIGTERM`);
        await startInstance(inst, env);
        restartedAt = Date.now();
      }
      const before = acked.size;
      await waitFor(() => acked.size >= before + 200, 'load after the restarts', 20_000);
    } finally {
      stop = true;
      await Promise.all([...loops, identify]);
    }
    assert.deepEqual(failures, []);
    assert.ok(retried > 0, 'some requests met a closed API and went to the other');

    const ids = [...acked];
    const stored = await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct_n, count(*) FILTER (WHERE event_id = ANY($2::uuid[]))::int AS acked_n
         FROM events WHERE app_id = $1`,
      [t.appId, ids],
    );
    assert.equal(stored.rows[0].acked_n, ids.length, 'every acknowledged event is stored');
    assert.equal(stored.rows[0].distinct_n, stored.rows[0].n, 'none is stored twice');
    assert.equal(stored.rows[0].n, ids.length, 'nothing stored that was not acknowledged');

    // Nothing half-done: the fold catches up with every event once, every webhook is delivered once,
    // and no job is left active by a worker that stopped.
    let fold: unknown;
    await waitFor(
      async () => {
        const r =
          await db.query(`SELECT (SELECT min(watermark) FROM an_rollup_state) AS watermark, (SELECT max(seq) FROM events) AS max_seq,
                                       (SELECT sum(events_folded) FROM an_rollup_state)::int AS folded, (SELECT count(*)::int FROM events) AS n,
                                       (SELECT json_agg(json_build_object('state', state, 'retries', retry_count, 'out', output)) FROM pgboss.job
                                         WHERE name = 'analytics.rollup' AND state <> 'completed') AS rollup_jobs`);
        fold = r.rows[0];
        return Number(r.rows[0].watermark) >= Number(r.rows[0].max_seq) && r.rows[0].folded === r.rows[0].n;
      },
      'the fold to catch up once',
      120_000,
    ).catch((err) => {
      throw new Error(`${err.message}: ${JSON.stringify(fold)}`);
    });
    await waitFor(
      async () => {
        const r = await db.query(
          `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok, count(*)::int AS n FROM webhook_deliveries WHERE app_id = $1`,
          [t.appId],
        );
        return r.rows[0].n === identified.size && r.rows[0].ok === r.rows[0].n;
      },
      'the restart webhooks',
      30_000,
    );
    const hits = rx.at('/restart');
    assert.equal(new Set(hits.map((h) => h.json?.data?.anon_id ?? h.headers['webhook-id'])).size, identified.size);
    assert.equal(hits.length, identified.size, 'each delivered once');
    const orphans = await db.query(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE state = 'active' AND started_on < $1`,
      [new Date(restartedAt - 30_000)],
    );
    assert.equal(orphans.rows[0].n, 0, 'no job left active by a stopped worker');
  });
});
