import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTenant, makeEvent } from './helpers/client.js';
import { sleep, startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';
import { useTenantApp } from './helpers/suite.js';

// Four attempts one second apart.
const suite = useTenantApp({ WEBHOOK_RETRY_SCHEDULE: '1,1,1', WEBHOOK_POLL_MS: '50' });
let rx: Receiver;

before(async () => {
  rx = await startReceiver();
});
after(() => rx.close());

/** Creates an endpoint on `path` for onboarding.started and fires one such event. */
async function endpointWithEvent(path: string) {
  const w = (
    await suite.c.post('/api/v1/webhooks', { url: rx.url(path), events: ['onboarding.started'] }, suite.t.console)
  ).body.data;
  const r = await suite.c.post(
    '/api/v1/ingest/events',
    { batch: [makeEvent({ event_name: 'onboarding_flow_started' })] },
    { 'x-api-key': suite.t.live.public_key },
  );
  assert.equal(r.status, 202);
  return w;
}
const deliveries = async (id: string) =>
  (await suite.c.get(`/api/v1/webhooks/${id}/deliveries`, suite.t.console)).body.data as any[];
const endpoint = async (id: string) => (await suite.c.get(`/api/v1/webhooks/${id}`, suite.t.console)).body.data;

describe('delivery: retries, failure, disabling', () => {
  it('retries after 500s on the schedule with the same webhook-id, then succeeds', async () => {
    rx.respond((r, n) => (r.path === '/flaky' && n <= 2 ? { status: 500 } : { status: 200 }));
    const w = await endpointWithEvent('/flaky');
    await waitFor(() => rx.at('/flaky').length >= 3, 'three attempts');
    const got = rx.at('/flaky');
    assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 1, 'webhook-id stable across retries');
    for (const r of got) verify(w.secret, r);
    assert.ok(got[1].at - got[0].at >= 900, 'waits the scheduled second between attempts');
    const [d] = await waitFor(
      async () => ((await deliveries(w.id))[0]?.status === 'succeeded' ? deliveries(w.id) : null),
      'succeeded',
    );
    assert.equal(d.attempts, 3);
    assert.equal(d.last_status_code, 200);
    assert.deepEqual(
      d.attempt_log.map((a: any) => a.status_code),
      [500, 500, 200],
    );
    assert.equal((await endpoint(w.id)).failing_since, null, 'a success ends the failure streak');
  });

  it('marks a delivery failed after the last attempt, and a manual retry sends it again', async () => {
    rx.respond((r) => (r.path === '/down' ? { status: 500 } : { status: 200 }));
    const w = await endpointWithEvent('/down');
    const [d] = await waitFor(
      async () => ((await deliveries(w.id))[0]?.status === 'failed' ? deliveries(w.id) : null),
      'failed',
      12_000,
    );
    assert.equal(d.attempts, 4, '1 + 3 retries');
    assert.equal(d.next_attempt_at, null);
    assert.equal(d.last_status_code, 500);
    assert.equal(rx.at('/down').length, 4);
    const e = await endpoint(w.id);
    assert.equal(e.enabled, true, 'a few failures do not disable');
    assert.ok(e.failing_since);

    rx.respond(() => ({ status: 200 }));
    const retry = await suite.c.post(`/api/v1/webhooks/${w.id}/deliveries/${d.id}/retry`, {}, suite.t.console);
    assert.equal(retry.status, 202);
    assert.equal(retry.body.data.status, 'pending');
    await waitFor(() => rx.at('/down').length >= 5, 'manual retry sent');
    assert.equal(rx.at('/down')[4].headers['webhook-id'], d.id);
    verify(w.secret, rx.at('/down')[4]);
    const [after] = await waitFor(
      async () => ((await deliveries(w.id))[0]?.status === 'succeeded' ? deliveries(w.id) : null),
      'succeeded after retry',
    );
    assert.equal(after.attempts, 5);
    assert.equal(
      (
        await suite.c.post(
          `/api/v1/webhooks/${w.id}/deliveries/00000000-0000-4000-8000-000000000000/retry`,
          {},
          suite.t.console,
        )
      ).status,
      404,
    );
  });

  it('honours Retry-After on 429 and 503', async () => {
    rx.respond((r, n) =>
      r.path === '/busy' && n === 1
        ? { status: 503, headers: { 'retry-after': '3' } }
        : r.path === '/busy' && n === 2
          ? { status: 429, headers: { 'retry-after': '2' } }
          : { status: 200 },
    );
    const w = await endpointWithEvent('/busy');
    await waitFor(() => rx.at('/busy').length >= 3, 'three attempts', 12_000);
    const [a, b, d] = rx.at('/busy');
    assert.ok(b.at - a.at >= 2900, `503 Retry-After: 3 waited ${b.at - a.at} ms`);
    assert.ok(d.at - b.at >= 1900, `429 Retry-After: 2 waited ${d.at - b.at} ms`);
    const [row] = await waitFor(
      async () => ((await deliveries(w.id))[0]?.status === 'succeeded' ? deliveries(w.id) : null),
      'succeeded',
    );
    assert.deepEqual(
      row.attempt_log.map((x: any) => x.status_code),
      [503, 429, 200],
    );
  });

  it('410 Gone disables the endpoint at once; it then gets nothing until enabled again', async () => {
    rx.respond((r) => (r.path === '/gone' ? { status: 410 } : { status: 200 }));
    const w = await endpointWithEvent('/gone');
    const e = await waitFor(async () => {
      const x = await endpoint(w.id);
      return x.enabled === false ? x : null;
    }, 'disabled');
    assert.match(e.disabled_reason, /410/);
    assert.ok(e.disabled_at);
    const [d] = await deliveries(w.id);
    assert.equal(d.status, 'failed');
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status_code, 410);
    assert.equal(
      (await suite.c.post(`/api/v1/webhooks/${w.id}/deliveries/${d.id}/retry`, {}, suite.t.console)).status,
      409,
      'disabled endpoint',
    );

    await suite.c.post(
      '/api/v1/ingest/events',
      { batch: [makeEvent({ event_name: 'onboarding_flow_started' })] },
      { 'x-api-key': suite.t.live.public_key },
    );
    await sleep(500);
    assert.equal(rx.at('/gone').length, 1);
    assert.equal((await deliveries(w.id)).length, 1, 'no delivery is created for a disabled endpoint');

    rx.respond(() => ({ status: 200 }));
    const re = await suite.c.patch(`/api/v1/webhooks/${w.id}`, { enabled: true }, suite.t.console);
    assert.equal(re.body.data.enabled, true);
    assert.equal(re.body.data.disabled_reason, null);
    assert.equal(
      (await suite.c.post(`/api/v1/webhooks/${w.id}/deliveries/${d.id}/retry`, {}, suite.t.console)).status,
      202,
    );
    await waitFor(() => rx.at('/gone').length >= 2, 'redelivered after re-enabling');
  });

  it('disables an endpoint after 5 days of continuous failure', async () => {
    rx.respond((r) => (r.path === '/dead' ? { status: 500 } : { status: 200 }));
    const w = (
      await suite.c.post('/api/v1/webhooks', { url: rx.url('/dead'), events: ['onboarding.started'] }, suite.t.console)
    ).body.data;
    // The streak began 5 days ago (this test cannot wait that long).
    await suite.server.db.query(
      `UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`,
      [w.id],
    );
    await suite.c.post(
      '/api/v1/ingest/events',
      { batch: [makeEvent({ event_name: 'onboarding_flow_started' })] },
      { 'x-api-key': suite.t.live.public_key },
    );
    const e = await waitFor(async () => {
      const x = await endpoint(w.id);
      return x.enabled === false ? x : null;
    }, 'disabled after 5 days');
    assert.match(e.disabled_reason, /5 days/);
    const [d] = await deliveries(w.id);
    assert.equal(d.status, 'failed', 'no retries are left once the endpoint is disabled');
    assert.equal(d.attempts, 1);
  });

  it('does not follow redirects: a 302 is a failed attempt and the target is never called', async () => {
    rx.respond((r) =>
      r.path === '/moved' ? { status: 302, headers: { location: rx.url('/target') } } : { status: 200 },
    );
    const w = await endpointWithEvent('/moved');
    const [d] = await waitFor(async () => {
      const list = await deliveries(w.id);
      return list[0]?.attempts >= 1 && list[0].last_status_code ? list : null;
    }, 'first attempt');
    assert.equal(d.last_status_code, 302);
    assert.equal(d.status, 'pending', 'retried like any failure');
    assert.match(d.last_error, /redirect/);
    assert.equal(rx.at('/target').length, 0);
    await suite.c.patch(`/api/v1/webhooks/${w.id}`, { enabled: false }, suite.t.console);
  });

  it('one slow endpoint with a backlog cannot hold up another endpoint', async () => {
    const t2 = await createTenant(suite.c);
    await suite.c.patch('/api/v1/settings', { events_per_minute: 100_000 }, t2.console);
    rx.respond((r) => (r.path === '/slow' ? { status: 200, delayMs: 1500 } : { status: 200 }));
    await suite.c.post('/api/v1/webhooks', { url: rx.url('/slow'), events: ['onboarding.started'] }, t2.console);
    await suite.c.post('/api/v1/webhooks', { url: rx.url('/fast'), events: ['user.identified'] }, t2.console);
    const batch = Array.from({ length: 150 }, () => makeEvent({ event_name: 'onboarding_flow_started' }));
    assert.equal(
      (await suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t2.live.public_key })).status,
      202,
    );
    // Past the first round of slow answers, so the worker has seen how slow the endpoint is.
    await waitFor(() => rx.at('/slow').length >= 20, 'slow endpoint busy');
    const sent = Date.now();
    await suite.c.post(
      '/api/v1/ingest/identify',
      { anon_id: '6f1c1b1e-1111-4111-8111-111111111111', user_id: 'fast-user', ts_ms: Date.now() },
      { 'x-api-key': t2.live.public_key },
    );
    const [fast] = await waitFor(() => (rx.at('/fast').length ? rx.at('/fast') : null), 'fast delivery');
    const slowPending = (
      await suite.server.db.query(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE app_id = $1 AND status = 'pending'`,
        [t2.appId],
      )
    ).rows[0].n;
    assert.ok(slowPending > 0, 'the slow backlog was still being worked through');
    assert.ok(fast.at - sent < 1200, `fast endpoint waited ${fast.at - sent} ms behind the slow backlog`);
    // Cap per endpoint: the slow endpoint never had every slot.
    rx.respond(() => ({ status: 200 }));
  });

  it('delivers a burst far larger than the worker concurrency completely, each once', async () => {
    const t3 = await createTenant(suite.c);
    await suite.c.patch('/api/v1/settings', { events_per_minute: 100_000 }, t3.console);
    rx.respond(() => ({ status: 200 }));
    for (let i = 0; i < 4; i++)
      await suite.c.post('/api/v1/webhooks', { url: rx.url(`/burst${i}`), events: ['onboarding.started'] }, t3.console);
    // One full outbox batch (500 events) x 4 endpoints = 2,000 deliveries at once.
    const batch = Array.from({ length: 500 }, () => makeEvent({ event_name: 'onboarding_flow_started' }));
    assert.equal(
      (await suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t3.live.public_key })).status,
      202,
    );
    const count = () => [0, 1, 2, 3].reduce((n, i) => n + rx.at(`/burst${i}`).length, 0);
    await waitFor(() => count() >= 2000, '2,000 deliveries', 30_000);
    const ids = [0, 1, 2, 3].flatMap((i) => rx.at(`/burst${i}`).map((r) => String(r.headers['webhook-id'])));
    assert.equal(new Set(ids).size, 2000);
    const health = await suite.c.get('/api/v1/ingest/health');
    assert.equal(health.status, 200, 'the process stays responsive');
  });
});
