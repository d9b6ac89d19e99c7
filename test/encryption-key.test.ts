// ENCRYPTION_KEY across real processes (node --import tsx src/main.ts) on one database: the first key is
// adopted, another key refuses to start with one line, a rotation with ENCRYPTION_KEY_PREVIOUS re-seals
// everything while instances on both keys keep answering, and a database from before the key check is
// matched by opening its secrets.
import assert from 'node:assert/strict';
import { createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { connect, REDIRECT_URI } from './helpers/ad-network.js';
import { client, createTenant, type Client, type Tenant } from './helpers/client.js';
import { clusterEnv, makeInstance, startInstance, stopInstance, type Instance } from './helpers/processes.js';
import { createTestDatabase } from './helpers/server.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

const started: Instance[] = [];
const pools: pg.Pool[] = [];
let rx: Receiver;
let fake: FakeAdNetwork;

before(async () => {
  rx = await startReceiver();
  fake = await startFakeAdNetwork();
});
after(async () => {
  await Promise.all(started.map((i) => stopInstance(i).catch(() => undefined)));
  await Promise.all(pools.map((p) => p.end()));
  await rx?.close();
  await fake?.stop();
});

const newKey = () => randomBytes(32).toString('hex');
/** The documented check value, computed here on its own: HMAC-SHA256 of the fixed label under the key. */
const checkOf = (hex: string) =>
  createHmac('sha256', Buffer.from(hex, 'hex')).update('mobile-sdk-backend encryption key check').digest('hex');
const kidOf = (hex: string) => checkOf(hex).slice(0, 8);
/** AES-256-GCM open of iv (12) | tag (16) | ciphertext, independent of src/lib/secret-box.ts. */
function gcmOpen(hex: string, sealed: Buffer): string {
  const d = createDecipheriv('aes-256-gcm', Buffer.from(hex, 'hex'), sealed.subarray(0, 12));
  d.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([d.update(sealed.subarray(28)), d.final()]).toString('utf8');
}

async function database() {
  const url = await createTestDatabase();
  const db = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(db);
  const env = clusterEnv(url, {
    WEBHOOK_POLL_MS: '100',
    AD_NETWORK_AUTH_URL: fake.authUrl,
    AD_NETWORK_API_URL: fake.apiUrl,
    AD_NETWORK_CLIENT_ID: fake.clientId,
    AD_NETWORK_CLIENT_SECRET: fake.clientSecret,
    AD_NETWORK_REDIRECT_URI: REDIRECT_URI,
  });
  delete (env as Record<string, string | undefined>).ENCRYPTION_KEY;
  return { url, db, env };
}

async function start(role: Instance['role'], env: Record<string, string>, keys: { key: string; previous?: string }) {
  const inst = await makeInstance(role);
  started.push(inst);
  await startInstance(inst, {
    ...env,
    ENCRYPTION_KEY: keys.key,
    ...(keys.previous ? { ENCRYPTION_KEY_PREVIOUS: keys.previous } : {}),
  });
  return { inst, c: client(inst.url) };
}

/** Starts an instance that must refuse: exits non-zero with exactly one line naming ENCRYPTION_KEY. */
async function refused(env: Record<string, string>, key: string): Promise<string> {
  const inst = await makeInstance('api');
  started.push(inst);
  await assert.rejects(startInstance(inst, { ...env, ENCRYPTION_KEY: key }), /exited 1/);
  assert.equal(inst.proc!.exitCode, 1);
  // Its last output may still be in the pipe when the exit is seen.
  if (!inst.proc!.stdout!.closed) await once(inst.proc!, 'close');
  const lines = inst.tail.filter((l) => l.includes('ENCRYPTION_KEY'));
  assert.equal(lines.length, 1, inst.tail.join('\n'));
  assert.match(lines[0], /start-up failed: ENCRYPTION_KEY is not the key this database's secrets are sealed with/);
  assert.match(lines[0], /ENCRYPTION_KEY_PREVIOUS/, 'names the rotation cure too');
  assert.doesNotMatch(lines[0], new RegExp(key), 'never prints the key');
  return lines[0];
}

const recordedCheck = async (db: pg.Pool) =>
  (await db.query('SELECT check_value FROM encryption_key_check')).rows[0]?.check_value as string | undefined;

/** Every stored secret, as text (bytes as hex). */
async function storedSecrets(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query(`
    SELECT secret AS v FROM webhook_endpoints UNION ALL SELECT previous_secret FROM webhook_endpoints
    UNION ALL SELECT secret FROM webhook_deliveries UNION ALL SELECT callback_signing_secret FROM app_settings
    UNION ALL SELECT encode(refresh_token_enc, 'hex') FROM ad_network_connections
    UNION ALL SELECT encode(access_token_enc, 'hex') FROM ad_network_connections
    UNION ALL SELECT encode(verifier_enc, 'hex') FROM ad_network_oauth_states`);
  return rows.map((r) => r.v).filter((v) => v !== null);
}

const underKey = (v: string, kid: string) => v.startsWith(`sealed:v2:${kid}:`) || v.startsWith(`02${kid}`);

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

  it('the first key is adopted by an empty database; an instance with another key refuses to start', async () => {
    ({ env, db } = await database());
    a = await start('api', env, { key: old });
    assert.equal(await recordedCheck(db), checkOf(old));
    t = await createTenant(a.c);
    const before = await storedSecrets(db);
    assert.ok(before.length > 0 && before.every((v) => underKey(v, kidOf(old))), before.join(' '));

    const line = await refused(env, newKey());
    assert.match(line, new RegExp(`database: key id ${kidOf(old)}`));
    assert.equal(await recordedCheck(db), checkOf(old), 'the refused instance changed nothing');
    assert.deepEqual(await storedSecrets(db), before);
    // The instance on the database's key goes on serving.
    assert.equal((await a.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })).status, 200);
  });

  it('rotation: new + previous key re-seals everything, instances on both keys never answer 5xx, the old key is refused after', async () => {
    const conn = await connect(a.c, t);
    assert.equal(conn.status, 'connected');
    const w = (await a.c.post('/api/v1/webhooks', { url: rx.url('/rot'), events: ['onboarding.started'] }, t.console))
      .body.data;
    const secret = (await a.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret as string;
    assert.match(secret, /^whsec_/);
    const keys = await sdkKeys(a.c, t, 30);
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
    const c = await start('api', env, { key: next, previous: old });
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

    // The old key alone is refused from now on; the new key alone serves.
    await stopInstance(a.inst);
    const line = await refused(env, old);
    assert.match(line, new RegExp(`database: key id ${kidOf(next)}; this instance: key id ${kidOf(old)}`));
    await stopInstance(c.inst);
    const d = await start('api', env, { key: next });
    assert.equal((await d.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret, secret);
    assert.equal((await d.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })).status, 200);
    await stopInstance(b.inst);
    await stopInstance(d.inst);
  });
});

describe('a database from before the key check', () => {
  it('is matched by opening a stored secret, then recorded; another key is refused', async () => {
    const { db, env } = await database();
    const key = newKey();
    const e = await start('all', env, { key });
    const t = await createTenant(e.c);
    const w = (
      await e.c.post('/api/v1/webhooks', { url: rx.url('/legacy'), events: ['onboarding.started'] }, t.console)
    ).body.data;
    const secret = (await e.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret;
    await stopInstance(e.inst);
    // As the previous version left it: 'sealed:v1:' + base64 (no key id; the ciphertext is the same) and no check.
    await db.query('DELETE FROM encryption_key_check');
    for (const [table, col] of [
      ['webhook_endpoints', 'secret'],
      ['app_settings', 'callback_signing_secret'],
    ])
      await db.query(
        `UPDATE ${table} SET ${col} = 'sealed:v1:' || substring(${col} from 20) WHERE ${col} LIKE 'sealed:v2:%'`,
      );
    assert.ok((await storedSecrets(db)).every((v) => v.startsWith('sealed:v1:')));

    await refused(env, newKey());
    assert.equal(await recordedCheck(db), undefined, 'nothing recorded by the refused instance');

    const g = await start('all', env, { key });
    assert.equal(await recordedCheck(db), checkOf(key));
    assert.equal((await g.c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret, secret);
    assert.equal((await g.c.post(`/api/v1/webhooks/${w.id}/test`, {}, t.console)).status, 202);
    verify(w.secret, await waitFor(() => rx.at('/legacy')[0], 'signed with a v1 secret'));
    await stopInstance(g.inst);
  });
});
