import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { makeEvent } from './helpers/client.js';
import { type TenantApp, useTenantApp } from './helpers/suite.js';

/** Polls `check` every `ms` until it returns true; fails with `message()` after `tries`. */
async function until(check: () => Promise<boolean>, message: () => string, tries = 200, ms = 50): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    assert.ok(i < tries, message());
    await sleep(ms);
  }
}

/** The 7-day KPIs, by metric. */
async function kpis(s: TenantApp): Promise<Record<string, number>> {
  const k = await s.c.get('/api/v1/analytics/kpis?period=7d', s.t.console);
  assert.equal(k.status, 200, k.text);
  return Object.fromEntries(k.body.kpis.map((x: { metric: string; current: number }) => [x.metric, x.current]));
}

/** `n` random device ids of fold partition `part` (of 2), picked with the fold's own partition function. */
async function devicesOf(s: TenantApp, part: number, n: number): Promise<string[]> {
  const ids = Array.from({ length: 40 * n }, () => randomUUID());
  const { rows } = await s.server.db.query<{ a: string }>(
    `SELECT a::text FROM unnest($1::uuid[]) a WHERE abs(uuid_hash_extended(a, 0) % 2) = $2`,
    [ids, part],
  );
  assert.ok(rows.length >= n);
  return rows.slice(0, n).map((r) => r.a);
}

/** Ingests `batch` and waits until every fold partition has folded it. */
async function ingestAndFold(s: TenantApp, batch: unknown[]): Promise<void> {
  const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
  assert.equal(r.status, 202, r.text);
  await until(
    async () => {
      const { rows } = await s.server.db.query(
        `SELECT min(watermark) >= (SELECT max(seq) FROM events) AS done FROM an_rollup_state`,
      );
      return rows[0].done;
    },
    () => 'every partition folded the batch',
  );
}

// The fold runs its device partitions in parallel (store.ts). A session id reported by two devices
// of different partitions is written by both partitions' transactions; the numbers must be those
// of one session spanning both devices' events, as with a single partition.
describe('analytics: parallel fold partitions', () => {
  // Every round runs the partitions in parallel, however small.
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_PARALLEL_MIN: '0' });

  it("counts a session shared by devices of two partitions once, spanning both devices' events", async () => {
    const [a, b] = [await devicesOf(s, 0, 10), await devicesOf(s, 1, 10)];
    const start = Date.now() - 3_600_000;
    // Pair i: device a[i] opens session i, device b[i] reports the same session (i + 1) minutes later.
    const batch = a.flatMap((anon, i) => {
      const session = randomUUID();
      return [
        makeEvent({ event_name: 'app_open', ts_ms: start, user: { anon_id: anon }, context: { session_id: session } }),
        makeEvent({
          event_name: 'screen_view',
          ts_ms: start + (i + 1) * 60_000,
          user: { anon_id: b[i] },
          context: { session_id: session },
        }),
      ];
    });
    await ingestAndFold(s, batch);

    const m = await kpis(s);
    assert.equal(m.wau, 20);
    assert.equal(m.avg_sessions_per_user, 0.5); // 10 sessions / 20 active devices
    assert.equal(m.avg_session_duration, 330); // (60 + 120 + ... + 600) s / 10 sessions
  });
});

// A session id reported by two devices of the same partition in one batch: the fold's hash grouping
// per (session, device) sees it twice and groups it again as one session (fold-groups.ts).
describe('analytics: a session shared by devices of one partition', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_PARALLEL_MIN: '0' });

  it("counts it once, spanning both devices' events, on the device of its first event", async () => {
    const ids = await devicesOf(s, 0, 20);
    const [a, b] = [ids.slice(0, 10), ids.slice(10)];
    const start = Date.now() - 3_600_000;
    const batch = a.flatMap((anon, i) => {
      const session = randomUUID();
      return [
        makeEvent({
          event_name: 'screen_view',
          ts_ms: start + (i + 1) * 60_000,
          user: { anon_id: b[i] },
          context: { session_id: session },
        }),
        makeEvent({ event_name: 'app_open', ts_ms: start, user: { anon_id: anon }, context: { session_id: session } }),
      ];
    });
    await ingestAndFold(s, batch);

    const m = await kpis(s);
    assert.equal(m.wau, 20);
    assert.equal(m.avg_sessions_per_user, 0.5);
    assert.equal(m.avg_session_duration, 330);
    const owners = await s.server.db.query<{ anon: string }>(
      `SELECT anon_id::text AS anon FROM an_sessions WHERE app_id = $1`,
      [s.t.appId],
    );
    assert.deepEqual(owners.rows.map((o) => o.anon).sort(), [...a].sort());
  });
});

// The same for a session already stored: both devices' rows find it, and the fold groups the
// batch's sessions again before widening it.
describe('analytics: a stored session then reported by two devices of one partition', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_PARALLEL_MIN: '0' });

  it('widens the one stored session', async () => {
    const [a, b] = await devicesOf(s, 0, 2);
    const [shared, other] = [randomUUID(), randomUUID()];
    const t0 = Date.now() - 3_600_000;
    const ev = (anon: string, session: string, ms: number) =>
      makeEvent({
        event_name: 'screen_view',
        ts_ms: t0 + ms,
        user: { anon_id: anon },
        context: { session_id: session },
      });
    // b's last folded event (10 min) lies after the shared session's start: both devices look it up.
    await ingestAndFold(s, [ev(a, shared, 0), ev(b, other, 600_000)]);
    await ingestAndFold(s, [ev(a, shared, 60_000), ev(b, shared, 120_000)]);
    const m = await kpis(s);
    assert.deepEqual([m.wau, m.avg_sessions_per_user, m.avg_session_duration], [2, 1, 60]); // sessions of 120 s and 0 s
    const stored = await s.server.db.query<{ anon: string; secs: number }>(
      `SELECT anon_id::text AS anon, extract(epoch FROM end_ts - start_ts)::int AS secs FROM an_sessions WHERE session_id = $1`,
      [shared],
    );
    assert.deepEqual(stored.rows, [{ anon: a, secs: 120 }]);
  });
});

// ANALYTICS_FOLD_PARTITIONS differs from the stored partitions (2, from the migration): the fold
// re-cuts them once every partition has folded the same events, and folds with the new count.
describe('analytics: a changed fold partition count', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_PARTITIONS: '3', ANALYTICS_FOLD_PARALLEL_MIN: '0' });

  it('re-cuts the partitions at a common watermark and folds every device once', async () => {
    const start = Date.now() - 3_600_000;
    const batch = Array.from({ length: 30 }, () => [randomUUID(), randomUUID()]).flatMap(([anon, session]) => [
      makeEvent({ event_name: 'app_open', ts_ms: start, user: { anon_id: anon }, context: { session_id: session } }),
      makeEvent({
        event_name: 'screen_view',
        ts_ms: start + 300_000,
        user: { anon_id: anon },
        context: { session_id: session },
      }),
    ]);
    const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
    assert.equal(r.status, 202, r.text);

    let state = {};
    await until(
      async () => {
        const { rows } = await s.server.db.query(`SELECT count(*)::int AS parts,
        count(*) FILTER (WHERE watermark >= (SELECT max(seq) FROM events))::int AS done FROM an_rollup_state`);
        state = rows[0];
        return rows[0].parts === 3 && rows[0].done === 3;
      },
      () => `3 partitions folded the batch: ${JSON.stringify(state)}`,
    );
    const m = await kpis(s);
    assert.deepEqual([m.wau, m.avg_sessions_per_user, m.avg_session_duration], [30, 1, 300]);
  });
});

// A backlog larger than ANALYTICS_FOLD_CHUNK is folded in several rounds of one run; a session
// whose events fall in different rounds is stored by the first and widened by a later one.
describe('analytics: a backlog folded in chunks', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_CHUNK: '10' });

  it('folds every chunk and widens sessions across them', async () => {
    const start = Date.now() - 3_600_000;
    const devices = Array.from({ length: 30 }, () => [randomUUID(), randomUUID()]);
    // Every session's first event is among the first 30 seqs and its last among the next 30.
    const batch = [
      ...devices.map(([anon, session]) =>
        makeEvent({ event_name: 'app_open', ts_ms: start, user: { anon_id: anon }, context: { session_id: session } }),
      ),
      ...devices.map(([anon, session]) =>
        makeEvent({
          event_name: 'screen_view',
          ts_ms: start + 300_000,
          user: { anon_id: anon },
          context: { session_id: session },
        }),
      ),
    ];
    await ingestAndFold(s, batch);
    // Table statistics reach pg_stat a moment after the fold's backends go idle.
    let widened = 0;
    await until(
      async () => {
        const { rows } = await s.server.db.query(
          `SELECT n_tup_upd::int AS widened FROM pg_stat_user_tables WHERE relname = 'an_sessions'`,
        );
        widened = rows[0].widened;
        return widened >= 30;
      },
      () => `sessions widened by later chunks: ${widened}`,
      100,
      100,
    );
    const m = await kpis(s);
    assert.deepEqual([m.wau, m.avg_sessions_per_user, m.avg_session_duration], [30, 1, 300]);
  });
});

// trial_to_paid pairs each device's first trial with its first paid purchase within 720 h: a paid
// purchase folded after its trial, and a trial folded late, after its paid purchase, both count.
describe('analytics: trial conversions folded in either order', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1' });

  it('converts a trial whichever of it and its purchase is folded first', async () => {
    const day = 86_400_000;
    const t0 = Date.now() - 45 * day;
    const [a, b, c, d] = Array.from({ length: 4 }, () => randomUUID());
    const buy = (anon: string, ts: number, trial: boolean) =>
      makeEvent({
        event_name: 'purchase_completed',
        ts_ms: ts,
        user: { anon_id: anon },
        properties: { price: trial ? 0 : 9.99, currency: 'USD', is_trial: trial, period: 'P1M' },
      });
    // First fold: A's and C's trials, C's purchase 9 days later (within 30 days, not 7), B's
    // purchase, D's trial. Second fold: A's purchase 2 days after its trial; B's trial, late.
    await ingestAndFold(s, [
      buy(a, t0, true),
      buy(c, t0, true),
      buy(c, t0 + 9 * day, false),
      buy(b, t0 + 3 * day, false),
      buy(d, t0, true),
    ]);
    await ingestAndFold(s, [buy(a, t0 + 2 * day, false), buy(b, t0, true)]);
    const date = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString().slice(0, 10);
    const k = await s.c.get(`/api/v1/analytics/kpis?start_date=${date(50)}&end_date=${date(35)}`, s.t.console);
    assert.equal(k.status, 200, k.text);
    const m = Object.fromEntries(k.body.kpis.map((x: { metric: string; current: number }) => [x.metric, x.current]));
    // 4 trials 45 days ago (both conversion windows are over): A and B convert within 7 days, C within 30, D not.
    assert.deepEqual([m.trial_to_paid_d7, m.trial_to_paid_d30], [50, 75]);
  });
});

// A run folds up to the last seq it saw once the inserts holding seqs below it have ended, then
// looks again: with no insert open then, what committed meanwhile joins the same pass. Events still
// behind an open insert at that look are folded by another pass of the same run when they are at
// least ANALYTICS_FOLD_PARALLEL_MIN seqs, or when the pass before was that big (a catch-up); small
// passes (the steady state) leave them to the next interval.
describe('analytics: a run catches up with events committed behind its horizon', () => {
  // Only the test's runs fold: no job worker (the chain's first run, sent at start, or the minute
  // cron's). A job run that took its horizon between the test's ingest and its writer's lock folded
  // that horizon only (seen: [1, 1] for [3, 3]), even for the admin call made after it.
  const s = useTenantApp({ ROLE: 'api', ROLLUP_INTERVAL_S: '3600', ANALYTICS_FOLD_PARALLEL_MIN: '5' });
  let rootToken: string | undefined;

  /**
   * Ingests `before` events, holds an insert transaction open while a run starts (the run reads its
   * horizon, then waits for the writer), ingests `behind` events above that horizon and commits the
   * writer. With `secondWriter`, another insert transaction is open by then, so the run's second
   * look at the horizon keeps the first; it commits a second later. Returns what the run folded,
   * with the last seq.
   */
  async function runWithBatchBehindHorizon(before: number, behind: number, secondWriter = true) {
    rootToken ??= (
      await s.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' })
    ).body.token;
    const root = { authorization: `Bearer ${rootToken}` };
    const rollup = () => s.c.post('/api/v1/admin/analytics/rollup', {}, root);
    assert.equal((await rollup()).status, 200);
    const ingest = async (n: number) => {
      const batch = Array.from({ length: n }, () => makeEvent({ event_name: 'app_open', ts_ms: Date.now() - 60_000 }));
      const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
      assert.equal(r.status, 202, r.text);
    };
    const hold = async () => {
      const writer = await s.server.db.connect();
      await writer.query(`BEGIN`);
      await writer.query(`LOCK TABLE events IN ROW EXCLUSIVE MODE`);
      return writer;
    };
    await ingest(before);
    const writers = [await hold()];
    try {
      const run = rollup();
      await sleep(500);
      if (secondWriter) writers.push(await hold());
      await ingest(behind);
      await writers[0].query(`COMMIT`);
      const second = writers[1] && sleep(1_000).then(() => writers[1].query(`COMMIT`));
      const r = await run;
      await second;
      assert.equal(r.status, 200, r.text);
      const { rows } = await s.server.db.query(`SELECT max(seq)::int AS last FROM events`);
      return {
        folded: r.body.data.folded,
        watermark: r.body.data.watermark,
        last: rows[0].last,
        reached: r.body.data.horizonReached,
      };
    } finally {
      for (const w of writers) w.release();
    }
  }

  it('folds, in the same pass, a batch committed while it waited for an insert', async () => {
    const r = await runWithBatchBehindHorizon(1, 2, false);
    assert.deepEqual([r.folded, r.watermark, r.reached], [3, r.last, true]);
  });

  it('folds, in the same run, a batch behind its horizon as big as the catch-up bound', async () => {
    const r = await runWithBatchBehindHorizon(1, 5);
    assert.deepEqual([r.folded, r.watermark, r.reached], [6, r.last, true]);
  });

  it('folds, in the same run, the small tail behind a catch-up pass', async () => {
    const r = await runWithBatchBehindHorizon(6, 2);
    assert.deepEqual([r.folded, r.watermark, r.reached], [8, r.last, true]);
  });

  it('leaves a small batch behind a small pass to the next run', async () => {
    const r = await runWithBatchBehindHorizon(1, 2);
    assert.deepEqual([r.folded, r.watermark, r.reached], [1, r.last - 2, true]);
  });
});

// The admin fold answers for every event committed before the call, even when the job's run is in
// flight with a horizon taken before those events: it waits for that run, then folds (jobs.ts
// runAfterNow). Joining the run in flight, it answered that run's fold (seen: 1 event of 3).
describe('analytics: the admin fold called while the job runs', () => {
  // The job chain folds every second; a small tail is left to the next run (no second pass).
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FOLD_PARALLEL_MIN: '1000' });

  it('answers a fold covering the events committed before the call', async () => {
    const token = (
      await s.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' })
    ).body.token;
    const hold = async () => {
      const writer = await s.server.db.connect();
      await writer.query(`BEGIN`);
      await writer.query(`LOCK TABLE events IN ROW EXCLUSIVE MODE`);
      return writer;
    };
    const writers = [await hold()];
    try {
      // A job run took its horizon and waits for the writer (it polls the writer's transaction).
      await until(
        async () => {
          const { rows } = await s.server.db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND query LIKE '%JOIN unnest($1::int[], $2::text[])%'`,
          );
          return rows[0].n > 0;
        },
        () => 'a job run waits for the open insert',
      );
      // Its second look will find this writer open and keep its first horizon.
      writers.push(await hold());
      const batch = Array.from({ length: 3 }, () => makeEvent({ event_name: 'app_open', ts_ms: Date.now() - 60_000 }));
      const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
      assert.equal(r.status, 202, r.text);
      const { rows } = await s.server.db.query(`SELECT max(seq)::int AS last FROM events`);
      const fold = s.c.post('/api/v1/admin/analytics/rollup', {}, { authorization: `Bearer ${token}` });
      // The call reaches the service while the job's run still waits; then that run looks again, finds
      // the second writer open, and keeps its first horizon.
      await sleep(300);
      await writers[0].query(`COMMIT`);
      await sleep(300);
      await writers[1].query(`COMMIT`);
      const answer = await fold;
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.data.watermark, rows[0].last);
    } finally {
      for (const w of writers) w.release();
    }
  });
});
