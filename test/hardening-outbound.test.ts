import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sealStoredSecrets } from '../src/db/seal-secrets.js';
import { createSecretBox, SEALED_PREFIX } from '../src/lib/secret-box.js';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

// Issue 20, item 5: what webhook and export-callback receivers and browsers get, and what a dump of
// the database shows.
const ORIGIN = 'https://console.example.com';
const suite = useTenantApp({
  CORS_ORIGINS: ORIGIN,
  PUBLIC_URL: 'https://api.example.com/',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_RETRY_SCHEDULE: '1',
});
let rx: Receiver;
const secrets: string[] = [];

describe('webhook and callback payloads', () => {
  it('carry the environment and the envelope with the bytes it was sent with', async () => {
    rx = await startReceiver();
    const hook = await suite.c.post(
      '/api/v1/webhooks',
      { url: rx.url('/env'), events: ['onboarding.started'] },
      suite.t.console,
    );
    assert.equal(hook.status, 201, hook.text);
    const rotated = await suite.c.post(
      `/api/v1/webhooks/${hook.body.data.id}/rotate-secret`,
      undefined,
      suite.t.console,
    );
    secrets.push(hook.body.data.secret, rotated.body.data.secret);
    // Keys deliberately out of alphabetical order, and an unknown field: jsonb would reorder them.
    const ev = {
      zz_first: { b: 1, a: [2, 1] },
      ...makeEvent({ event_name: 'onboarding_flow_started', properties: { zeta: 'z', alpha: 'é' } }),
    };
    const r = await suite.c.post('/api/v1/ingest/events', { batch: [ev] }, { 'x-api-key': suite.t.sandbox.public_key });
    assert.equal(r.status, 202, r.text);
    const got = await waitFor(() => rx.at('/env')[0], 'the webhook');
    assert.deepEqual(Object.keys(got.json), ['type', 'timestamp', 'environment', 'data']);
    assert.equal(got.json.environment, 'sandbox');
    assert.ok(got.body.includes(`"event":${JSON.stringify(ev)}}`), `data.event is the envelope as sent: ${got.body}`);
    verify(rotated.body.data.secret, got);
  });

  it('an export callback with PUBLIC_URL set carries an absolute download_url', async () => {
    const key = { 'x-api-key': suite.t.live.public_key };
    await suite.c.post('/api/v1/ingest/events', { batch: [makeEvent()] }, key);
    const now = Date.now();
    const r = await suite.c.post(
      '/api/v1/sdk/events/export/bulk',
      {
        start_date: new Date(now - 3_600_000).toISOString(),
        end_date: new Date(now + 60_000).toISOString(),
        callback_url: rx.url('/done'),
      },
      key,
    );
    assert.equal(r.status, 202, r.text);
    const cb = await waitFor(() => rx.at('/done')[0], 'the export callback', 60_000);
    assert.equal(
      cb.json.download_url,
      `https://api.example.com/api/v1/sdk/events/export/bulk/${r.body.data.id}/download`,
    );
    const settings = await suite.c.get('/api/v1/settings', suite.t.console);
    secrets.push(settings.body.data.callback_signing_secret);
    verify(settings.body.data.callback_signing_secret, cb);
  });
});

describe('signing secrets at rest', () => {
  it('no table holds a webhook or callback secret in clear', async () => {
    assert.equal(secrets.length, 3);
    const db = suite.server.db;
    const { rows: tables } = await db.query<{ name: string }>(
      `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS name FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    assert.ok(tables.length > 20, 'every table of every schema (pg-boss included)');
    for (const { name } of tables) {
      for (const secret of secrets) {
        // The random part too, in case a prefix were stripped before storing.
        const core = secret.replace(/^whsec_/, '');
        const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${name} t WHERE strpos(t::text, $1) > 0`, [
          core,
        ]);
        assert.equal(rows[0].n, 0, `${name} holds a secret in clear`);
      }
    }
    const { rows } = await db.query('SELECT callback_signing_secret AS s FROM app_settings WHERE app_id = $1', [
      suite.t.appId,
    ]);
    assert.ok(rows[0].s.startsWith(SEALED_PREFIX));
  });

  it('rows written in clear before migration 018 are sealed at start-up, keeping their value', async () => {
    const db = suite.server.db;
    const box = createSecretBox(suite.server.config.encryptionKey);
    await db.query(`UPDATE webhook_endpoints SET previous_secret = 'whsec_legacy' WHERE app_id = $1`, [suite.t.appId]);
    assert.ok((await sealStoredSecrets(db, box)) >= 1);
    const { rows } = await db.query('SELECT previous_secret AS s FROM webhook_endpoints WHERE app_id = $1', [
      suite.t.appId,
    ]);
    assert.ok(rows[0].s.startsWith(SEALED_PREFIX));
    assert.equal(box.open(rows[0].s), 'whsec_legacy');
    assert.equal(await sealStoredSecrets(db, box), 0, 'idempotent');
    await rx.close();
  });
});

describe('CORS', () => {
  it('answers a preflight from an allowed origin, and nothing to another', async () => {
    const pre = (origin: string) =>
      fetch(`${suite.server.url}/api/v1/analytics/kpis`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization,x-tenant-id,x-app-id',
        },
      });
    const ok = await pre(ORIGIN);
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), ORIGIN);
    assert.match(ok.headers.get('access-control-allow-headers') ?? '', /x-tenant-id/);
    const other = await pre('https://evil.example.com');
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    const get = await fetch(`${suite.server.url}/api/v1/me`, {
      headers: { origin: ORIGIN, authorization: `Bearer ${suite.t.token}` },
    });
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('access-control-allow-origin'), ORIGIN);
    assert.match(get.headers.get('access-control-expose-headers') ?? '', /x-request-id/);
  });
});
