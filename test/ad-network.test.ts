import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createActivityStore } from '../src/modules/activity/store.js';
import { createAdNetworkModule } from '../src/modules/ad-network/index.js';
import { createExchangeRateService } from '../src/modules/exchange-rates/service.js';
import { createExchangeRateStore } from '../src/modules/exchange-rates/store.js';
import { AppError } from '../src/http/errors.js';
import type { FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import {
  acctPath,
  authorize,
  connect,
  setLive,
  setRate,
  startWithFake,
  superAdmin,
  writesTo,
} from './helpers/ad-network.js';
import { createTenant, type Client, type Tenant } from './helpers/client.js';
import type { TestServer } from './helpers/server.js';

let fake: FakeAdNetwork;
let server: TestServer;
let c: Client;
let t: Tenant;
let root: Record<string, string>;
let USD: string;
let EUR: string;

before(async () => {
  ({ fake, server, c } = await startWithFake());
  USD = fake.accounts.usd;
  EUR = fake.accounts.eur;
  root = await superAdmin(c);
  t = await createTenant(c);
});
after(async () => {
  await server.stop();
  await fake.stop();
});

describe('ad network: connection', () => {
  it('connects through OAuth with state and PKCE, refuses a wrong state, stores accounts with currency and timezone', async () => {
    const viewerless = await c.post('/api/v1/ad-network/connection/start', {});
    assert.equal(viewerless.status, 401);
    const start = await c.post('/api/v1/ad-network/connection/start', {}, t.console);
    assert.equal(start.status, 200);
    const url = new URL(start.body.data.authorize_url);
    assert.equal(url.searchParams.get('scope'), 'snapchat-marketing-api');
    assert.equal(url.searchParams.get('response_type'), 'code');
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(url.searchParams.get('code_challenge'));
    assert.equal(url.searchParams.get('state'), start.body.data.state);
    const { code, state } = await authorize(start.body.data.authorize_url);
    assert.equal(state, start.body.data.state);

    const wrong = await c.post('/api/v1/ad-network/connection/callback', { code, state: 'not-the-state' }, t.console);
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.code, 'validation_failed');
    assert.equal(fake.world.tokenRequests.length, 0, 'no code exchange on a wrong state');

    const before = fake.world.requests.length;
    const ok = await c.post('/api/v1/ad-network/connection/callback', { code, state }, t.console);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.status, 'connected');
    const probes = fake.world.requests.slice(before).map((r) => r.path);
    assert.equal(probes[0], '/v1/me/organizations', 'organizations probe first');
    assert.match(probes[1], /^\/v1\/organizations\/.+\/adaccounts$/, 'then the ad-accounts probe');
    const accts = Object.fromEntries(ok.body.data.ad_accounts.map((a: any) => [a.id, a]));
    assert.equal(accts[USD].currency, 'USD');
    assert.equal(accts[USD].timezone, 'America/Los_Angeles');
    assert.equal(accts[EUR].currency, 'EUR');
    assert.equal(accts[EUR].timezone, 'Europe/Berlin');
    assert.equal(accts[USD].live_writes, false);

    const replay = await c.post('/api/v1/ad-network/connection/callback', { code, state }, t.console);
    assert.equal(replay.status, 400, 'a state is single use');

    // Tokens are encrypted at rest.
    const grant = [...fake.world.grants.values()].at(-1)!;
    const { rows } = await server.db.query(
      'SELECT refresh_token_enc, access_token_enc FROM ad_network_connections WHERE app_id = $1',
      [t.appId],
    );
    assert.ok(rows[0].refresh_token_enc.length > 28);
    assert.ok(!rows[0].refresh_token_enc.toString('latin1').includes(grant.refreshToken));
    assert.ok(!rows[0].refresh_token_enc.toString('latin1').includes('rt_'));
  });

  it('refreshes the access token before it expires', async () => {
    const {
      rows: [before],
    } = await server.db.query('SELECT access_token_enc FROM ad_network_connections WHERE app_id = $1', [t.appId]);
    // 30 s left of a 3600 s token: inside the refresh margin.
    await server.db.query(
      `UPDATE ad_network_connections SET access_expires_at = now() + interval '30 seconds' WHERE app_id = $1`,
      [t.appId],
    );
    const refreshes = fake.world.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;
    const orgs = await c.get('/api/v1/ad-network/organizations', t.console);
    assert.equal(orgs.status, 200, orgs.text);
    assert.equal(orgs.body.data[0].name, 'Hooli Inc');
    assert.equal(
      fake.world.tokenRequests.filter((r) => r.grant_type === 'refresh_token' && r.status === 200).length,
      refreshes + 1,
    );
    const {
      rows: [after],
    } = await server.db.query(
      'SELECT access_token_enc, access_expires_at FROM ad_network_connections WHERE app_id = $1',
      [t.appId],
    );
    assert.ok(!before.access_token_enc.equals(after.access_token_enc));
    assert.ok(after.access_expires_at.getTime() > Date.now() + 3000_000);
    assert.ok(!fake.world.requests.some((r) => r.status === 401), 'no call went out with the stale token');
  });

  it('documents the management API in OpenAPI', async () => {
    const doc = await c.get('/docs/json');
    assert.equal(doc.status, 200);
    for (const p of [
      '/api/v1/ad-network/connection/start',
      '/api/v1/ad-network/accounts/{accountId}/campaigns',
      '/api/v1/ad-network/accounts/{accountId}/experiments/{id}/stats',
      '/api/v1/admin/ad-network/apps/{appId}/accounts/{accountId}/live-writes',
    ]) {
      assert.ok(doc.body.paths[p], p);
    }
  });

  it('refuses webhooks for the ad network', async () => {
    const r = await c.post('/api/v1/ad-network/webhooks', { url: 'https://example.com/hook' }, t.console);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'webhooks_not_supported');
    // Like every app route, it answers nobody without credentials (its OpenAPI operations declare them).
    const anonymous = await c.post('/api/v1/ad-network/webhooks', { url: 'https://example.com/hook' });
    assert.equal(anonymous.status, 401);
  });
});

describe('ad network: writes', () => {
  it('records writes as dry runs until a Super Admin enables live writes', async () => {
    const n = writesTo(fake, 'POST', /campaigns$/).length;
    const dry = await c.post(`${acctPath(USD)}/campaigns`, { name: 'Dry 1', daily_budget_usd: 30 }, t.console);
    assert.equal(dry.status, 201, dry.text);
    assert.equal(dry.body.data.dry_run, true);
    assert.match(dry.body.data.object.id, /^dryrun-/);
    assert.equal(writesTo(fake, 'POST', /campaigns$/).length, n, 'nothing sent');
    const forbidden = await c.put(
      `/api/v1/admin/ad-network/apps/${t.appId}/accounts/${USD}/live-writes`,
      { enabled: true },
      t.console,
    );
    assert.equal(forbidden.status, 403, 'only a Super Admin flips the gate');
    await setLive(c, root, t, USD);
    const live = await c.post(`${acctPath(USD)}/campaigns`, { name: 'Live 1', daily_budget_usd: 30 }, t.console);
    assert.equal(live.status, 201, live.text);
    assert.equal(live.body.data.dry_run, false);
    const sent = writesTo(fake, 'POST', /campaigns$/);
    assert.equal(sent.length, n + 1);
    assert.equal(sent.at(-1)!.idempotencyKey, live.body.data.idempotency_key, 'Idempotency-Key header sent');
    const journal = await c.get('/api/v1/ad-network/writes', t.console);
    assert.deepEqual(
      journal.body.data.slice(0, 2).map((w: any) => w.status),
      ['succeeded', 'dry_run'],
    );
  });

  it('rehearses media -> creative -> ad as dry runs while live writes are off', async () => {
    const n = fake.world.requests.filter((r) => r.method !== 'GET').length;
    const res = await fetch(`${server.url}${acctPath(EUR)}/media?name=Hero&type=IMAGE&file_name=a.png`, {
      method: 'POST',
      headers: { ...t.console, 'content-type': 'image/png' },
      body: Buffer.alloc(64, 1),
    });
    const media = (await res.json()).data;
    assert.equal(res.status, 201);
    assert.equal(media.dry_run, true);
    const cr = await c.post(
      `${acctPath(EUR)}/creatives`,
      { name: 'C', headline: 'H', brand_name: 'B', media_id: media.object.id, profile_id: 'p' },
      t.console,
    );
    assert.equal(cr.status, 201, cr.text);
    const cp = await c.post(`${acctPath(EUR)}/campaigns`, { name: 'Dry EUR' }, t.console);
    const sq = await c.post(
      `${acctPath(EUR)}/adsquads`,
      { campaign_id: cp.body.data.object.id, name: 'S', daily_budget_usd: 10 },
      t.console,
    );
    assert.equal(sq.status, 201, sq.text);
    const ad = await c.post(
      `${acctPath(EUR)}/ads`,
      { ad_squad_id: sq.body.data.object.id, creative_id: cr.body.data.object.id, name: 'A' },
      t.console,
    );
    assert.equal(ad.status, 201, ad.text);
    assert.equal(ad.body.data.dry_run, true);
    assert.equal(ad.body.data.object.creative_id, cr.body.data.object.id);
    const missing = await c.post(
      `${acctPath(EUR)}/ads`,
      { ad_squad_id: sq.body.data.object.id, creative_id: 'dryrun-00000000-0000-4000-8000-000000000000', name: 'A' },
      t.console,
    );
    assert.equal(missing.status, 400, 'a missing creative is refused in dry runs too');
    assert.equal(fake.world.requests.filter((r) => r.method !== 'GET').length, n, 'no write reached the network');
  });

  it('converts USD budgets to micro-units of the account currency (USD exact, EUR by the rate table)', async () => {
    const usd = await c.post(`${acctPath(USD)}/campaigns`, { name: 'Budget USD', daily_budget_usd: 25.57 }, t.console);
    assert.equal(usd.status, 201, usd.text);
    assert.equal(writesTo(fake, 'POST', /campaigns$/).at(-1)!.body.campaigns[0].daily_budget_micro, 25_570_000);
    assert.equal(usd.body.data.object.daily_budget_micro, 25_570_000);

    await setRate(c, root, 'EUR', 1.25);
    await setLive(c, root, t, EUR);
    const eur = await c.post(`${acctPath(EUR)}/campaigns`, { name: 'Budget EUR', daily_budget_usd: 50 }, t.console);
    assert.equal(eur.status, 201, eur.text);
    assert.equal(
      writesTo(fake, 'POST', /campaigns$/).at(-1)!.body.campaigns[0].daily_budget_micro,
      40_000_000,
      '50 USD = 40 EUR',
    );
    assert.deepEqual(
      {
        currency: eur.body.data.budget.currency,
        micro: eur.body.data.budget.micro,
        rate: eur.body.data.budget.usd_per_unit,
      },
      { currency: 'EUR', micro: 40_000_000, rate: 1.25 },
    );

    const small = await c.post(`${acctPath(EUR)}/campaigns`, { name: 'Too small', daily_budget_usd: 10 }, t.console);
    assert.equal(small.status, 400, 'the network minimum (20 units) comes back as a validation error');
    assert.match(small.body.detail, /daily_budget_micro/);
  });

  it('pauses and resumes with a status update carrying the whole entity', async () => {
    const cr = await c.post(
      `${acctPath(USD)}/campaigns`,
      { name: 'Pausable', status: 'ACTIVE', daily_budget_usd: 20 },
      t.console,
    );
    const id = cr.body.data.object.id;
    const p = await c.post(`${acctPath(USD)}/campaigns/${id}/pause`, {}, t.console);
    assert.equal(p.status, 200, p.text);
    let put = writesTo(fake, 'PUT', /campaigns$/).at(-1)!;
    assert.equal(put.path, `/v1/adaccounts/${USD}/campaigns`);
    assert.equal(put.body.campaigns.length, 1);
    assert.deepEqual({ id: put.body.campaigns[0].id, status: put.body.campaigns[0].status }, { id, status: 'PAUSED' });
    assert.equal(put.body.campaigns[0].name, 'Pausable', 'read-modify-write keeps the other fields');
    assert.equal(put.body.campaigns[0].delivery_status, undefined, 'read-only fields are not sent');
    assert.ok(put.idempotencyKey);
    assert.equal(fake.world.entities.get(id)!.fields.status, 'PAUSED');
    const r = await c.post(`${acctPath(USD)}/campaigns/${id}/resume`, {}, t.console);
    assert.equal(r.status, 200);
    put = writesTo(fake, 'PUT', /campaigns$/).at(-1)!;
    assert.equal(put.body.campaigns[0].status, 'ACTIVE');
    assert.equal(fake.world.entities.get(id)!.fields.status, 'ACTIVE');
  });

  it('leaves exactly one campaign when the answer to a create is lost, and on a client retry', async () => {
    fake.dropResponses(1, /^POST \/v1\/adaccounts\/[^/]+\/campaigns$/);
    const key = 'retry-key-0001';
    const first = await c.post(
      `${acctPath(USD)}/campaigns`,
      { name: 'Dropped once', daily_budget_usd: 20 },
      { ...t.console, 'idempotency-key': key },
    );
    assert.equal(first.status, 201, first.text);
    const again = await c.post(
      `${acctPath(USD)}/campaigns`,
      { name: 'Dropped once', daily_budget_usd: 20 },
      { ...t.console, 'idempotency-key': key },
    );
    assert.equal(again.status, 201);
    assert.equal(again.body.data.replayed, true);
    assert.equal(again.body.data.object.id, first.body.data.object.id);
    const same = [...fake.world.entities.values()].filter(
      (e) => e.kind === 'campaign' && e.fields.name === 'Dropped once',
    );
    assert.equal(same.length, 1, 'exactly one campaign on the network');
    assert.equal(same[0].id, first.body.data.object.id);
    // A 429 creates nothing, and the client retries it with the same key: count only the posts the network took.
    const posts = writesTo(fake, 'POST', /campaigns$/).filter((r) => r.idempotencyKey === key && r.status !== 429);
    assert.equal(posts.length, 1, 'the lost create was found by look-up, not sent again');
  });

  it('retries 429 answers with exponential backoff', async () => {
    fake.force429(3);
    const n = fake.world.requests.length;
    const t0 = Date.now();
    const r = await c.get(`${acctPath(USD)}/campaigns`, t.console);
    assert.equal(r.status, 200, r.text);
    const calls = fake.world.requests.slice(n);
    assert.deepEqual(
      calls.map((x) => x.status ?? 200),
      [429, 429, 429, 200],
    );
    const gaps = calls.slice(1).map((x, i) => x.at - calls[i].at);
    assert.ok(gaps[2] > gaps[0], `delays grow: ${gaps}`);
    assert.ok(Date.now() - t0 >= 300);
    assert.ok(r.body.data.length >= 4);
  });

  it('fails closed with a quota error and no outbound call when the limiter is unavailable', async () => {
    const rates = createExchangeRateService({ store: createExchangeRateStore(server.db) });
    const mod = createAdNetworkModule({
      db: server.db,
      config: server.config,
      activity: createActivityStore(server.db),
      rates,
      limiter: {
        take: async () => {
          throw new Error('limiter store down');
        },
      },
    });
    const scope = { tenantId: t.orgId, appId: t.appId };
    const n = fake.world.requests.length;
    const ctx = { scope, acct: await mod.ops.account(scope, USD), actor: null };
    await assert.rejects(
      mod.mgmt.createCampaign(ctx, { name: 'Never sent', daily_budget_usd: 20 }),
      (e: unknown) => e instanceof AppError && e.status === 429 && e.code === 'rate_limited',
    );
    await assert.rejects(mod.mgmt.listCampaigns(ctx), (e: unknown) => e instanceof AppError && e.status === 429);
    assert.equal(fake.world.requests.length, n, 'no call reached the network');
    await mod.close();
  });

  it("answers 404 for another app's ad account", async () => {
    const other = await createTenant(c);
    const r = await c.post(`${acctPath(USD)}/campaigns`, { name: 'x' }, other.console);
    assert.equal(r.status, 409, 'not connected');
    await connect(c, other);
    const r2 = await c.get(`${acctPath('8adc3db7-0000-4000-8000-00000000ffff')}/campaigns`, other.console);
    assert.equal(r2.status, 404);
  });

  it('marks the connection reauth_required when the grant is revoked, and disconnects', async () => {
    fake.revokeAll();
    const s = await c.get('/api/v1/ad-network/connection?verify=true', t.console);
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.data.status, 'reauth_required');
    assert.ok(
      fake.world.tokenRequests.some((r) => r.grant_type === 'refresh_token' && r.status === 400),
      'refresh answered invalid_grant',
    );
    const call = await c.get(`${acctPath(USD)}/campaigns`, t.console);
    assert.equal(call.status, 409);
    assert.equal(call.body.code, 'ad_network_reauth_required');
    const { rows } = await server.db.query(
      `SELECT action FROM activity WHERE app_id = $1 AND action = 'reauth_required'`,
      [t.appId],
    );
    assert.equal(rows.length, 1);

    const d = await c.del('/api/v1/ad-network/connection', t.console);
    assert.equal(d.status, 200);
    assert.equal(d.body.data.status, 'disconnected');
    assert.match(d.body.data.message, /remove this app/i);
    const {
      rows: [conn],
    } = await server.db.query(
      'SELECT refresh_token_enc, access_token_enc FROM ad_network_connections WHERE app_id = $1',
      [t.appId],
    );
    assert.equal(conn.refresh_token_enc, null);
    assert.equal(conn.access_token_enc, null);
  });
});
