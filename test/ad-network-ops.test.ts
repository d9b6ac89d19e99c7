import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JOBS } from '../src/jobs/catalog.js';
import { createActivityStore } from '../src/modules/activity/store.js';
import { createAdNetworkModule } from '../src/modules/ad-network/index.js';
import { createExchangeRateService } from '../src/modules/exchange-rates/service.js';
import { createExchangeRateStore } from '../src/modules/exchange-rates/store.js';
import type { FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { acctPath, startLiveTenant } from './helpers/ad-network.js';
import type { Client, Tenant } from './helpers/client.js';
import type { TestServer } from './helpers/server.js';

let fake: FakeAdNetwork;
let server: TestServer;
let c: Client;
let t: Tenant;
let USD: string;
let EUR: string;
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(256, 7)]);

before(async () => {
  ({ fake, server, c, t, USD, EUR } = await startLiveTenant(7));
});
after(async () => {
  await server.stop();
  await fake.stop();
});

async function upload(acct: string, name: string) {
  const res = await fetch(
    `${server.url}${acctPath(acct)}/media?name=${encodeURIComponent(name)}&type=IMAGE&file_name=hero.png`,
    {
      method: 'POST',
      headers: { ...t.console, 'content-type': 'image/png' },
      body: PNG,
    },
  );
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.data.object;
}

async function creative(acct: string, mediaId: string, name: string) {
  const r = await c.post(
    `${acctPath(acct)}/creatives`,
    { name, headline: 'Healthy Living', brand_name: 'Max Brand', media_id: mediaId, profile_id: 'profile-1' },
    t.console,
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.object;
}

async function campaignWithSquad(acct: string, name: string) {
  const cp = await c.post(`${acctPath(acct)}/campaigns`, { name, status: 'ACTIVE', daily_budget_usd: 40 }, t.console);
  assert.equal(cp.status, 201, cp.text);
  const sq = await c.post(
    `${acctPath(acct)}/adsquads`,
    { campaign_id: cp.body.data.object.id, name: `${name} squad`, status: 'ACTIVE', daily_budget_usd: 10 },
    t.console,
  );
  assert.equal(sq.status, 201, sq.text);
  return { campaign: cp.body.data.object, squad: sq.body.data.object };
}

describe('ad network: media, creatives, ads', () => {
  it('refuses an ad whose creative is missing, then builds media -> creative -> ad in that order', async () => {
    const { squad } = await campaignWithSquad(USD, 'Order');
    assert.equal(squad.daily_budget_micro, 10_000_000);
    const missing = await c.post(
      `${acctPath(USD)}/ads`,
      { ad_squad_id: squad.id, creative_id: '0f0f0f0f-0000-4000-8000-000000000000', name: 'Orphan' },
      t.console,
    );
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /missing creative.*create the creative first/i);
    assert.equal(missing.body.errors[0].path, '/body/creative_id');

    const n = fake.world.requests.length;
    const media = await upload(USD, 'Hero');
    assert.equal(media.media_status, 'READY');
    const cr = await creative(USD, media.id, 'Hero creative');
    assert.equal(cr.top_snap_media_id, media.id);
    const ad = await c.post(
      `${acctPath(USD)}/ads`,
      { ad_squad_id: squad.id, creative_id: cr.id, name: 'Ad one' },
      t.console,
    );
    assert.equal(ad.status, 201, ad.text);
    assert.equal(ad.body.data.object.type, 'SNAP_AD');
    const writes = fake.world.requests
      .slice(n)
      .filter((r) => r.method === 'POST' && r.status !== 429)
      .map((r) => r.path.replace(/[0-9a-f-]{36}/g, ':id'));
    assert.deepEqual(writes, [
      '/v1/adaccounts/:id/media',
      '/v1/media/:id/upload',
      '/v1/adaccounts/:id/creatives',
      '/v1/adsquads/:id/ads',
    ]);
    assert.ok(!fake.world.pathLog.some((p) => p.style === 'spec'), 'documented write paths are used');
  });

  it('refuses a creative on media that does not exist', async () => {
    const r = await c.post(
      `${acctPath(USD)}/creatives`,
      { name: 'x', headline: 'h', brand_name: 'b', media_id: '0f0f0f0f-0000-4000-8000-000000000001', profile_id: 'p' },
      t.console,
    );
    assert.equal(r.status, 400);
    assert.match(r.body.detail, /upload the media first/);
  });
});

describe('ad network: stats', () => {
  it('pulls DAY stats and stores spend in USD with native currency, rate and local spend', async () => {
    const rows: Record<string, any[]> = {};
    for (const acct of [USD, EUR]) {
      const { campaign, squad } = await campaignWithSquad(acct, `Stats ${acct.slice(-2)}`);
      const media = await upload(acct, 'S');
      const cr = await creative(acct, media.id, 'S creative');
      const ad = await c.post(
        `${acctPath(acct)}/ads`,
        { ad_squad_id: squad.id, creative_id: cr.id, name: 'S ad' },
        t.console,
      );
      assert.equal(ad.status, 201, ad.text);
      const pull = await c.post(`${acctPath(acct)}/stats/pull`, { campaign_id: campaign.id }, t.console);
      assert.equal(pull.status, 200, pull.text);
      assert.ok(pull.body.data.rows >= 7);
      const today = new Date().toISOString().slice(0, 10);
      const from = new Date(Date.now() - 8 * 86_400_000).toISOString().slice(0, 10);
      const to = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      const got = await c.get(
        `/api/v1/ad-network/stats?from=${from}&to=${to}&entity_type=campaign&entity_id=${campaign.id}`,
        t.console,
      );
      assert.equal(got.status, 200, got.text);
      rows[acct] = got.body.data.filter((r: any) => r.spend_local_micro > 0);
      assert.ok(rows[acct].length >= 1, `delivering day stored (${today})`);
    }
    const u = rows[USD][0];
    assert.equal(u.currency, 'USD');
    assert.equal(u.usd_rate, 1);
    assert.equal(u.spend_usd, u.spend_local);
    assert.equal(u.spend_local, u.spend_local_micro / 1e6);
    assert.ok(u.impressions > 0 && u.swipes >= 0 && u.view_completion > 0);
    const e = rows[EUR][0];
    assert.equal(e.currency, 'EUR');
    assert.equal(e.usd_rate, 1.25);
    assert.ok(Math.abs(e.spend_usd - e.spend_local * 1.25) < 1e-6);
  });
});

describe('ad network: experiments', () => {
  it('starts with the control ACTIVE and treatments PAUSED, toggles variants, and reports per-variant stats', async () => {
    const cp = await c.post(
      `${acctPath(USD)}/campaigns`,
      { name: 'Exp campaign', status: 'ACTIVE', daily_budget_usd: 100 },
      t.console,
    );
    const media = await upload(USD, 'Exp media');
    const creatives = [];
    for (const v of ['A', 'B', 'C']) creatives.push(await creative(USD, media.id, `Exp ${v}`));
    const start = await c.post(
      `${acctPath(USD)}/experiments`,
      {
        name: 'Hero test',
        campaign_id: cp.body.data.object.id,
        daily_budget_usd: 10,
        variants: creatives.map((cr, i) => ({ name: `V${i}`, creative_id: cr.id })),
      },
      { ...t.console, 'idempotency-key': 'exp-1' },
    );
    assert.equal(start.status, 201, start.text);
    const exp = start.body.data;
    assert.deepEqual(
      exp.variants.map((v: any) => [v.role, v.status]),
      [
        ['control', 'ACTIVE'],
        ['treatment', 'PAUSED'],
        ['treatment', 'PAUSED'],
      ],
    );
    for (const v of exp.variants) {
      const squad = fake.world.entities.get(v.adsquad_id)!;
      assert.equal(squad.fields.status, v.status, 'network squad state matches');
      assert.equal(squad.fields.campaign_id, cp.body.data.object.id);
      assert.equal(fake.world.entities.get(v.ad_id)!.fields.creative_id, v.creative_id);
    }
    const again = await c.post(
      `${acctPath(USD)}/experiments`,
      {
        name: 'Hero test',
        campaign_id: cp.body.data.object.id,
        daily_budget_usd: 10,
        variants: creatives.map((cr, i) => ({ name: `V${i}`, creative_id: cr.id })),
      },
      { ...t.console, 'idempotency-key': 'exp-1' },
    );
    assert.equal(again.body.data.id, exp.id, 'a retried start creates nothing new');
    assert.equal(
      [...fake.world.entities.values()].filter(
        (e) => e.kind === 'adsquad' && e.fields.campaign_id === cp.body.data.object.id,
      ).length,
      3,
    );

    const stats = await c.get(`${acctPath(USD)}/experiments/${exp.id}/stats`, t.console);
    assert.equal(stats.status, 200, stats.text);
    const [control, t1, t2] = stats.body.data.variants;
    assert.ok(control.totals.impressions > 0, 'the control delivered');
    assert.equal(t1.totals.impressions, 0, 'paused treatments did not');
    assert.equal(t2.totals.spend_local_micro, 0);
    const statQuery = fake.world.requests.filter((r) => r.path.endsWith('/stats')).at(-1)!;
    assert.ok(statQuery);

    const toggle = await c.post(
      `${acctPath(USD)}/experiments/${exp.id}/variants/${exp.variants[1].id}/status`,
      { status: 'ACTIVE' },
      t.console,
    );
    assert.equal(toggle.status, 200, toggle.text);
    assert.equal(fake.world.entities.get(exp.variants[1].adsquad_id)!.fields.status, 'ACTIVE');
    const after = await c.get(`${acctPath(USD)}/experiments/${exp.id}/stats`, t.console);
    assert.ok(after.body.data.variants[1].totals.impressions > 0, 'the toggled treatment now delivers');
    const { rows } = await server.db.query(
      `SELECT count(*)::int AS n FROM ad_network_stats WHERE app_id = $1 AND entity_type = 'adsquad' AND entity_id = $2`,
      [t.appId, exp.variants[0].adsquad_id],
    );
    assert.ok(rows[0].n >= 1, 'per-variant rows stored');
  });
});

describe('ad network: hourly sync', () => {
  it('surfaces a disapproved ad, a daily cap hit and a suspended account as activity, once', async () => {
    const { squad } = await campaignWithSquad(USD, 'Sync');
    const media = await upload(USD, 'Sync media');
    const cr = await creative(USD, media.id, 'Sync creative');
    const ad = (
      await c.post(
        `${acctPath(USD)}/ads`,
        { ad_squad_id: squad.id, creative_id: cr.id, name: 'Will be rejected' },
        t.console,
      )
    ).body.data.object;
    const first = await c.post('/api/v1/ad-network/sync', {}, t.console);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.errors, []);
    assert.ok(first.body.data.stat_rows > 0);

    fake.disapproveAd(ad.id, ['Misleading claims']);
    fake.exhaustDailyCap(squad.id);
    const second = await c.post('/api/v1/ad-network/sync', {}, t.console);
    const actions = second.body.data.changes.map((x: any) => `${x.action}:${x.id}`);
    assert.ok(actions.includes(`ad_disapproved:${ad.id}`), JSON.stringify(actions));
    assert.ok(actions.includes(`daily_cap_hit:${squad.id}`));
    const { rows } = await server.db.query(
      `SELECT action, description FROM activity WHERE app_id = $1 AND action = 'ad_disapproved'`,
      [t.appId],
    );
    assert.equal(rows.length, 1);
    assert.match(rows[0].description, /Misleading claims/);

    fake.suspendAccount(EUR);
    const third = await c.post('/api/v1/ad-network/sync', {}, t.console);
    assert.deepEqual(
      third.body.data.changes.map((x: any) => x.action),
      ['account_suspended'],
    );
    const accts = await c.get('/api/v1/ad-network/accounts', t.console);
    assert.equal(accts.body.data.find((a: any) => a.id === EUR).status, 'DISABLED');
    const { rows: again } = await server.db.query(
      `SELECT count(*)::int AS n FROM activity WHERE app_id = $1 AND action IN ('ad_disapproved', 'daily_cap_hit')`,
      [t.appId],
    );
    assert.equal(again[0].n, 2, 'no duplicate entries on later syncs');

    // The hourly job runs the same sync for every connected app.
    assert.equal(JOBS['ad-network.sync'].cron, '7 * * * *');
    fake.disapproveAd(ad.id, ['Second review']);
    fake.setAccount(EUR, { status: 'ACTIVE' });
    const rates = createExchangeRateService({ store: createExchangeRateStore(server.db) });
    const mod = createAdNetworkModule({
      db: server.db,
      config: server.config,
      activity: createActivityStore(server.db),
      rates,
    });
    const logged: string[] = [];
    await mod.sync.runAll((m) => logged.push(m));
    await mod.close();
    assert.deepEqual(logged, []);
    const { rows: re } = await server.db.query(
      `SELECT count(*)::int AS n FROM activity WHERE app_id = $1 AND action = 'account_reactivated'`,
      [t.appId],
    );
    assert.equal(re[0].n, 1);
  });
});
