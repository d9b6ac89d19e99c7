// ENCRYPTION_KEY across real processes (node --import tsx src/main.ts) on one database: the first key is
// adopted, another key refuses to start with one line, and a rotation with ENCRYPTION_KEY_PREVIOUS
// re-seals everything while instances on both keys keep answering (encryption-key-upgrade.test.ts: a
// database from before the key check).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { connect, REDIRECT_URI } from './helpers/ad-network.js';
import { createTenant, type Client, type Tenant } from './helpers/client.js';
import {
  checkOf,
  cleanUp,
  database,
  gcmOpen,
  kidOf,
  newKey,
  recordedCheck,
  refused,
  start,
  storedSecrets,
  underKey,
} from './helpers/key-cluster.js';
import { stopInstance, type Instance } from './helpers/processes.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

let rx: Receiver;
let fake: FakeAdNetwork;

before(async () => {
  rx = await startReceiver();
  fake = await startFakeAdNetwork();
});
after(async () => {
  await cleanUp();
  await rx?.close();
  await fake?.stop();
});

/** Requests in a loop until stopped; collects every status. */
function hammer(calls: (() => Promise<number>)[]) {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      statuses.push(await calls[i % calls.length]().catch(() => 599));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    statuses,
    stop: async () => {
      running = false;
      await loop;
      return statuses;
    },
  };
}

/** SDK keys enough for a loop of bootstraps under the 60 per minute and key limit. */
async function sdkKeys(c: Client, t: Tenant, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++)
    out.push(
      (await c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: [] }, t.console)).body.data
        .public_key,
    );
  return out;
}

describe('ENCRYPTION_KEY across instances', () => {
  let env: Record<string, string>;
  let db: pg.Pool;
  const old = newKey();
  const next = newKey();
  let a: { inst: Instance; c: Client };
  let t: Tenant;
  let w: { id: string; secret: string };
  let secret: string;
  let keys: string[];

  it('the first key is adopted by an empty database; an instance with another key refuses to start', async () => {
    ({ env, db } = await database({
      AD_NETWORK_AUTH_URL: fake.authUrl,
      AD_NETWORK_API_URL: fake.apiUrl,
      AD_NETWORK_CLIENT_ID: fake.clientId,
      AD_NETWORK_CLIENT_SECRET: fake.clientSecret,
      AD_NETWORK_REDIRECT_URI: REDIRECT_URI,
    }));
    a = await start('all', env, { key: old });
    assert.equal(await recordedCheck(db), checkOf(old));
    t = await createTenant(a.c);
    // Secrets of every kind under the old key (settings, webhook, ad-network tokens), while X is refused.
    const setUp = async () => {
      assert.equal((await connect(a.c, t)).status, 'connected');
      w = (await a.c.post('/api/v1/webhooks', { url: rx.url('/rot'), events: ['onboarding.started'] }, t.console)).body
        .data;
      secret = (await a.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret;
      assert.match(secret, /^whsec_/);
      keys = await sdkKeys(a.c, t, 30);
    };
    const [line] = await Promise.all([refused(env, newKey()), setUp()]);
    assert.match(line, new RegExp(`database: key id ${kidOf(old)}`));
    assert.equal(await recordedCheck(db), checkOf(old), 'the refused instance changed nothing');
    const stored = await storedSecrets(db);
    assert.ok(stored.length >= 4 && stored.every((v) => underKey(v, kidOf(old))), stored.join(' '));
    // The instance on the database's key goes on serving.
    assert.equal((await a.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })).status, 200);
  });

  it('rotation: new + previous key re-seals everything, instances on both keys never answer 5xx, the old key is refused after', async () => {
    const boot = (c: Client, i: number) => async () =>
      (await c.get('/api/v1/sdk/bootstrap', { 'x-api-key': keys[i % keys.length] })).status;

    // A (old key only) keeps serving bootstraps while B rotates: bootstrap opens no secret.
    const onA = hammer(keys.map((_, i) => boot(a.c, i)));
    const b = await start('all', env, { key: next, previous: old });
    const aStatuses = await onA.stop();
    assert.ok(aStatuses.length > 0);
    assert.deepEqual([...new Set(aStatuses)], [200], 'bootstrap on the old-key instance during the rotation');

    assert.equal(await recordedCheck(db), checkOf(next), 'the check moved to the new key');
    const after = await storedSecrets(db);
    assert.ok(after.length >= 4 && after.every((v) => underKey(v, kidOf(next))), after.join(' '));
    const { rows } = await db.query('SELECT callback_signing_secret AS s FROM app_settings WHERE app_id = $1', [
      t.appId,
    ]);
    const sealed = rows[0].s as string;
    assert.equal(gcmOpen(next, Buffer.from(sealed.slice(`sealed:v2:${kidOf(next)}:`.length), 'base64')), secret);

    // B reads what the old key sealed, now re-sealed: settings, webhook signing, ad-network tokens.
    assert.equal((await b.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret, secret);
    assert.equal((await b.c.post(`/api/v1/webhooks/${w.id}/test`, {}, t.console)).status, 202);
    verify(w.secret, await waitFor(() => rx.at('/rot')[0], 'test delivery signed after the rotation'));
    const verified = await b.c.get('/api/v1/ad-network/connection?verify=true', t.console);
    assert.equal(verified.status, 200, verified.text);
    assert.equal(verified.body.data.status, 'connected');
    assert.equal((await b.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })).status, 200);

    // Rolling on: A (old key) still writes a secret; B, on both keys, serves throughout C's start.
    const onB = hammer([
      ...keys.map((_, i) => boot(b.c, i)),
      async () => (await b.c.get('/api/v1/settings', t.console)).status,
      async () => (await b.c.get('/api/v1/webhooks', t.console)).status,
      async () => (await b.c.get('/api/v1/ad-network/connection', t.console)).status,
    ]);
    const w2 = (await a.c.post('/api/v1/webhooks', { url: rx.url('/late'), events: ['onboarding.started'] }, t.console))
      .body.data;
    assert.equal((await b.c.post(`/api/v1/webhooks/${w2.id}/test`, {}, t.console)).status, 202);
    verify(w2.secret, await waitFor(() => rx.at('/late')[0], 'B signs with a secret sealed under the old key'));
    assert.ok(
      (await storedSecrets(db)).some((v) => underKey(v, kidOf(old))),
      'A wrote under the old key',
    );
    // C starts with both keys (re-sealing what A wrote), while the old key alone is refused and the new
    // key alone starts: the last steps of the rotation, at once.
    const [c, line, d] = await Promise.all([
      start('api', env, { key: next, previous: old }),
      refused(env, old),
      start('api', env, { key: next }),
    ]);
    const bStatuses = await onB.stop();
    assert.ok(bStatuses.length >= 10, `${bStatuses.length} requests`);
    assert.deepEqual(
      bStatuses.filter((s) => s >= 500),
      [],
      'no 5xx from an instance on both keys',
    );
    assert.ok(
      (await storedSecrets(db)).every((v) => underKey(v, kidOf(next))),
      "C's start re-sealed what A wrote meanwhile",
    );
    assert.match(line, new RegExp(`database: key id ${kidOf(next)}; this instance: key id ${kidOf(old)}`));
    assert.equal((await d.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret, secret);
    assert.equal((await d.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })).status, 200);
    await Promise.all([a, b, c, d].map((x) => stopInstance(x.inst)));
  });
});
