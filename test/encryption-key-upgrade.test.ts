// A database from before the key check (sealed secrets, no check value), with real processes
// (node --import tsx src/main.ts): the key is matched by opening its secrets, then recorded.
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { prepareSecrets } from '../src/db/key-check.js';
import { createTenant } from './helpers/client.js';
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
import { stopInstance } from './helpers/processes.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

let rx: Receiver;
before(async () => {
  rx = await startReceiver();
});
after(async () => {
  await cleanUp();
  await rx?.close();
});

describe('a database from before the key check', () => {
  it('is matched by opening a stored secret, then recorded; another key is refused; a rotation re-seals the older formats', async () => {
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

    // Then a rotation re-seals the older formats too: v1 text and bare bytes (iv | tag | ciphertext).
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', Buffer.from(key, 'hex'), iv);
    const body = Buffer.concat([cipher.update('pkce-verifier', 'utf8'), cipher.final()]);
    await db.query(
      `INSERT INTO ad_network_oauth_states (state_hash, tenant_id, app_id, user_id, verifier_enc, expires_at)
       VALUES ('legacy', $1, $2, $3, $4, now() + interval '1 hour')`,
      [t.orgId, t.appId, t.userId, Buffer.concat([iv, cipher.getAuthTag(), body])],
    );
    const next = newKey();
    await prepareSecrets(
      db,
      { current: Buffer.from(next, 'hex'), previous: Buffer.from(key, 'hex') },
      pino({ level: 'silent' }),
    );
    assert.equal(await recordedCheck(db), checkOf(next));
    const stored = await storedSecrets(db);
    assert.ok(stored.length >= 3 && stored.every((v) => underKey(v, kidOf(next))), stored.join(' '));
    const { rows } = await db.query(
      `SELECT (SELECT callback_signing_secret FROM app_settings WHERE app_id = $1) AS s,
              (SELECT verifier_enc FROM ad_network_oauth_states WHERE state_hash = 'legacy') AS v`,
      [t.appId],
    );
    assert.equal(gcmOpen(next, Buffer.from(rows[0].s.slice(`sealed:v2:${kidOf(next)}:`.length), 'base64')), secret);
    assert.equal(gcmOpen(next, rows[0].v.subarray(5)), 'pkce-verifier');
  });
});
