import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { DEFINITIONS_VERSION, FLAG, pack } from '../src/modules/analytics/definitions.js';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

describe('analytics: a changed definition refolds stored rollups', () => {
  const s = useTenantApp();
  let root: Record<string, string>;
  /** One run of the rollup worker (the job's run: rebuilds first, then the fold). */
  const run = async () => {
    root ??= {
      authorization: `Bearer ${(await s.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' })).body.token}`,
    };
    const r = await s.c.post('/api/v1/admin/analytics/rollup', {}, root);
    assert.equal(r.status, 200, r.text);
  };

  const kpis = async (): Promise<Record<string, number>> => {
    const k = await s.c.get('/api/v1/analytics/kpis?period=7d', s.t.console);
    assert.equal(k.status, 200, k.text);
    return Object.fromEntries(k.body.kpis.map((x: { metric: string; current: number }) => [x.metric, x.current]));
  };
  const appState = async () =>
    (
      await s.server.db.query<{ defs: string | null; rebuilt_at: Date | null }>(
        `SELECT defs, rebuilt_at FROM an_app_state WHERE app_id = $1`,
        [s.t.appId],
      )
    ).rows[0];

  it('records the current version for an app first folded, and rebuilds an app built with another one', async () => {
    const devices = [randomUUID(), randomUUID(), randomUUID()];
    const at = Date.now() - 3_600_000;
    const batch = devices.flatMap((anon, i) => [
      makeEvent({ event_name: 'app_open', ts_ms: at, user: { anon_id: anon } }),
      ...(i === 0 ? [makeEvent({ event_name: 'paywall_view', ts_ms: at + 1000, user: { anon_id: anon } })] : []),
    ]);
    const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
    assert.equal(r.status, 202, r.text);
    await run();
    const built = await kpis();
    assert.equal(built.wau, 3);
    assert.equal(built.paywall_view_rate, 33.33);
    assert.equal((await appState()).defs, DEFINITIONS_VERSION);

    // Rollups of an older definition (here: different numbers) under another version.
    await s.server.db.query(`UPDATE an_app_state SET defs = 'older' WHERE app_id = $1`, [s.t.appId]);
    await s.server.db.query(`UPDATE an_active_hist SET n = n * 10 WHERE app_id = $1`, [s.t.appId]);
    await s.server.db.query(`DELETE FROM an_flag_hist WHERE app_id = $1`, [s.t.appId]);

    assert.notDeepEqual(await kpis(), built, 'the stored rollups answer until rebuilt');
    await run();
    const after = await appState();
    assert.equal(after.defs, DEFINITIONS_VERSION);
    assert.ok(after.rebuilt_at !== null);
    assert.deepEqual(await kpis(), built);
  });

  it('repacks stored days in migration 025 as definitions.ts packs them', async () => {
    const sql = readFileSync(new URL('../migrations/025_analytics_definitions.sql', import.meta.url), 'utf8');
    const repack = /ARRAY\((SELECT .*? ORDER BY o)\)/s.exec(sql)?.[1];
    assert.ok(repack);
    const old = [-2 * 64 + 1, 0, 9000 * 64 + 63, 9001 * 64 + 16];
    const { rows } = await s.server.db.query<{ days: number[] }>(
      `SELECT ARRAY(${repack.replace('unnest(days)', 'unnest($1::int[])')}) AS days`,
      [old],
    );
    assert.deepEqual(
      rows[0].days,
      old.map((d) => pack(Math.floor(d / 64), d & 63)),
    );
    assert.equal(pack(9001, FLAG.paid) - pack(9001, 0), 16);
  });
});
