import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTenant, type Tenant } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// Endpoints added for console part 2: a webhook test event, the signed-in option-set reads.
const s = useTenantApp();
let other: Tenant;
const received: string[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => (received.push(body), res.end()));
});
describe('console part 2 endpoints', () => {
  before(async () => {
    other = await createTenant(s.c);
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  });
  after(() => new Promise((r) => receiver.close(r)));

  async function until(what: string, f: () => Promise<boolean>) {
    const end = Date.now() + 15_000;
    while (!(await f())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setImmediate(r));
    }
  }

  test('webhook test event: queued to that endpoint, signed and delivered; 409 when disabled; 404 for another tenant', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const hook = await s.c.post('/api/v1/webhooks', { url, events: ['user.identified'] }, s.t.console);
    assert.equal(hook.status, 201, hook.text);
    const id = hook.body.data.id;
    const sent = await s.c.post(`/api/v1/webhooks/${id}/test`, {}, s.t.console);
    assert.equal(sent.status, 202, sent.text);
    assert.equal(sent.body.data.event_type, 'webhook.test');
    await until(
      'the delivery',
      async () =>
        (await s.c.get(`/api/v1/webhooks/${id}/deliveries`, s.t.console)).body.data[0]?.status === 'succeeded',
    );
    const body = JSON.parse(received.at(-1)!);
    assert.equal(body.type, 'webhook.test');
    assert.equal(body.data.webhook_id, id);

    assert.equal((await s.c.post(`/api/v1/webhooks/${id}/test`, {}, other.console)).status, 404);
    assert.equal((await s.c.patch(`/api/v1/webhooks/${id}`, { enabled: false }, s.t.console)).status, 200);
    const refused = await s.c.post(`/api/v1/webhooks/${id}/test`, {}, s.t.console);
    assert.equal(refused.status, 409, refused.text);
  });

  test('option sets for the console: sets with counts, archived items, sync history; scoped to the app', async () => {
    const pair = { 'x-api-key': s.t.live.public_key, 'x-api-secret': s.t.live.secret_key };
    const sync = (items: { value: string; label: string }[]) =>
      s.c.post('/api/v1/sdk/option-sets/colors/sync', { mode: 'replace', items }, pair);
    assert.equal(
      (
        await sync([
          { value: 'red', label: 'Red' },
          { value: 'blue', label: 'Blue' },
        ])
      ).status,
      200,
    );
    assert.equal((await sync([{ value: 'red', label: 'Red' }])).status, 200);

    const sets = await s.c.get('/api/v1/option-sets', s.t.console);
    assert.equal(sets.status, 200, sets.text);
    assert.deepEqual(
      sets.body.data.map((x: any) => [x.set_id, x.version, x.item_count, x.archived_count]),
      [['colors', 2, 1, 1]],
    );
    const one = await s.c.get('/api/v1/option-sets/colors', s.t.console);
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body.data.archived, [{ id: null, value: 'blue', label: 'Blue' }]);
    assert.equal(one.body.data.syncs.length, 2);
    assert.match(one.body.data.syncs[0].description, /version 2/);
    assert.deepEqual(one.body.data.locked_values, []);

    assert.deepEqual((await s.c.get('/api/v1/option-sets', other.console)).body.data, []);
    assert.equal((await s.c.get('/api/v1/option-sets/colors', other.console)).status, 404);
    assert.equal((await s.c.get('/api/v1/option-sets/colors', { 'x-api-key': s.t.live.public_key })).status, 401);
  });
});
