import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, makeEvent, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

let rx: Receiver;
const servers: TestServer[] = [];

before(async () => {
  rx = await startReceiver();
});
after(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  await rx.close();
});

const start = async (env: Record<string, string>, dbUrl?: string) => {
  const s = await startTestServer({ WEBHOOK_POLL_MS: '50', ...env }, dbUrl);
  servers.push(s);
  return s;
};
const onboarding = (t: Tenant, url: string, n = 1) =>
  client(url).post(
    '/api/v1/ingest/events',
    { batch: Array.from({ length: n }, () => makeEvent({ event_name: 'onboarding_flow_started' })) },
    { 'x-api-key': t.live.public_key },
  );

describe('durability', () => {
  it('a restart in the middle of a retry schedule still delivers', async () => {
    const first = await start({ WEBHOOK_RETRY_SCHEDULE: '4,1,1' });
    const c = client(first.url);
    const t = await createTenant(c);
    const w = (await c.post('/api/v1/webhooks', { url: rx.url('/restart'), events: ['onboarding.started'] }, t.console))
      .body.data;
    rx.respond((r, n) => (r.path === '/restart' && n === 1 ? { status: 500 } : { status: 200 }));
    await onboarding(t, first.url);
    await waitFor(() => rx.at('/restart').length >= 1, 'first attempt');
    await first.stop();
    assert.equal(rx.at('/restart').length, 1, 'the retry was not sent before the stop');

    const second = await start({ WEBHOOK_RETRY_SCHEDULE: '4,1,1' }, first.databaseUrl);
    await waitFor(() => rx.at('/restart').length >= 2, 'retry after restart', 15_000);
    const [a, b] = rx.at('/restart');
    assert.equal(a.headers['webhook-id'], b.headers['webhook-id']);
    verify(w.secret, b);
    const d = await waitFor(async () => {
      const list = (await client(second.url).get(`/api/v1/webhooks/${w.id}/deliveries`, t.console)).body.data;
      return list[0]?.status === 'succeeded' ? list[0] : null;
    }, 'succeeded');
    assert.equal(d.attempts, 2);
    await second.stop();
  });

  it('many workers on one database never send the same attempt twice', async () => {
    const a = await start({ WEBHOOK_RETRY_SCHEDULE: '1' });
    const b = await start({ WEBHOOK_RETRY_SCHEDULE: '1' }, a.databaseUrl);
    const c3 = await start({ WEBHOOK_RETRY_SCHEDULE: '1' }, a.databaseUrl);
    const c = client(a.url);
    const t = await createTenant(c);
    await c.post('/api/v1/webhooks', { url: rx.url('/many'), events: ['onboarding.started'] }, t.console);
    rx.respond(() => ({ status: 200 }));
    // Spread the load over the three API instances too.
    await Promise.all([onboarding(t, a.url, 250), onboarding(t, b.url, 250), onboarding(t, c3.url, 250)]);
    await waitFor(() => rx.at('/many').length >= 750, '750 deliveries', 20_000);
    await new Promise((r) => setTimeout(r, 500));
    const ids = rx.at('/many').map((r) => String(r.headers['webhook-id']));
    assert.equal(ids.length, 750, 'no duplicates arrived late');
    assert.equal(new Set(ids).size, 750, 'each delivery sent exactly once');
    const { rows } = await a.db.query(
      `SELECT count(*)::int AS n, max(attempts) AS max FROM webhook_deliveries WHERE status = 'succeeded'`,
    );
    assert.deepEqual(rows[0], { n: 750, max: 1 });
  });
});
