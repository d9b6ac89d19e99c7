import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: Client;
let t: Tenant;
let other: Tenant;
let secret: string;

interface Hit {
  path: string;
  raw: string;
  headers: Record<string, string>;
  status: number;
}
const hits: Hit[] = [];
const failuresLeft = new Map<string, number>();
let receiver: http.Server;
let receiverUrl: string;

const base = Date.now() - 2 * 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const key = (k: { public_key: string }) => ({ 'x-api-key': k.public_key });
const events = Array.from({ length: 1200 }, (_, i) =>
  makeEvent({ ts_ms: base + i * 10, event_name: i % 3 ? 'app_open' : 'paywall_view', properties: { i } }),
);
const body = (extra: Record<string, unknown> = {}) => ({
  start_date: iso(base),
  end_date: iso(base + 3600_000),
  ...extra,
});

async function ingest(c: Client, k: { public_key: string }, list: Record<string, any>[]) {
  for (let i = 0; i < list.length; i += 500) {
    const r = await c.post('/api/v1/ingest/events', { batch: list.slice(i, i + 500) }, key(k));
    assert.equal(r.status, 202, r.text);
  }
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const waitStatus = (cl: Client, k: { public_key: string }, id: string, status: string) =>
  waitFor(`export ${status}`, async () => {
    const r = await cl.get(`/api/v1/sdk/events/export/bulk/${id}`, key(k));
    return r.body.data?.status === status && r.body.data;
  });

/** Holds an exclusive lock on events, so a bulk job that starts blocks on its first read. */
async function lockEvents(url: string) {
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
  let open = true;
  return {
    release: async () => {
      if (!open) return;
      open = false;
      await lock.query('COMMIT');
      await lock.end();
    },
  };
}

before(async () => {
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const left = failuresLeft.get(req.url!) ?? 0;
      const status = left > 0 ? 500 : 204;
      failuresLeft.set(req.url!, left - 1);
      hits.push({ path: req.url!, raw, headers: req.headers as Record<string, string>, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await startTestServer({ WEBHOOK_RETRY_SCHEDULE: '1,1,1', ROLLUP_INTERVAL_S: '1', WEBHOOK_POLL_MS: '100' });
  c = client(server.url);
  [t, other] = await Promise.all([createTenant(c), createTenant(c)]);
  await ingest(c, t.live, events);
  await ingest(c, t.live, [makeEvent({ ts_ms: base + 5, privacy: { consent: { analytics: false } } })]);
  await ingest(c, t.sandbox, [makeEvent({ ts_ms: base + 5 })]);
  secret = (await c.get('/api/v1/settings', t.console)).body.data.callback_signing_secret;
  assert.ok(secret, 'callback signing secret');
});
after(async () => {
  await server.stop();
  receiver.close();
});

describe('bulk export', () => {
  it('runs processing -> completed, downloads export-<id>.json, and calls back signed', async () => {
    const lock = await lockEvents(server.databaseUrl);
    let id: string;
    try {
      const r = await c.post(
        '/api/v1/sdk/events/export/bulk',
        body({ callback_url: `${receiverUrl}/done` }),
        key(t.live),
      );
      assert.equal(r.status, 202, r.text);
      const rec = r.body.data;
      id = rec.id;
      assert.equal(rec.status, 'processing');
      assert.deepEqual(rec.params, { start_date: iso(base), end_date: iso(base + 3600_000), event_names: [] });
      assert.equal(rec.download_url, null);
      // Not completed yet: 409.
      const early = await c.get(`/api/v1/sdk/events/export/bulk/${id}/download`, key(t.live));
      assert.equal(early.status, 409);
      assert.equal(early.body.code, 'export_not_ready');
    } finally {
      await lock.release();
    }
    const done = await waitStatus(c, t.live, id, 'completed');
    assert.equal(done.event_count, 1200);
    assert.equal(done.download_url, `/api/v1/sdk/events/export/bulk/${id}/download`);
    assert.ok(done.file_size_bytes > 0);
    assert.ok(Date.parse(done.completed_at) <= Date.now());
    const ttl = Date.parse(done.expires_at) - Date.parse(done.completed_at);
    assert.ok(Math.abs(ttl - 168 * 3600_000) < 5000, `expires 7 days after completion (${ttl})`);

    const res = await fetch(server.url + done.download_url, { headers: key(t.live) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-disposition'), `attachment; filename="export-${id}.json"`);
    const text = await res.text();
    assert.equal(Buffer.byteLength(text), done.file_size_bytes);
    const file = JSON.parse(text);
    assert.equal(file.length, 1200);
    assert.deepEqual(
      file.map((e: any) => e.event_id),
      events.map((e) => e.event_id),
    );
    assert.ok(file.every((e: any) => typeof e.received_at === 'string'));

    const hit = await waitFor('callback', async () => hits.find((h) => h.path === '/done'));
    const payload = new Webhook(secret).verify(hit.raw, hit.headers);
    assert.deepEqual(payload, {
      export_id: id,
      status: 'completed',
      download_url: done.download_url,
      event_count: 1200,
      file_size_bytes: done.file_size_bytes,
    });
    assert.throws(() =>
      new Webhook(`whsec_${Buffer.from('not the secret, 24 bytes!').toString('base64')}`).verify(hit.raw, hit.headers),
    );

    // Expired: 409, flagged in the record, and the cleanup deletes the file.
    const { rows } = await server.db.query(
      `UPDATE exports SET expires_at = now() - interval '1 minute' WHERE id = $1 RETURNING storage_key`,
      [id],
    );
    const late = await c.get(`/api/v1/sdk/events/export/bulk/${id}/download`, key(t.live));
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'export_expired');
    assert.equal((await c.get(`/api/v1/sdk/events/export/bulk/${id}`, key(t.live))).body.data.expired, true);
    const file1 = path.join(server.config.dataDir, 'exports', rows[0].storage_key);
    await waitFor('expired file deleted', async () => !existsSync(file1));
  });

  it('filters by event names and retries the callback when the receiver fails twice', async () => {
    failuresLeft.set('/flaky', 2);
    const r = await c.post(
      '/api/v1/sdk/events/export/bulk',
      body({ event_names: ['paywall_view'], callback_url: `${receiverUrl}/flaky` }),
      key(t.live),
    );
    assert.equal(r.status, 202, r.text);
    const done = await waitStatus(c, t.live, r.body.data.id, 'completed');
    assert.equal(done.event_count, 400);
    const ok = await waitFor('third attempt', async () => hits.find((h) => h.path === '/flaky' && h.status === 204));
    const attempts = hits.filter((h) => h.path === '/flaky');
    assert.deepEqual(
      attempts.map((h) => h.status),
      [500, 500, 204],
    );
    // Same message id on every attempt, so receivers can deduplicate.
    assert.equal(new Set(attempts.map((h) => h.headers['webhook-id'])).size, 1);
    assert.equal((new Webhook(secret).verify(ok.raw, ok.headers) as any).event_count, 400);
  });

  it('marks an export failed with a reason when its file cannot be written, and calls back', async () => {
    const tf = await createTenant(c);
    // A file where the tenant's export directory should be: the write fails with ENOTDIR, a permanent error.
    mkdirSync(path.join(server.config.dataDir, 'exports'), { recursive: true });
    writeFileSync(path.join(server.config.dataDir, 'exports', tf.orgId), 'in the way');
    const r = await c.post(
      '/api/v1/sdk/events/export/bulk',
      body({ callback_url: `${receiverUrl}/failed` }),
      key(tf.live),
    );
    assert.equal(r.status, 202);
    const failed = await waitStatus(c, tf.live, r.body.data.id, 'failed');
    assert.match(failed.failure_reason, /ENOTDIR|EEXIST/);
    assert.equal(failed.download_url, null);
    const dl = await c.get(`/api/v1/sdk/events/export/bulk/${r.body.data.id}/download`, key(tf.live));
    assert.equal(dl.status, 409);
    assert.equal(dl.body.code, 'export_not_ready');
    const hit = await waitFor('failure callback', async () => hits.find((h) => h.path === '/failed'));
    const tfSecret = (await c.get('/api/v1/settings', tf.console)).body.data.callback_signing_secret;
    assert.deepEqual(new Webhook(tfSecret).verify(hit.raw, hit.headers), {
      export_id: r.body.data.id,
      status: 'failed',
      download_url: null,
      event_count: null,
      file_size_bytes: null,
    });
    const feed = await server.db.query(
      `SELECT action FROM activity WHERE app_id = $1 AND entity_type = 'export' AND entity_id = $2 ORDER BY id`,
      [tf.appId, r.body.data.id],
    );
    assert.deepEqual(
      feed.rows.map((x) => x.action),
      ['created', 'failed'],
    );
  });

  it('answers 404 for unknown ids, other apps and the other environment', async () => {
    const r = await c.post('/api/v1/sdk/events/export/bulk', body(), key(t.live));
    const id = r.body.data.id;
    for (const [k, p] of [
      [other.live, id],
      [other.live, `${id}/download`],
      [t.sandbox, id],
      [t.live, randomUUID()],
      [t.live, `${randomUUID()}/download`],
      [t.live, 'not-an-id'],
    ] as const) {
      const res = await c.get(`/api/v1/sdk/events/export/bulk/${p}`, key(k));
      assert.equal(res.status, 404, p);
      assert.equal(res.body.code, 'not_found');
    }
    // Sandbox exports hold sandbox events only.
    const sb = await c.post('/api/v1/sdk/events/export/bulk', body(), key(t.sandbox));
    assert.equal((await waitStatus(c, t.sandbox, sb.body.data.id, 'completed')).event_count, 1);
  });

  it('validates the body and the callback URL', async () => {
    const day = iso(base).slice(0, 10);
    for (const b of [
      { start_date: day, end_date: iso(base + 1000) },
      { start_date: iso(base + 1000), end_date: iso(base) },
      { end_date: iso(base) },
      body({ event_names: Array.from({ length: 51 }, (_, i) => `e${i}`) }),
      body({ event_names: ['x'.repeat(129)] }),
      body({ callback_url: 'ftp://example.com/x' }),
      body({ callback_url: 'not a url' }),
      body({ callback_url: `https://example.com/${'x'.repeat(3000)}` }),
    ]) {
      const r = await c.post('/api/v1/sdk/events/export/bulk', b, key(t.live));
      assert.equal(r.status, 400, JSON.stringify(b).slice(0, 200));
      assert.equal(r.body.code, 'validation_failed');
    }
  });
});

describe('bulk export across a restart', () => {
  it('refuses private callback targets, and an export interrupted by a restart still completes', async () => {
    let s1: TestServer | undefined = await startTestServer({ ALLOW_PRIVATE_TARGETS: '0', ROLLUP_INTERVAL_S: '3600' });
    let s2: TestServer | undefined;
    try {
      const c1 = client(s1.url);
      const tt = await createTenant(c1);
      const refused = await c1.post(
        '/api/v1/sdk/events/export/bulk',
        body({ callback_url: 'http://127.0.0.1:9/cb' }),
        key(tt.live),
      );
      assert.equal(refused.status, 400);
      assert.equal(refused.body.errors[0].path, '/body/callback_url');
      const meta = await c1.post(
        '/api/v1/sdk/events/export/bulk',
        body({ callback_url: 'http://169.254.169.254/latest' }),
        key(tt.live),
      );
      assert.equal(meta.status, 400);

      await ingest(
        c1,
        tt.live,
        events.slice(0, 600).map((e) => ({ ...e, event_id: randomUUID() })),
      );
      const dbUrl = s1.databaseUrl;
      const lock = await lockEvents(dbUrl);
      const watch = new pg.Client({ connectionString: dbUrl });
      await watch.connect();
      let id: string;
      try {
        const r = await c1.post('/api/v1/sdk/events/export/bulk', body(), key(tt.live));
        assert.equal(r.status, 202);
        id = r.body.data.id;
        // The job has started (claimed its run) and is now blocked reading events.
        await waitFor(
          'job started',
          async () => (await watch.query('SELECT attempts FROM exports WHERE id = $1', [id])).rows[0].attempts === 1,
        );
        await waitFor(
          'job blocked on its read',
          async () =>
            (
              await watch.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'DECLARE export_cursor%' AND state = 'active'`,
              )
            ).rows[0].n === 1,
        );
        // Shutdown interrupts the run (its statement is cancelled); other readers blocked by the
        // lock (analytics rollups) must be let through before the pool can close.
        const stopping = s1.stop();
        await waitFor(
          'export run cancelled',
          async () =>
            (
              await watch.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'DECLARE export_cursor%' AND state = 'active'`,
              )
            ).rows[0].n === 0,
        );
        await lock.release();
        await stopping;
        s1 = undefined;
      } finally {
        await lock.release().catch(() => undefined);
      }
      const mid = await watch.query('SELECT status FROM exports WHERE id = $1', [id]);
      assert.equal(mid.rows[0].status, 'processing');
      await watch.end();

      s2 = await startTestServer({ ROLLUP_INTERVAL_S: '3600' }, dbUrl);
      const done = await waitStatus(client(s2.url), tt.live, id, 'completed');
      assert.equal(done.event_count, 600);
      const runs = await s2.db.query('SELECT attempts FROM exports WHERE id = $1', [id]);
      assert.equal(runs.rows[0].attempts, 2);
      const res = await fetch(`${s2.url}${done.download_url}`, { headers: key(tt.live) });
      assert.equal(JSON.parse(await res.text()).length, 600);
    } finally {
      await s1?.stop();
      await s2?.stop();
    }
  });
});
