import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { client, createTenant, makeEvent, type Client, type Res, type Tenant } from './helpers/client.js';
import { clusterEnv, makeInstance, startInstance, type Instance } from './helpers/processes.js';
import { createTestDatabase } from './helpers/server.js';
import { useTenantApp } from './helpers/suite.js';

// One writer, so that a lock held by the test stops it; requests arriving meanwhile queue behind it
// and form the next group. A queued request waits at most 3 s; the queue holds at most 1 MB.
const QUEUE_MAX_MS = 3000;
const suite = useTenantApp({
  INGEST_WRITERS: '1',
  INGEST_QUEUE_MAX_MS: String(QUEUE_MAX_MS),
  INGEST_QUEUE_MAX_MB: '1',
  WEBHOOK_POLL_MS: '60000',
});
const apps: Tenant[] = [];

const send = (t: Tenant, batch: unknown[]) =>
  suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
const events = (n: number, over: Record<string, unknown> = {}) => Array.from({ length: n }, () => makeEvent(over));
const ids = (batch: Record<string, any>[]) => batch.map((e) => e.event_id as string);
const count = async (eventIds: string[]) =>
  (await suite.server.db.query('SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1::uuid[])', [eventIds]))
    .rows[0].n as number;

/** Holds a lock that stops the writer's next insert, with a request already stuck behind it. */
async function stallWriter() {
  const lock = await suite.server.db.connect();
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE event_ids IN SHARE MODE');
  const first = events(5);
  const stuck = send(apps[0], first);
  const until = Date.now() + 10_000;
  for (;;) {
    const { rows } = await suite.server.db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO event_ids%'`,
    );
    if (rows[0].n > 0) break;
    assert.ok(Date.now() < until, 'the writer never waited on the lock');
    await sleep(20);
  }
  return {
    stuck: stuck.then((r) => ({ r, ids: ids(first) })),
    release: async () => {
      await lock.query('COMMIT');
      lock.release();
    },
  };
}

/** Tracks when each answer came, and checks at that moment that its events are visible to another connection. */
function watched(p: Promise<Res>, batch: Record<string, any>[]) {
  const w = { answered: false, visibleWhenAnswered: -1, res: undefined as Res | undefined };
  const done = p.then(async (r) => {
    w.answered = true;
    w.res = r;
    w.visibleWhenAnswered = await count(ids(batch));
  });
  return Object.assign(w, { done });
}

describe('ingest: group commit', () => {
  before(async () => {
    // Two apps of one tenant and one of another: a group spans apps and tenants.
    apps.push(suite.t, await addApp(suite.c, suite.t), await createTenant(suite.c));
  });

  it('commits concurrent requests of several apps together, each answered only after that commit', async () => {
    const { stuck, release } = await stallWriter();
    const shared = makeEvent();
    const batches = apps.flatMap((t) => [events(20), events(20)].map((b) => ({ t, b })));
    // The same event in two requests of one app in one group: stored once, both acknowledged.
    batches[0].b.push(shared);
    batches[1].b.push({ ...shared });
    const sent = batches.map(({ t, b }) => watched(send(t, b), b));
    // Time for the requests to arrive and queue behind the stalled writer (nothing to poll: they wait in memory).
    await sleep(1000);
    assert.ok(
      sent.every((s) => !s.answered),
      'nothing is answered before its commit',
    );
    assert.equal(await count(batches.flatMap(({ b }) => ids(b))), 0);
    await release();
    assert.equal((await stuck).r.status, 202);
    await Promise.all(sent.map((s) => s.done));
    for (const [i, s] of sent.entries()) {
      assert.equal(s.res!.status, 202);
      assert.equal(s.res!.body.accepted, batches[i].b.length);
      assert.equal(s.visibleWhenAnswered, new Set(ids(batches[i].b)).size, 'committed when acknowledged');
    }
    const { rows } = await suite.server.db.query(
      'SELECT count(DISTINCT xmin::text)::int AS txs, count(*)::int AS n, count(DISTINCT app_id)::int AS apps FROM events WHERE event_id = ANY($1::uuid[])',
      [batches.flatMap(({ b }) => ids(b))],
    );
    assert.deepEqual(rows[0], { txs: 1, n: 6 * 20 + 1, apps: 3 }, 'one transaction, three apps, the shared event once');
  });

  it("isolates one app's failing batch: the other requests of its group commit, nothing twice", async () => {
    // Any row the database refuses: a trigger stands in for it, whatever validation the service adds upstream.
    const bad = apps[2];
    await suite.server.db.query(`
      CREATE FUNCTION refuse_app() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
      CREATE TRIGGER refuse_app BEFORE INSERT ON event_ids FOR EACH ROW WHEN (NEW.app_id = '${bad.appId}') EXECUTE FUNCTION refuse_app();`);
    try {
      const { stuck, release } = await stallWriter();
      const good = apps.slice(0, 2).map((t) => ({
        t,
        b: [
          ...events(10),
          makeEvent({ event_name: 'onboarding_flow_started' }),
          makeEvent({ properties: { option_set_id: `set-${t.appId}`, option_value: 'v1' } }),
        ],
      }));
      const badBatch = events(10);
      const sent = [send(good[0].t, good[0].b), send(bad, badBatch), send(good[1].t, good[1].b)];
      await sleep(1000);
      await release();
      await stuck;
      const [a, b, c] = await Promise.all(sent);
      assert.equal(a.status, 202);
      assert.equal(c.status, 202);
      assert.equal(b.status, 500, 'only the request whose rows failed fails');
      assert.equal(b.body.code, 'internal_error');
      for (const { t, b: batch } of good) {
        assert.equal(await count(ids(batch)), batch.length);
        const ob = await suite.server.db.query(
          `SELECT count(*)::int AS n FROM outbox WHERE app_id = $1 AND event_type = 'onboarding.started'`,
          [t.appId],
        );
        assert.equal(ob.rows[0].n, 1, 'outbox entry written once');
        const lk = await suite.server.db.query('SELECT count(*)::int AS n FROM option_value_locks WHERE app_id = $1', [
          t.appId,
        ]);
        assert.equal(lk.rows[0].n, 1);
      }
      assert.equal(await count(ids(badBatch)), 0);
    } finally {
      await suite.server.db.query('DROP TRIGGER refuse_app ON event_ids; DROP FUNCTION refuse_app()');
    }
  });

  it('answers 503 with Retry-After when the writer is behind, at once when the queue is full, and stores nothing of those', async () => {
    const { stuck, release } = await stallWriter();
    // Two batches of about 0.8 MB: whichever arrives second finds the 1 MB queue full.
    const pad = 'p'.repeat(20_000);
    const big = [events(40, { properties: { pad } }), events(40, { properties: { pad } })];
    const t0 = Date.now();
    const timed = big.map((b) => send(apps[1], b).then((r) => ({ r, ms: Date.now() - t0 })));
    const [x, y] = await Promise.all(timed);
    const [full, late] = x.ms < y.ms ? [x, y] : [y, x];
    for (const { r } of [full, late]) {
      assert.equal(r.status, 503);
      assert.equal(r.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(r.body.code, 'service_unavailable');
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.ok(full.ms < QUEUE_MAX_MS - 1000, `queue full: refused at once (${full.ms} ms)`);
    assert.ok(late.ms >= QUEUE_MAX_MS - 50, `writer behind: refused after the bounded wait (${late.ms} ms)`);
    await release();
    assert.equal((await stuck).r.status, 202, 'the request the writer held commits');
    assert.equal(await count(big.flatMap(ids)), 0);
    assert.equal((await send(apps[1], big[0])).status, 202, 'the retry goes through');
  });
});

/** A second app in the tenant's organization, with its production key. */
async function addApp(c: Client, t: Tenant): Promise<Tenant> {
  const auth = { authorization: `Bearer ${t.token}` };
  const app = await c.post(`/api/v1/organizations/${t.orgId}/apps`, { name: 'Second' }, auth);
  const headers = { ...auth, 'x-tenant-id': t.orgId, 'x-app-id': app.body.data.id };
  const live = await c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: [] }, headers);
  assert.equal(live.status, 201, live.text);
  return { ...t, appId: app.body.data.id, console: headers, live: live.body.data };
}

describe('ingest: kill -9 during group commits', () => {
  let inst: Instance | undefined;
  after(() => void inst?.proc?.kill('SIGKILL'));

  /** The real service in its own process, on the test database server (a kill -9 of Node; the database survives). */
  async function start(env: Record<string, string>) {
    inst = await makeInstance('api');
    await startInstance(inst, env);
    return { proc: inst.proc!, c: client(inst.url) };
  }

  it('keeps every acknowledged event exactly once, and retries of the rest store each once', async () => {
    const databaseUrl = await createTestDatabase();
    // The same settings (encryption key included) for the process started after the kill.
    const env = clusterEnv(databaseUrl, { INGEST_GROUP_WAIT_MS: '5' });
    const first = await start(env);
    const owner = await createTenant(first.c);
    const tenants = [owner, await addApp(first.c, owner)];
    const acknowledged: string[] = [];
    const sentBatches: { t: Tenant; b: Record<string, any>[] }[] = [];
    let stop = false;
    const sender = async (t: Tenant) => {
      while (!stop) {
        const b = events(20, { event_name: 'onboarding_flow_started' });
        sentBatches.push({ t, b });
        try {
          const r = await first.c.post('/api/v1/ingest/events', { batch: b }, { 'x-api-key': t.live.public_key });
          if (r.status === 202) acknowledged.push(...ids(b));
        } catch {
          return; // the connection died with the process: that batch was never acknowledged
        }
      }
    };
    const senders = Array.from({ length: 16 }, (_, i) => sender(tenants[i % 2]));
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      // Killed once a good number of groups has committed, while requests keep coming.
      const until = Date.now() + 30_000;
      while (acknowledged.length < 2000 && Date.now() < until) await sleep(20);
      first.proc.kill('SIGKILL');
      stop = true;
      await Promise.all(senders);
      assert.ok(acknowledged.length >= 2000, `acknowledged ${acknowledged.length} events before the kill`);

      const tally = async () =>
        (
          await db.query(
            `SELECT (SELECT count(*)::int FROM events WHERE event_id = ANY($1::uuid[])) AS acked,
                    (SELECT count(*)::int FROM events WHERE app_id = ANY($2::uuid[])) AS events,
                    (SELECT count(DISTINCT (app_id, event_id))::int FROM events WHERE app_id = ANY($2::uuid[])) AS distinct_events,
                    (SELECT count(*)::int FROM event_ids WHERE app_id = ANY($2::uuid[])) AS slots,
                    (SELECT count(*)::int FROM outbox WHERE app_id = ANY($2::uuid[])) AS outbox`,
            [acknowledged, tenants.map((t) => t.appId)],
          )
        ).rows[0];
      const afterKill = await tally();
      assert.equal(afterKill.acked, acknowledged.length, 'every acknowledged event is stored');
      assert.equal(afterKill.events, afterKill.distinct_events, 'none twice');
      assert.equal(afterKill.slots, afterKill.events, 'a dedupe slot exactly for each stored event (all or nothing)');
      assert.equal(afterKill.outbox, afterKill.events, 'an outbox entry exactly for each stored event');

      // The SDKs re-send every batch they could not confirm, acknowledged or not: each event ends up stored once.
      const second = await start(env);
      await Promise.all(
        tenants.map(async (t) => {
          const all = sentBatches.filter((s) => s.t === t).flatMap((s) => s.b);
          for (let i = 0; i < all.length; i += 500) {
            const r = await second.c.post(
              '/api/v1/ingest/events',
              { batch: all.slice(i, i + 500) },
              { 'x-api-key': t.live.public_key },
            );
            assert.equal(r.status, 202, r.text);
          }
        }),
      );
      const final = await tally();
      assert.equal(final.events, sentBatches.length * 20);
      assert.equal(final.distinct_events, final.events);
      assert.equal(final.outbox, final.events);
      second.proc.kill('SIGKILL');
    } finally {
      await db.end();
    }
  });
});
