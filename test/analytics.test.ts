import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { FLAG, FLAG_ROOM } from '../src/modules/analytics/definitions.js';

/*
 * A hand-built dataset in an app whose timezone is Asia/Tokyo (UTC+9, no DST). Day B is 40 days
 * before today (Tokyo). Expected values are worked out by hand in the comments next to each number.
 *
 * Devices (platform, country):
 *  A (ios, US):     B: session sA1 10:00-10:10 (600 s): app_open 10:00, session_start 10:01, onboarding_flow_started 10:02,
 *                      onboarding_step_completed 10:03, onboarding_flow_completed 10:04, paywall_view 10:05,
 *                      purchase_completed trial 10:06, purchase_completed? no - the session ends with app_close 10:10.
 *                   B+1: session sA2 09:00-09:05 (300 s): app_open 09:00, purchase_started 09:04, purchase_completed 9.90 USD P1M 09:05.
 *                   B+7: session sA3: session_start 10:00 (0 s).
 *  B (android, DE): B: session sB1 12:00-12:20 (1200 s): app_open 12:00, session_start 12:01, onboarding_flow_started 12:02, paywall_view 12:05, app_close 12:20.
 *                   B+1 00:30 Tokyo (= B 15:30 UTC!): app_open, session sB2 (0 s).
 *                   B+2: purchase_completed 10 EUR (rate 1.25 -> 12.50 USD), no period, session sB3 (0 s).
 *                   B+3: purchase_refunded 10 EUR (12.50 USD), session sB4 (0 s).
 *  C (ios, JP):     B-3: app_open (sC0, 0 s).  B+2 01:00 Tokyo (= B+1 16:00 UTC): app_open 01:00 + app_crash 01:01 (sC1, 60 s).
 *  D (android, US): consent false on B (app_open, paywall_view): never counted.
 *  E (ios, US):     B+4: app_open (sE1, 0 s).  LATE (sent after a fold): B+2 paywall_view (sE0, 0 s).
 */

const TZ = 'Asia/Tokyo';
let server: TestServer;
let c: Client;
let t: Tenant;
let B: string;
let today: string;
const dev = { A: randomUUID(), B: randomUUID(), C: randomUUID(), D: randomUUID(), E: randomUUID() };
const plat = {
  A: ['ios', 'US'],
  B: ['android', 'DE'],
  C: ['ios', 'JP'],
  D: ['android', 'US'],
  E: ['ios', 'US'],
} as const;
const sess: Record<string, string> = {};
const sid = (k: string) => (sess[k] ??= randomUUID());

const tokyoDate = (d: Date) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);
const add = (d: string, n: number) =>
  new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
/** Unix ms of Tokyo local time hh:mm on day B+off. */
const at = (off: number, hhmm: string) => Date.parse(`${add(B, off)}T${hhmm}:00+09:00`);

let ids: Record<keyof typeof dev, string> = dev;
function ev(
  d: keyof typeof dev,
  name: string,
  off: number,
  hhmm: string,
  s: string,
  props: Record<string, unknown> = {},
  consent = true,
) {
  return makeEvent({
    event_name: name,
    ts_ms: at(off, hhmm),
    user: { anon_id: ids[d] },
    device: {
      platform: plat[d][0],
      os: '17',
      app_version: '1.0',
      sdk_version: '2.0',
      locale: 'en_US',
      country: plat[d][1],
    },
    context: { session_id: sid(s) },
    properties: props,
    privacy: { consent: { analytics: consent } },
  });
}

const ingest = async (batch: unknown[], key = t.live.public_key) => {
  const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.rejected, 0, r.text);
};
let root: Record<string, string>;
const fold = async () => {
  const r = await c.post('/api/v1/admin/analytics/rollup', {}, root);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
};
const kpis = async (q: string, h = t.console) => {
  const r = await c.get(`/api/v1/analytics/kpis?${q}`, h);
  assert.equal(r.status, 200, r.text);
  return Object.fromEntries(r.body.kpis.map((k: any) => [k.metric, k])) as Record<string, any>;
};
const cur = (k: Record<string, any>) => Object.fromEntries(Object.entries(k).map(([m, v]) => [m, v.current]));

before(async () => {
  server = await startTestServer({ ROLLUP_INTERVAL_S: '1' });
  c = client(server.url);
  t = await createTenant(c);
  const rs = await c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
  root = { authorization: `Bearer ${rs.body.token}` };
  assert.equal((await c.patch('/api/v1/settings', { timezone: TZ }, t.console)).status, 200);
  today = tokyoDate(new Date());
  B = add(today, -40);
  const rate = await c.put(
    '/api/v1/admin/exchange-rates',
    { rates: [{ currency: 'EUR', day: add(B, -10), usd_per_unit: 1.25 }] },
    root,
  );
  assert.equal(rate.status, 200, rate.text);

  await ingest(dataset());
  // Sandbox data must never mix into production numbers.
  await ingest([ev('D', 'app_open', 0, '09:00', 'sSandbox')], t.sandbox.public_key);
});
after(() => server.stop());

function dataset() {
  return [
    ev('A', 'app_open', 0, '10:00', 'sA1'),
    ev('A', 'session_start', 0, '10:01', 'sA1'),
    ev('A', 'onboarding_flow_started', 0, '10:02', 'sA1'),
    ev('A', 'onboarding_step_completed', 0, '10:03', 'sA1'),
    ev('A', 'onboarding_flow_completed', 0, '10:04', 'sA1'),
    ev('A', 'paywall_view', 0, '10:05', 'sA1'),
    ev('A', 'purchase_completed', 0, '10:06', 'sA1', { price: 0, currency: 'USD', is_trial: true, period: 'P1M' }),
    ev('A', 'app_close', 0, '10:10', 'sA1'),
    ev('A', 'app_open', 1, '09:00', 'sA2'),
    ev('A', 'purchase_started', 1, '09:04', 'sA2'),
    ev('A', 'purchase_completed', 1, '09:05', 'sA2', { price: 9.9, currency: 'USD', period: 'P1M' }),
    ev('A', 'session_start', 7, '10:00', 'sA3'),
    ev('B', 'app_open', 0, '12:00', 'sB1'),
    ev('B', 'session_start', 0, '12:01', 'sB1'),
    ev('B', 'onboarding_flow_started', 0, '12:02', 'sB1'),
    ev('B', 'paywall_view', 0, '12:05', 'sB1'),
    ev('B', 'app_close', 0, '12:20', 'sB1'),
    ev('B', 'app_open', 1, '00:30', 'sB2'),
    ev('B', 'purchase_completed', 2, '11:00', 'sB3', { price: 10, currency: 'EUR' }),
    ev('B', 'purchase_refunded', 3, '11:00', 'sB4', { price: 10, currency: 'EUR' }),
    ev('C', 'app_open', -3, '08:00', 'sC0'),
    ev('C', 'app_open', 2, '01:00', 'sC1'),
    ev('C', 'app_crash', 2, '01:01', 'sC1'),
    ev('D', 'app_open', 0, '09:00', 'sD', {}, false),
    ev('D', 'paywall_view', 0, '09:01', 'sD', {}, false),
    ev('E', 'app_open', 4, '15:00', 'sE1'),
  ];
}

const W = () => `start_date=${B}&end_date=${add(B, 6)}`;

describe('analytics: rollups and the 24 metrics', () => {
  it('folds on its own (ROLLUP_INTERVAL_S=1) without a manual trigger', async () => {
    let seen = 0;
    for (let i = 0; i < 60 && seen === 0; i++) {
      await new Promise((r) => setTimeout(r, 500));
      seen = (await kpis(W())).new_users.current;
    }
    // A, B (first day B) and E (first day B+4) before the late event: 3
    assert.equal(seen, 3);
  });

  it('counts before the late event', async () => {
    await fold();
    const k = cur(await kpis(W()));
    // device-days in [B, B+6]: A{B,B+1} + B{B,B+1,B+2,B+3} + C{B+2} + E{B+4} = 8 -> 8 / 7 = 1.142857
    assert.equal(k.dau, 1.14);
    // paywall users A, B out of active A, B, C, E: 2 / 4
    assert.equal(k.paywall_view_rate, 50);
  });

  it('computes every metric by hand after a late event (Tokyo days, EUR purchase, refund)', async () => {
    await ingest([ev('E', 'paywall_view', 2, '18:00', 'sE0')]);
    const r = await fold();
    assert.ok(r.folded >= 1);
    const k = await kpis(W());
    assert.deepEqual(Object.keys(k).length, 24);
    assert.deepEqual(cur(k), {
      mau: 4, // 30 days ending B+6: A, B, C, E (D consent false; sandbox excluded)
      wau: 4, // B..B+6: A, B, C, E
      dau: 1.29, // device-days 8 + late E on B+2 = 9; 9 / 7 = 1.2857
      mrr: 9.9, // A's 9.90 USD P1M bought B+1 covers B+6; B's EUR purchase has no period
      arr: 118.8, // 9.90 x 12
      revenue_daily: 3.2, // paid 9.90 + 10 EUR x 1.25 = 22.40; / 7 days = 3.20
      net_revenue: 9.9, // 22.40 - refund 12.50
      arpu: 5.6, // 22.40 / 4 active
      arppu: 11.2, // 22.40 / 2 paying users (A, B)
      onboarding_start_rate: 66.67, // new users A, B, E; started A, B: 2 / 3
      onboarding_completion_rate: 50, // completed A / started A, B
      paywall_view_rate: 75, // A, B, E (late) / 4 active
      trial_start_rate: 33.33, // trial A / paywall A, B, E
      trial_to_paid_d7: 100, // A: trial B 10:06, paid B+1 09:05 (< 7 x 24 h): 1 / 1
      trial_to_paid_d30: 100,
      retention_d1: 66.67, // cohort A, B, E; on first day + 1: A (B+1), B (B+1 00:30 Tokyo): 2 / 3
      retention_d7: 33.33, // A on B+7: 1 / 3
      retention_d30: 0, // nobody on first day + 30 (all cohorts observable: B+2+30 < today = B+40)
      avg_session_duration: 240, // (600 + 300 + 1200 + 0 + 0 + 0 + 60 + 0 + 0) / 9 sessions starting in window
      avg_sessions_per_user: 2.25, // 9 sessions / 4 active users
      stickiness: 32.14, // dau 9/7 / mau 4 x 100 = 32.142
      new_users: 3, // A, B (B), E (B+2 after the late event)
      refund_rate: 50, // 1 refund / 2 paid purchases
      crash_free_rate: 75, // 100 - 1 crash user (C, B+2 in Tokyo) / 4 x 100
    });
    // previous_period = B-7..B-1: only C (B-3)
    assert.deepEqual(k.dau.sparkline, [2, 2, 3, 1, 1, 0, 0]); // B: A,B  B+1: A,B  B+2: B,C,E  B+3: B  B+4: E
    assert.equal(k.dau.previous, 0.14); // 1 / 7
    assert.equal(k.dau.change_pct, 800); // (9/7 - 1/7) / (1/7) x 100
    assert.equal(k.dau.trend, 'up');
    assert.equal(k.mau.previous, 1);
    assert.equal(k.crash_free_rate.previous, 100);
    assert.equal(k.crash_free_rate.change_pct, -25); // (75 - 100) / 100 x 100
    assert.equal(k.crash_free_rate.trend, 'down');
    assert.equal(k.net_revenue.previous, 0);
    assert.equal(k.net_revenue.change_pct, null); // previous 0
    assert.equal(k.net_revenue.trend, 'flat');
    assert.equal(k.arppu.previous, null); // no paying user before
    assert.equal(k.onboarding_completion_rate.previous, null);
    assert.equal(k.retention_d1.previous, 0); // cohort C (B-3) not active on B-2
  });

  it('filters by platform, reads sandbox separately and reports period/compared_to', async () => {
    const r = await c.get(`/api/v1/analytics/kpis?${W()}&platform=ios&compare=previous_year`, t.console);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.period, { start: B, end: add(B, 6) });
    assert.equal(r.body.compared_to.start.slice(0, 4), String(Number(B.slice(0, 4)) - 1));
    const k = Object.fromEntries(r.body.kpis.map((x: any) => [x.metric, x.current]));
    assert.equal(k.dau, 0.71); // ios device-days A 2 + C 1 + E 2 = 5; 5 / 7
    assert.equal(k.new_users, 2); // A, E
    assert.equal(k.arpu, 3.3); // 9.90 / 3 ios users
    const sb = cur(await kpis(`${W()}&environment=sandbox`));
    assert.equal(sb.dau, 0.14); // one sandbox device-day / 7
    assert.equal(sb.new_users, 1);
  });

  it('timeseries: daily, segmented, compared and weekly', async () => {
    const r = await c.get(
      `/api/v1/analytics/kpis/timeseries?metrics=dau,new_users&${W()}&compare=previous_period`,
      t.console,
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.granularity, 'daily');
    assert.equal(r.body.compare, 'previous_period');
    assert.match(r.body.meta.as_of, /^\d{4}-\d{2}-\d{2}$/);
    const dau = r.body.metrics.find((m: any) => m.metric === 'dau');
    assert.deepEqual(
      dau.data.map((p: any) => p.value),
      [2, 2, 3, 1, 1, 0, 0],
    );
    assert.equal(dau.data[0].date, B);
    assert.deepEqual(
      dau.compare_data.map((p: any) => p.value),
      [0, 0, 0, 0, 1, 0, 0],
    ); // C on B-3
    assert.match(dau.compare_label, /Previous period/);
    const seg = await c.get(`/api/v1/analytics/kpis/timeseries?metrics=new_users&${W()}&segment=platform`, t.console);
    const pts = seg.body.metrics[0].data.filter((p: any) => p.value > 0);
    // B: A (ios) + B (android); B+2: E (ios)
    assert.deepEqual(
      pts.map((p: any) => [p.date, p.breakdown_value, p.value]),
      [
        [B, 'android', 1],
        [B, 'ios', 1],
        [add(B, 2), 'ios', 1],
      ],
    );
    const wk = await c.get(`/api/v1/analytics/kpis/timeseries?metrics=new_users&${W()}&granularity=weekly`, t.console);
    // independent expectation: new users on B, B, B+2 grouped by the Monday of their week
    const monday = (d: string) => add(d, -((new Date(`${d}T00:00:00Z`).getUTCDay() + 6) % 7));
    const expected = new Map<string, number>();
    for (let i = 0; i < 7; i++) expected.set(monday(add(B, i)), 0);
    for (const d of [B, B, add(B, 2)]) expected.set(monday(d), expected.get(monday(d))! + 1);
    assert.deepEqual(
      wk.body.metrics[0].data.map((p: any) => [p.date, p.value]),
      [...expected.entries()],
    );
  });

  it('retention cohorts, segmented, with null for unobservable days', async () => {
    const r = await c.get('/api/v1/analytics/retention', t.console);
    assert.equal(r.status, 200);
    const byDay = Object.fromEntries(r.body.cohorts.map((x: any) => [x.cohort_date, x]));
    assert.deepEqual(Object.keys(byDay), [add(B, -3), B, add(B, 2)]);
    // cohort B = {A, B}: d1 both (A B+1, B B+1 00:30 Tokyo); d3 B only (refund B+3); d7 A only (B+7); d60/d90 after today
    assert.deepEqual(byDay[B].retention, { d1: 100, d3: 50, d7: 50, d14: 0, d30: 0, d60: null, d90: null });
    assert.equal(byDay[B].cohort_size, 2);
    assert.deepEqual(byDay[add(B, 2)].retention, { d1: 0, d3: 0, d7: 0, d14: 0, d30: 0, d60: null, d90: null }); // E: only B+4 (= d2)
    const p = await c.get('/api/v1/analytics/retention?segment=platform', t.console);
    const android = p.body.cohorts.find((x: any) => x.cohort_date === B && x.segment === 'android');
    assert.deepEqual(android.retention, { d1: 100, d3: 100, d7: 0, d14: 0, d30: 0, d60: null, d90: null });
  });

  it('funnels: the named definitions, an override and unknown names', async () => {
    const f = async (n: string) => {
      const r = await c.get(`/api/v1/analytics/funnel/${n}`, t.console);
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    const onb = await f('onboarding');
    assert.equal(onb.date, add(B, 7)); // latest day with any event: A's session_start on B+7
    // started A, B; step_completed A; completed A
    assert.deepEqual(
      onb.steps.map((s: any) => [s.users, s.conversion_rate, s.cumulative_rate, s.drop_off_rate]),
      [
        [2, 100, 100, 0],
        [1, 50, 50, 50],
        [1, 100, 50, 0],
      ],
    );
    // paywall A, B, E; purchase_started A (B+1 09:04); purchase_completed at/after it A (09:05)
    assert.deepEqual(
      (await f('monetization')).steps.map((s: any) => [s.users, s.conversion_rate]),
      [
        [3, 100],
        [1, 33.33],
        [1, 100],
      ],
    );
    // session_start A, B; later day within 7 x 24 h: A (B+7 10:00 < B 10:01 + 7 d); day >= first + 7: A
    assert.deepEqual(
      (await f('retention')).steps.map((s: any) => s.users),
      [2, 1, 1],
    );
    assert.deepEqual(
      (await f('icp_usp')).steps.map((s: any) => s.users),
      [1, 1, 1],
    );
    // first app_open in window: A, B, C (B-3), E; onboarding started A, B; purchase_completed after: A (trial), B (EUR)
    assert.deepEqual(
      (await f('aso')).steps.map((s: any) => s.users),
      [4, 2, 2],
    );
    const ua = await f('paid_ua');
    assert.deepEqual(
      ua.steps.map((s: any) => [s.step_name, s.users, s.conversion_rate]),
      [
        ['ad_impressions', 0, 100],
        ['ad_swipes', 0, null],
        ['install', 4, null],
        ['purchase_completed', 2, 50],
      ],
    );
    const hasAdStats = (await server.db.query(`SELECT to_regclass('ad_network_stats') IS NOT NULL AS ok`)).rows[0].ok;
    if (hasAdStats) {
      // The ad-network capability's daily campaign stats feed the first two steps.
      await server.db.query(
        `INSERT INTO ad_network_stats (tenant_id, app_id, ad_account_id, entity_type, entity_id, day, impressions, swipes, view_completion,
                                       conversion_purchases, spend_local_micro, spend_local, currency)
         VALUES ($1, $2, 'acc', 'campaign', 'c1', $3, 1000, 40, 0, 0, 0, 0, 'USD')`,
        [t.orgId, t.appId, B],
      );
      // 1000 impressions -> 40 swipes (4%) -> 4 installs (10%) -> 2 purchases (50%); cumulative 4 / 1000 = 0.4%
      assert.deepEqual(
        (await f('paid_ua')).steps.map((s: any) => [s.users, s.conversion_rate, s.cumulative_rate]),
        [
          [1000, 100, 100],
          [40, 4, 4],
          [4, 10, 0.4],
          [2, 50, 0.2],
        ],
      );
    }
    const empty = await f('feedback_loop');
    assert.deepEqual(
      empty.steps.map((s: any) => [s.users, s.conversion_rate, s.cumulative_rate]),
      [
        [0, 100, 100],
        [0, null, null],
        [0, null, null],
      ],
    );
    const put = await c.put(
      '/api/v1/analytics/funnels/onboarding',
      {
        steps: [
          { name: 'start', event: 'onboarding_flow_started' },
          { name: 'done', event: 'onboarding_flow_completed' },
        ],
      },
      t.console,
    );
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(
      (await f('onboarding')).steps.map((s: any) => [s.step_name, s.users]),
      [
        ['start', 2],
        ['done', 1],
      ],
    );
    assert.equal((await c.del('/api/v1/analytics/funnels/onboarding', t.console)).status, 200);
    assert.equal((await f('onboarding')).steps.length, 3);
    assert.equal((await c.get('/api/v1/analytics/funnel/nope', t.console)).status, 404);
  });

  it('activity feed: most recent first with relative time', async () => {
    const r = await c.get('/api/v1/analytics/activity', t.console);
    assert.equal(r.status, 200);
    assert.ok(r.body.items.length >= 3 && r.body.items.length <= 20);
    const first = r.body.items[0];
    assert.equal(first.entity_type, 'settings'); // the timezone change was the last recorded change
    assert.equal(first.relative_time, 'just now');
    assert.ok(!Number.isNaN(Date.parse(first.timestamp)));
    for (const k of ['id', 'icon', 'description', 'action']) assert.equal(typeof first[k], 'string');
  });

  it('validates dates, metrics and range length', async () => {
    const bad = async (q: string, path = 'kpis') => {
      const r = await c.get(`/api/v1/analytics/${path}?${q}`, t.console);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.equal(r.body.code, 'validation_failed');
    };
    await bad('start_date=2026-02-30');
    await bad('end_date=yesterday');
    await bad(`start_date=${add(today, -800)}&end_date=${today}`);
    await bad(`start_date=${today}&end_date=${add(today, -1)}`);
    await bad('metrics=dau,bogus', 'kpis/timeseries');
    await bad('metrics=dau&granularity=hourly', 'kpis/timeseries');
    await bad('start_date=2026-13-01', 'retention');
    assert.equal((await c.get('/api/v1/analytics/kpis', {})).status, 401);
  });

  it('an empty app answers zeros and nulls, never errors', async () => {
    const e = await createTenant(c);
    const k = cur(await kpis('', e.console));
    assert.equal(k.dau, 0);
    assert.equal(k.mau, 0);
    assert.equal(k.new_users, 0);
    assert.equal(k.net_revenue, 0);
    assert.equal(k.mrr, 0);
    assert.equal(k.arpu, null);
    assert.equal(k.retention_d1, null);
    assert.equal(k.crash_free_rate, null);
    assert.equal(k.stickiness, null);
    const ts = await c.get('/api/v1/analytics/kpis/timeseries?metrics=dau,arpu&period=7d', e.console);
    assert.equal(ts.status, 200);
    assert.equal(ts.body.metrics[0].data.length, 7);
    assert.deepEqual(
      ts.body.metrics[1].data.map((p: any) => p.value),
      [null, null, null, null, null, null, null],
    );
    const fu = await c.get('/api/v1/analytics/funnel/onboarding', e.console);
    assert.equal(fu.status, 200);
    assert.deepEqual(
      fu.body.steps.map((s: any) => s.users),
      [0, 0, 0],
    );
    const re = await c.get('/api/v1/analytics/retention', e.console);
    assert.deepEqual(re.body.cohorts, []);
    // Another app's data is invisible: this tenant's headers cannot read t's app.
    assert.equal((await c.get('/api/v1/analytics/kpis', { ...e.console, 'x-app-id': t.appId })).status, 403);
  });

  it('never skips a row whose seq was taken before a later row committed', async () => {
    // An inserter holds seq N uncommitted while a later batch (seq > N) commits and a fold runs.
    const held = await server.db.connect();
    try {
      await held.query('BEGIN');
      await held.query(
        `INSERT INTO events (tenant_id, app_id, environment, event_id, event_name, ts, anon_id, session_id, platform, country, consent, payload)
         VALUES ($1, $2, 'sandbox', $3, 'app_open', to_timestamp($4 / 1000.0), $5, $6, 'ios', 'FR', true, '{}')`,
        [t.orgId, t.appId, randomUUID(), at(5, '10:00'), randomUUID(), randomUUID()],
      );
      await ingest([ev('E', 'app_open', 5, '11:00', 'sSb2')], t.sandbox.public_key);
      const running = fold();
      await new Promise((r) => setTimeout(r, 400));
      await held.query('COMMIT');
      await running;
    } finally {
      held.release();
    }
    await fold();
    const sb = cur(await kpis(`${W()}&environment=sandbox`));
    // sandbox devices: D (B), E (B+5) and the held device (B+5): 3 new users, 3 device-days / 7
    assert.equal(sb.new_users, 3);
    assert.equal(sb.dau, 0.43);
  });

  it('gives the same numbers when the same data arrives in many in-order batches', async () => {
    // Same events, new devices and sessions, in another Tokyo app: 6 chronological batches with a
    // fold after each (the incremental path), then the late event (the recompute path).
    const t2 = await createTenant(c);
    assert.equal((await c.patch('/api/v1/settings', { timezone: TZ }, t2.console)).status, 200);
    await fold();
    const saved = { ids, sess: { ...sess } };
    ids = { A: randomUUID(), B: randomUUID(), C: randomUUID(), D: randomUUID(), E: randomUUID() };
    for (const k of Object.keys(sess)) delete sess[k];
    const events = dataset().sort((x, y) => x.ts_ms - y.ts_ms);
    const late = ev('E', 'paywall_view', 2, '18:00', 'sE0');
    ids = saved.ids;
    Object.assign(sess, saved.sess);
    for (let i = 0; i < events.length; i += 5) {
      const r = await c.post(
        '/api/v1/ingest/events',
        { batch: events.slice(i, i + 5) },
        { 'x-api-key': t2.live.public_key },
      );
      assert.equal(r.status, 202);
      await fold();
    }
    assert.equal(
      (await c.post('/api/v1/ingest/events', { batch: [late] }, { 'x-api-key': t2.live.public_key })).status,
      202,
    );
    await fold();
    assert.deepEqual(cur(await kpis(W(), t2.console)), cur(await kpis(W(), t.console)));
    const r1 = await c.get('/api/v1/analytics/retention?segment=country', t.console);
    const r2 = await c.get('/api/v1/analytics/retention?segment=country', t2.console);
    assert.deepEqual(r2.body.cohorts, r1.body.cohorts);
  });

  it('moves a device to the platform of a late, earlier first event', async () => {
    const F = randomUUID();
    const fev = (platform: string, off: number, s: string) =>
      makeEvent({
        event_name: 'app_open',
        ts_ms: at(off, '12:00'),
        user: { anon_id: F },
        context: { session_id: s },
        device: { platform, os: '1', app_version: '1', sdk_version: '1', locale: 'de_DE', country: 'DE' },
      });
    const count = async () => {
      const a = cur(await kpis(`${W()}&environment=sandbox&platform=android`));
      const i = cur(await kpis(`${W()}&environment=sandbox&platform=ios`));
      return {
        android: a.new_users,
        ios: i.new_users,
        androidSessions: a.avg_sessions_per_user,
        androidUsd: a.net_revenue,
        iosUsd: i.net_revenue,
      };
    };
    const before = await count();
    const s1 = randomUUID();
    // F's purchase moves with it (revenue histogram cells).
    const buy = {
      ...fev('android', 5, s1),
      event_id: randomUUID(),
      event_name: 'purchase_completed',
      properties: { price: 10, currency: 'USD', period: 'P1M' },
    };
    await ingest([fev('android', 5, s1), buy], t.sandbox.public_key);
    await fold();
    const mid = await count();
    assert.equal(mid.android, before.android + 1);
    assert.equal(mid.androidUsd, before.androidUsd + 10);
    await ingest([fev('ios', 1, randomUUID())], t.sandbox.public_key);
    await fold();
    const after = await count();
    // F's first event is now the iOS one: F counts under ios only, with both its sessions
    assert.equal(after.android, before.android);
    assert.equal(after.ios, mid.ios + 1);
    assert.equal(after.androidSessions, before.androidSessions);
    assert.deepEqual([after.androidUsd, after.iosUsd], [before.androidUsd, mid.iosUsd + 10]);
  });

  it('counts a purchase in a currency without a rate once the rate exists', async () => {
    const sandbox = async () => {
      const k = cur(await kpis(`${W()}&environment=sandbox`));
      return { usd: k.net_revenue, mrr: k.mrr };
    };
    const before = await sandbox();
    const buy = makeEvent({
      event_name: 'purchase_completed',
      ts_ms: at(4, '12:00'),
      user: { anon_id: randomUUID() },
      properties: { price: 8, currency: 'XTS', period: 'P1M' },
    });
    await ingest([buy], t.sandbox.public_key);
    await fold();
    assert.deepEqual(await sandbox(), before);
    const rate = await c.put(
      '/api/v1/admin/exchange-rates',
      { rates: [{ currency: 'XTS', day: add(B, -10), usd_per_unit: 1.5 }] },
      root,
    );
    assert.equal(rate.status, 200, rate.text);
    await fold();
    // 8 XTS (ISO's testing code, in no shipped rate file) x 1.5 = 12 USD, a monthly subscription bought B+4 that covers the window's end.
    assert.deepEqual(await sandbox(), { usd: before.usd + 12, mrr: before.mrr + 12 });
  });

  it('rebuilds in the background when the timezone changes', async () => {
    assert.equal((await c.patch('/api/v1/settings', { timezone: 'UTC' }, t.console)).status, 200);
    // In UTC, B's "B+1 00:30 Tokyo" app_open is B 15:30 UTC: cohort B's d1 drops to A only (50%).
    let d1: number | null = null;
    for (let i = 0; i < 60 && d1 !== 50; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const r = await c.get(`/api/v1/analytics/retention?start_date=${B}&end_date=${B}`, t.console);
      d1 = r.body.cohorts[0]?.retention.d1 ?? null;
    }
    assert.equal(d1, 50);
  });

  it('keeps every histogram equal to a recomputation from the rollup rows (after late, moved and rebuilt data)', async () => {
    await fold();
    // Each pair: the fold-maintained cells (non-zero) and the same cells recomputed from scratch.
    // A device's active days are its row's int4[] (migration 017), packed as definitions.ts pack() does.
    const DEVICE_DAYS = `SELECT d.app_id, d.environment, d.anon_id, d.platform, d.country, date '2000-01-01' + (x >> ${FLAG_ROOM}) AS day,
      x & ${(1 << FLAG_ROOM) - 1} AS flags
      FROM an_devices d CROSS JOIN unnest(d.days) x`;
    const pairs: [string, string, string][] = [
      [
        'flags',
        `SELECT app_id, environment, day, platform, country, flag, gap, n FROM an_flag_hist WHERE n <> 0`,
        `SELECT app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), bit, coalesce(day - prev, 100000), count(*)::int
           FROM (SELECT y.*, f.bit, lag(y.day) OVER (PARTITION BY y.app_id, y.environment, y.anon_id, f.bit ORDER BY y.day) AS prev
                   FROM (${DEVICE_DAYS}) y CROSS JOIN unnest('{${Object.values(FLAG).join(',')}}'::int[]) AS f(bit) WHERE y.flags & f.bit <> 0) z
          GROUP BY 1, 2, 3, 4, 5, 6, 7`,
      ],
      [
        'active',
        `SELECT app_id, environment, day, platform, country, gap, n FROM an_active_hist WHERE n <> 0`,
        `SELECT app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), coalesce(day - prev_day, 100000), count(*)::int
           FROM (SELECT y.*, lag(y.day) OVER (PARTITION BY y.app_id, y.environment, y.anon_id ORDER BY y.day) AS prev_day FROM (${DEVICE_DAYS}) y) z
          GROUP BY 1, 2, 3, 4, 5, 6`,
      ],
      [
        'cohorts',
        `SELECT app_id, environment, first_day, platform, country, ret_mask, n FROM an_cohort_hist WHERE n <> 0`,
        `SELECT app_id, environment, first_day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), ret_mask, count(*)::int
           FROM an_devices GROUP BY 1, 2, 3, 4, 5, 6`,
      ],
      [
        'onboarding',
        `SELECT app_id, environment, first_day, platform, country, onb_off, n FROM an_onb_hist WHERE n <> 0`,
        `SELECT app_id, environment, first_day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), onb_day - first_day, count(*)::int
           FROM an_devices WHERE onb_day IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6`,
      ],
      [
        'sessions',
        `SELECT app_id, environment, start_day, end_day, platform, country, n, dur FROM an_session_hist WHERE n <> 0`,
        `SELECT app_id, environment, start_day, end_day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), count(*)::int,
                sum(extract(epoch FROM end_ts - start_ts))::float8
           FROM an_sessions GROUP BY 1, 2, 3, 4, 5, 6`,
      ],
      // USD sums to 6 decimals: the kept ones were added in another order.
      [
        'revenue',
        `SELECT app_id, environment, day, platform, country, kind, period_end, n, round(usd::numeric, 6), round(mrr::numeric, 6)
           FROM an_rev_hist WHERE n <> 0`,
        `SELECT app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), kind, coalesce(period_end, 'infinity'),
                count(*)::int, round(coalesce(sum(amount_usd), 0)::numeric, 6), round(coalesce(sum(mrr_usd), 0)::numeric, 6)
           FROM an_purchases GROUP BY 1, 2, 3, 4, 5, 6, 7`,
      ],
    ];
    for (const [name, kept, truth] of pairs) {
      const { rows } =
        await server.db.query(`SELECT (SELECT count(*)::int FROM ((${kept}) EXCEPT ALL (${truth})) a) AS extra,
        (SELECT count(*)::int FROM ((${truth}) EXCEPT ALL (${kept})) b) AS missing, (SELECT count(*)::int FROM (${truth}) c) AS cells`);
      assert.deepEqual({ name, extra: rows[0].extra, missing: rows[0].missing }, { name, extra: 0, missing: 0 });
      assert.ok(rows[0].cells > 0, `${name} has cells`);
    }
  });
});
