import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LISTENER_NAME } from '../src/db/notifications.js';
import { createConfigChangeStore } from '../src/modules/config-stream/store.js';
import { client, createTenant, type Client, type Tenant } from './helpers/client.js';
import { clusterEnv, makeInstance, startInstance, stopInstance, type Instance } from './helpers/processes.js';
import { createTestDatabase, startTestServer, type TestServer } from './helpers/server.js';
import { isStream, openStream, type SseStream } from './helpers/sse-client.js';

const STREAM_ENV = {
  CONFIG_STREAM_HEARTBEAT_MS: '150',
  CONFIG_STREAM_POLL_MS: '200',
  CONFIG_STREAM_RETRY_MS: '500',
  CONFIG_STREAM_RETRY_JITTER_MS: '1000',
};

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function stream(url: string, key: string, lastEventId?: string): Promise<SseStream> {
  const s = await openStream(url, key, { lastEventId });
  assert.ok(isStream(s), `stream refused: ${JSON.stringify(s)}`);
  return s;
}

/** Opens once the instance has let go of streams closed earlier (their sockets close asynchronously). */
async function streamWhenFree(url: string, key: string): Promise<SseStream> {
  let s: Awaited<ReturnType<typeof openStream>> | undefined;
  await until(async () => isStream((s = await openStream(url, key))), 'a free stream slot');
  return s as SseStream;
}

describe('config stream (SSE)', () => {
  let a: TestServer;
  let b: Instance;
  let c: Client;
  let t: Tenant;
  const open: SseStream[] = [];
  const track = (s: SseStream) => (open.push(s), s);

  before(async () => {
    const dbUrl = await createTestDatabase();
    // Instance A in this process, with small caps; instance B a real process (its own pool and LISTEN connection).
    b = await makeInstance('api');
    const starting = startInstance(b, clusterEnv(dbUrl, STREAM_ENV));
    a = await startTestServer(
      { ...STREAM_ENV, CONFIG_STREAM_MAX_PER_KEY: '2', CONFIG_STREAM_MAX_PER_INSTANCE: '3' },
      dbUrl,
    );
    c = client(a.url);
    [, t] = await Promise.all([starting, createTenant(c)]);
  });
  after(async () => {
    for (const s of open) s.close();
    if (b.proc?.exitCode === null) b.proc.kill('SIGKILL');
    await a.stop();
  });

  const generate = async () => {
    const r = await c.post('/api/v1/sdk/config-bundle/generate', undefined, t.console);
    assert.equal(r.status, 201, r.text);
    return r.body.data.bundle_version as number;
  };
  const sync = async (items: { value: string; label: string }[]) => {
    const r = await c.post(
      '/api/v1/sdk/option-sets/colors/sync',
      { items },
      { 'x-api-key': t.live.public_key, 'x-api-secret': t.live.secret_key },
    );
    assert.equal(r.status, 200, r.text);
    return r.body.data.version as number;
  };
  const closeAll = async () => {
    for (const s of open.splice(0)) {
      s.close();
      await s.ended;
    }
  };

  it('answers a bad or missing key with 401 problem+json; bootstrap names the stream', async () => {
    for (const key of ['svc_live_doesnotexist', '']) {
      const r = await openStream(a.url, key);
      assert.ok(!isStream(r));
      assert.equal(r.status, 401);
      assert.match(r.headers.get('content-type')!, /application\/problem\+json/);
      assert.match(r.body.code, /credentials/);
    }
    const boot = await c.get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key });
    assert.equal(boot.body.storePath, '/api/v1/sdk/config-stream');
  });

  it('delivers a change published on one instance to a client of the other', async () => {
    const v0 = await generate();
    const s = track(await stream(b.url, t.live.public_key));
    assert.equal(s.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const snap = await s.next();
    assert.equal(snap.event, 'snapshot');
    assert.equal(snap.data.bundle_version, v0);
    assert.match(snap.id, /^\d+$/);
    assert.ok(s.retry! >= 500 && s.retry! <= 1500, `retry hint ${s.retry} within base + jitter`);
    const sandbox = track(await stream(a.url, t.sandbox.public_key));
    await sandbox.next((e) => e.event === 'snapshot');

    const v1 = await generate();
    const e1 = await s.next((e) => e.event === 'change', 5000);
    assert.deepEqual(e1.data, { kind: 'bundle_generated', bundle_version: v1 });
    assert.ok(Number(e1.id) > Number(snap.id));
    const setVersion = await sync([{ value: 'red', label: 'Red' }]);
    assert.deepEqual((await s.next((e) => e.event === 'change', 5000)).data, {
      kind: 'option_set_synced',
      set_id: 'colors',
      version: setVersion,
    });
    const rb = await c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: v0 }, t.console);
    assert.equal(rb.status, 201, rb.text);
    assert.deepEqual((await s.next((e) => e.event === 'change', 5000)).data, {
      kind: 'bundle_rolled_back',
      bundle_version: rb.body.data.bundle_version,
    });
    // Bundles and option sets are per app: the sandbox key's stream gets the same three.
    for (const kind of ['bundle_generated', 'option_set_synced', 'bundle_rolled_back']) {
      assert.equal((await sandbox.next((e) => e.event === 'change', 5000)).data.kind, kind);
    }
    // Heartbeats: comments, each carrying the resume id forward.
    const seen = s.comments;
    await until(() => s.comments >= seen + 2, 'two heartbeats');
    await closeAll();
  });

  it('replays every missed change to a client resuming with Last-Event-ID on either instance', async () => {
    const s = track(await stream(a.url, t.live.public_key));
    await s.next((e) => e.event === 'snapshot');
    const resumeFrom = s.lastEventId;
    await closeAll();
    const missed = [await generate(), await sync([{ value: 'blue', label: 'Blue' }]), await generate()];
    for (const url of [b.url, a.url]) {
      const r = track(await stream(url, t.live.public_key, resumeFrom));
      const got = [await r.next(), await r.next(), await r.next()];
      assert.deepEqual(
        got.map((e) => e.event),
        ['change', 'change', 'change'],
      );
      assert.deepEqual(
        got.map((e) => e.data.bundle_version ?? e.data.version),
        missed,
      );
      assert.ok(
        got.every((e, i) => i === 0 || Number(e.id) === Number(got[i - 1]!.id) + 1),
        'consecutive ids',
      );
      await closeAll();
    }
  });

  it('answers an id older than the retained history (or unknown) with one resync', async () => {
    const s = track(await stream(b.url, t.live.public_key));
    const old = (await s.next()).id;
    await closeAll();
    const v = await generate();
    await createConfigChangeStore(a.db).prune(0);
    for (const id of [old, String(Number(old) + 1_000_000)]) {
      const r = track(await stream(b.url, t.live.public_key, id));
      const e = await r.next();
      assert.equal(e.event, 'resync');
      assert.equal(e.data.bundle_version, v);
      assert.equal(typeof e.data.option_sets.colors, 'number');
    }
    await closeAll();
  });

  it('keeps delivering after the LISTEN connections drop', async () => {
    const sa = track(await stream(a.url, t.live.public_key));
    const sb = track(await stream(b.url, t.live.public_key));
    await Promise.all([sa.next(), sb.next()]);
    // Both instances read bundles (their caches subscribed) and stream changes: one LISTEN connection each,
    // and no other connection (a pooled one held for the bundle cache's LISTEN before) left on a LISTEN.
    const listeners = async () =>
      (
        await a.db.query<{ pid: number; name: string }>(
          `SELECT pid, application_name AS name FROM pg_stat_activity
            WHERE datname = current_database() AND (application_name = $1 OR query LIKE 'LISTEN %')`,
          [LISTENER_NAME],
        )
      ).rows;
    const before = await listeners();
    assert.deepEqual(
      before.map((r) => r.name),
      [LISTENER_NAME, LISTENER_NAME],
      'one LISTEN connection per instance',
    );
    await a.db.query(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid`, [before.map((r) => r.pid)]);
    const v = await generate();
    for (const s of [sa, sb]) assert.equal((await s.next((e) => e.event === 'change', 8000)).data.bundle_version, v);
    // Opened again (RECONNECT_MS), one per instance.
    for (const until = Date.now() + 10_000; ; await sleep(100)) {
      const now = await listeners();
      if (now.length === 2 && now.every((r) => r.name === LISTENER_NAME && !before.some((b) => b.pid === r.pid))) break;
      assert.ok(Date.now() < until, `LISTEN connections not back: ${JSON.stringify(now)}`);
    }
    await closeAll();
  });

  it('refuses streams over the per-key cap with 429 and over the instance cap with 503, both with Retry-After', async () => {
    track(await streamWhenFree(a.url, t.live.public_key));
    track(await streamWhenFree(a.url, t.live.public_key));
    const perKey = await openStream(a.url, t.live.public_key);
    assert.ok(!isStream(perKey));
    assert.equal(perKey.status, 429);
    assert.equal(perKey.body.code, 'rate_limited');
    assert.ok(Number(perKey.headers.get('retry-after')) >= 1);
    track(await streamWhenFree(a.url, t.sandbox.public_key));
    const full = await openStream(a.url, t.sandbox.public_key);
    assert.ok(!isStream(full));
    assert.equal(full.status, 503);
    assert.equal(full.body.code, 'service_unavailable');
    assert.match(full.headers.get('content-type')!, /application\/problem\+json/);
    assert.ok(Number(full.headers.get('retry-after')) >= 1);
    await closeAll();
  });

  it('on SIGTERM tells each client to reconnect after a jittered delay, then ends the stream and exits', async () => {
    const s = track(await stream(b.url, t.live.public_key));
    await s.next();
    const exited = stopInstance(b);
    const bye = await s.next((e) => e.event === 'reconnect', 20_000);
    assert.equal(bye.data.reason, 'shutdown');
    assert.ok(bye.data.retry_ms >= 500 && bye.data.retry_ms <= 1500);
    assert.equal(s.retry, bye.data.retry_ms);
    await s.ended;
    assert.equal(await exited, 0);
  });
});
