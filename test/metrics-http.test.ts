// The HTTP series of GET /metrics (http_requests_total, http_request_duration_seconds) against the
// requests this test made and counted itself: per route pattern, method and status, the 404s of no
// route as `unmatched`, and histograms whose buckets add up to their count.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: Client;
let t: Tenant;

before(async () => {
  server = await startTestServer();
  c = client(server.url);
  t = await createTenant(c);
});
after(async () => server?.stop());

/** Samples of one metric name as label maps with their values. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)) labels[k] = v;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

const pick = (text: string, name: string, want: Record<string, string>) =>
  samples(text, name).filter((s) => Object.entries(want).every(([k, v]) => s.labels[k] === v));

describe('GET /metrics: HTTP series', () => {
  it('counts each route pattern, method and status as this test sent them', async () => {
    const V = '/api/v1/sdk/config-bundle/version';
    const key = { 'x-api-key': t.live.public_key };
    const sent = { ok: 7, head: 3, noKey: 4, unmatched: 5 };
    for (let i = 0; i < sent.ok; i++) assert.equal((await c.get(V, key)).status, 200);
    for (let i = 0; i < sent.head; i++)
      assert.equal((await fetch(server.url + V, { method: 'HEAD', headers: key })).status, 200);
    for (let i = 0; i < sent.noKey; i++) assert.equal((await c.get(V)).status, 401);
    for (let i = 0; i < sent.unmatched; i++) assert.equal((await c.get(`/no/such/route/${i}`)).status, 404);
    // Patterns, not URLs: one route with a parameter is one series.
    const paywall = await c.get('/api/v1/paywalls/00000000-0000-4000-8000-000000000000', t.console);
    assert.equal(paywall.status, 404);

    const m = (await c.get('/metrics')).text;
    const count = (labels: Record<string, string>) => pick(m, 'http_requests_total', labels).map((s) => s.value);
    assert.deepEqual(count({ method: 'GET', route: V, status: '200' }), [sent.ok]);
    assert.deepEqual(count({ method: 'HEAD', route: V, status: '200' }), [sent.head]);
    assert.deepEqual(count({ method: 'GET', route: V, status: '401' }), [sent.noKey]);
    assert.deepEqual(count({ method: 'GET', route: 'unmatched', status: '404' }), [sent.unmatched]);
    assert.deepEqual(count({ route: '/api/v1/paywalls/:id', status: '404' }), [1]);
    assert.equal(pick(m, 'http_requests_total', {}).filter((s) => s.labels.route.startsWith('/no/')).length, 0);

    // Every series' histogram: cumulative buckets ending in +Inf = _count = the counter; a positive sum.
    for (const s of samples(m, 'http_requests_total')) {
      const buckets = pick(m, 'http_request_duration_seconds_bucket', s.labels);
      assert.equal(buckets.length, 14, JSON.stringify(s.labels));
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value);
      assert.equal(buckets.at(-1)!.labels.le, '+Inf');
      assert.equal(buckets.at(-1)!.value, s.value);
      assert.deepEqual(
        pick(m, 'http_request_duration_seconds_count', s.labels).map((x) => x.value),
        [s.value],
      );
      const [sum] = pick(m, 'http_request_duration_seconds_sum', s.labels);
      assert.ok(sum.value > 0 && sum.value < 60 * s.value, `sum ${sum.value}`);
    }
    assert.match(m, /^# TYPE http_requests_total counter$/m);
    assert.match(m, /^# TYPE http_request_duration_seconds histogram$/m);
  });

  it('ingest_events_total adds up the outcomes of the batches this test sent', async () => {
    const key = { 'x-api-key': t.live.public_key };
    const valid = [7, 5];
    for (const n of valid) {
      const batch = [...Array.from({ length: n }, () => makeEvent()), { event_name: 'broken' }];
      const r = await c.post('/api/v1/ingest/events', { batch }, key);
      assert.equal(r.status, 202, r.text);
    }
    const m = (await c.get('/metrics')).text;
    const n = (outcome: string) => pick(m, 'ingest_events_total', { outcome }).map((s) => s.value);
    assert.deepEqual(n('accepted'), [valid[0] + valid[1]]);
    assert.deepEqual(n('rejected'), [valid.length]);
    // A second scrape shows the same totals (the scrape does not add them twice).
    const again = (await c.get('/metrics')).text;
    assert.deepEqual(
      pick(again, 'ingest_events_total', { outcome: 'accepted' }).map((s) => s.value),
      [valid[0] + valid[1]],
    );
  });

  it('a request takes as long as the histogram says: within what the client waited for it', async () => {
    // The bound is the test's own clock: the server's time of a request is within what the client waited.
    let slowest = 0;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key });
      slowest = Math.max(slowest, (performance.now() - t0) / 1000);
    }
    const m = (await c.get('/metrics')).text;
    const labels = { method: 'GET', route: '/api/v1/sdk/bootstrap', status: '200' };
    const [sum] = pick(m, 'http_request_duration_seconds_sum', labels);
    const [n] = pick(m, 'http_request_duration_seconds_count', labels);
    assert.equal(n.value, 5);
    assert.ok(sum.value > 0 && sum.value <= 5 * slowest, `sum ${sum.value} over 5 requests, slowest ${slowest}`);
  });
});
