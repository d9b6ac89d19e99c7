import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { client, createTenant, makeEvent } from './helpers/client.js';

const root = path.resolve(import.meta.dirname, '..');
const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-crash-'));
const children: ChildProcess[] = [];

after(async () => {
  for (const ch of children) if (ch.exitCode === null && ch.signalCode === null) ch.kill('SIGKILL');
  // Stop any postgres left behind by the kill -9 part of the test.
  const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
    } catch {
      /* already gone */
    }
    await sleep(500);
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const exited = (ch: ChildProcess) =>
  new Promise((r) => (ch.exitCode !== null || ch.signalCode !== null ? r(null) : ch.once('exit', r)));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function startService(port: number, pgPort: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/main.ts')], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  children.push(child);
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`service exited: ${stderr}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/ingest/health`);
      if (r.status === 200) return child;
    } catch {
      /* not up yet */
    }
    await sleep(200);
  }
  throw new Error(`service did not start: ${stderr}`);
}

describe('crash recovery (embedded database)', () => {
  it('keeps every acknowledged event exactly once across a kill -9 during ingestion', async () => {
    const [port, pgPort] = [await freePort(), await freePort()];
    const first = await startService(port, pgPort);
    const c = client(`http://127.0.0.1:${port}`);
    const t = await createTenant(c);

    const acknowledged: Record<string, unknown>[] = [];
    let stop = false;
    const sender = async () => {
      while (!stop) {
        const batch = Array.from({ length: 50 }, () => makeEvent());
        try {
          const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
          if (r.status === 202) acknowledged.push(...batch);
        } catch {
          return; // the connection died with the process: that batch was never acknowledged
        }
      }
    };
    const senders = Array.from({ length: 4 }, sender);
    await sleep(1500);
    first.kill('SIGKILL');
    stop = true;
    await Promise.all(senders);
    await exited(first);
    assert.ok(acknowledged.length >= 200, `ingested ${acknowledged.length} before the kill`);
    assert.ok(
      existsSync(path.join(dataDir, 'pg', 'postmaster.pid')),
      'the orphaned postgres is still there, as after a real crash',
    );

    // A new port: keep-alive sockets to the killed process must not be reused for the checks below.
    const port2 = await freePort();
    const second = await startService(port2, pgPort);
    const c2 = client(`http://127.0.0.1:${port2}`);
    const ids = acknowledged.map((e) => e.event_id as string);
    const db = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/app` });
    await db.connect();
    try {
      const count = async () =>
        (
          await db.query(
            'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d FROM events WHERE event_id = ANY($1::uuid[])',
            [ids],
          )
        ).rows[0];
      assert.deepEqual(
        await count(),
        { n: ids.length, d: ids.length },
        'every acknowledged event is stored exactly once',
      );

      // SDKs re-send what they could not confirm: retries add nothing.
      for (let i = 0; i < acknowledged.length; i += 500) {
        const r = await c2.post(
          '/api/v1/ingest/events',
          { batch: acknowledged.slice(i, i + 500) },
          { 'x-api-key': t.live.public_key },
        );
        assert.equal(r.status, 202);
      }
      assert.deepEqual(await count(), { n: ids.length, d: ids.length });
    } finally {
      await db.end();
    }

    // Health turns 503 when the database goes away.
    const pgPid = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pgPid, 'SIGKILL');
    await sleep(300);
    const h = await c2.get('/api/v1/ingest/health');
    assert.equal(h.status, 503);
    assert.equal(h.body.status, 'degraded');
    assert.equal(h.body.checks.database, 'down');
    second.kill('SIGKILL');
    await exited(second);
  });

  it('starts again after that and shuts down gracefully on SIGTERM', async () => {
    const [port, pgPort] = [await freePort(), await freePort()];
    const child = await startService(port, pgPort);
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    assert.equal(code, 0);
    assert.equal(
      existsSync(path.join(dataDir, 'pg', 'postmaster.pid')),
      false,
      'the embedded database was stopped cleanly',
    );
  });
});
