import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';

// The fake itself must behave like the documented API, or tests against it prove nothing.
let fake: FakeAdNetwork;
const REDIRECT = 'https://console.example.com/cb';

before(async () => {
  fake = await startFakeAdNetwork({
    expiresIn: 1800,
    refreshMode: 'rotating',
    tokenRps: 10,
    appRps: 20,
    specPaths: true,
    idempotency: true,
  });
});
after(() => fake.stop());

async function token(form: Record<string, string>) {
  const res = await fetch(`${fake.authUrl}/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: fake.clientId, client_secret: fake.clientSecret, ...form }).toString(),
  });
  return { status: res.status, body: await res.json() };
}

async function grant(verifier = 'v'.repeat(50)) {
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({
    client_id: fake.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'snapchat-marketing-api',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const res = await fetch(`${fake.authUrl}/authorize?${q}`, { redirect: 'manual' });
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  return { code, verifier };
}

const api = (tok: string, path: string, init: RequestInit = {}) =>
  fetch(path.startsWith('http') ? path : `${fake.apiUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  }).then(async (r) => ({ status: r.status, body: await r.text().then((t) => (t ? JSON.parse(t) : undefined)) }));

describe('fake ad network', () => {
  let access = '';
  let refresh = '';

  it('issues single-use codes bound to redirect_uri and PKCE, and rotating refresh tokens', async () => {
    const g = await grant();
    assert.equal(
      (await token({ grant_type: 'authorization_code', code: g.code, redirect_uri: REDIRECT, code_verifier: 'wrong' }))
        .body.error,
      'invalid_grant',
    );
    const g2 = await grant();
    assert.equal(
      (
        await token({
          grant_type: 'authorization_code',
          code: g2.code,
          redirect_uri: 'https://evil.example/cb',
          code_verifier: g2.verifier,
        })
      ).body.error,
      'invalid_grant',
    );
    const g3 = await grant();
    const ok = await token({
      grant_type: 'authorization_code',
      code: g3.code,
      redirect_uri: REDIRECT,
      code_verifier: g3.verifier,
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.expires_in, 1800);
    assert.equal(
      (
        await token({
          grant_type: 'authorization_code',
          code: g3.code,
          redirect_uri: REDIRECT,
          code_verifier: g3.verifier,
        })
      ).body.error,
      'invalid_grant',
      'code reuse',
    );
    const r = await token({ grant_type: 'refresh_token', refresh_token: ok.body.refresh_token });
    assert.equal(r.status, 200);
    assert.notEqual(r.body.refresh_token, ok.body.refresh_token, 'rotating mode');
    assert.equal(
      (await token({ grant_type: 'refresh_token', refresh_token: ok.body.refresh_token })).body.error,
      'invalid_grant',
    );
    const bad = await fetch(`${fake.authUrl}/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=refresh_token&client_id=${fake.clientId}&client_secret=nope&refresh_token=x`,
    });
    assert.equal(bad.status, 401);
    access = r.body.access_token;
    refresh = r.body.refresh_token;
  });

  it('answers 401 for unknown tokens and envelopes everything', async () => {
    const r = await api('nope', '/me/organizations');
    assert.equal(r.status, 401);
    assert.equal(r.body.request_status, 'ERROR');
    const ok = await api(access, '/me/organizations?with_ad_accounts=true');
    assert.equal(ok.body.request_status, 'SUCCESS');
    assert.ok(ok.body.request_id);
    assert.equal(ok.body.organizations[0].organization.ad_accounts.length, 2);
  });

  it('reports partial failures per item and validates fields', async () => {
    const acct = fake.accounts.usd;
    const r = await api(access, `/adaccounts/${acct}/campaigns`, {
      method: 'POST',
      body: JSON.stringify({
        campaigns: [
          { name: 'ok', ad_account_id: acct, status: 'PAUSED', start_time: new Date().toISOString() },
          { name: 'no start', ad_account_id: acct, status: 'PAUSED' },
          { name: 'x'.repeat(376), ad_account_id: acct, status: 'PAUSED', start_time: new Date().toISOString() },
          {
            name: 'cheap',
            ad_account_id: acct,
            status: 'PAUSED',
            start_time: new Date().toISOString(),
            daily_budget_micro: 1_000_000,
          },
        ],
      }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.campaigns.map((x: any) => x.sub_request_status),
      ['SUCCESS', 'ERROR', 'ERROR', 'ERROR'],
    );
    assert.match(r.body.campaigns[1].sub_request_error_reason, /start_time/);
    const squad = await api(access, `/adaccounts/${acct}/adsquads`, {
      method: 'POST',
      body: JSON.stringify({
        adsquads: [
          {
            campaign_id: r.body.campaigns[0].campaign.id,
            name: 's',
            status: 'PAUSED',
            billing_event: 'IMPRESSION',
            optimization_goal: 'SWIPES',
            placement_v2: { config: 'AUTOMATIC' },
            daily_budget_micro: 5_000_000,
          },
        ],
      }),
    });
    assert.equal(squad.body.adsquads[0].sub_request_status, 'SUCCESS');
    assert.equal(
      fake.world.pathLog.at(-1)!.style,
      'spec',
      'the spec alias path is accepted (behind its flag) and logged',
    );
    const delivery = squad.body.adsquads[0].adsquad.delivery_status;
    assert.ok(delivery.includes('INVALID_EFFECTIVE_PAUSED'));
  });

  it('pages with limit 50..1000 and an absolute next_link', async () => {
    const acct = fake.accounts.eur;
    const items = Array.from({ length: 60 }, (_, i) => ({
      name: `p${i}`,
      ad_account_id: acct,
      status: 'PAUSED',
      start_time: new Date().toISOString(),
    }));
    await api(access, `/adaccounts/${acct}/campaigns`, { method: 'POST', body: JSON.stringify({ campaigns: items }) });
    assert.equal((await api(access, `/adaccounts/${acct}/campaigns?limit=10`)).status, 400);
    const p1 = await api(access, `/adaccounts/${acct}/campaigns?limit=50`);
    assert.equal(p1.body.campaigns.length, 50);
    assert.match(p1.body.paging.next_link, /^http:\/\/127\.0\.0\.1:\d+\/v1\/.*cursor=/);
    const p2 = await api(access, p1.body.paging.next_link);
    assert.equal(p2.body.campaigns.length, 10);
    assert.equal(p2.body.paging.next_link, undefined);
    assert.equal(p2.body.campaigns[9].campaign.name, 'p59', 'creation order');
  });

  it('enforces the stats rules: local midnight for DAY, limit only with breakdown', async () => {
    const acct = fake.accounts.usd;
    const q = (s: string) => api(access, `/adaccounts/${acct}/stats?${s}`);
    const notMidnight = await q('granularity=DAY&start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z');
    assert.equal(notMidnight.status, 400, 'UTC midnight is not Los Angeles midnight');
    assert.match(notMidnight.body.debug_message, /start of day/);
    const ok = await q(
      'granularity=DAY&start_time=2026-01-01T00:00:00-08:00&end_time=2026-01-03T00:00:00-08:00&fields=spend,impressions',
    );
    assert.equal(ok.status, 200);
    assert.equal(ok.body.timeseries_stats[0].timeseries_stat.timeseries.length, 2);
    assert.deepEqual(Object.keys(ok.body.timeseries_stats[0].timeseries_stat.timeseries[0].stats).sort(), [
      'impressions',
      'spend',
    ]);
    const e1008 = await q(
      'granularity=DAY&start_time=2026-01-01T00:00:00-08:00&end_time=2026-01-03T00:00:00-08:00&limit=50',
    );
    assert.equal(e1008.body.error_code, 'E1008');
  });

  it('rate limits per token with 429 and honours the forced-429 switch', async () => {
    const n = fake.world.requests.length;
    await Promise.all(Array.from({ length: 15 }, () => api(access, '/me/organizations')));
    // Judged on arrival times, not on how many landed within one second on a loaded machine.
    const log = fake.world.requests.slice(n);
    const within = (t: number, xs: typeof log) => xs.filter((x) => x.at <= t && t - x.at < 1000).length;
    const served = log.filter((r) => r.status !== 429);
    for (const r of served) assert.ok(within(r.at, served) <= 10, 'never more than 10 served per second per token');
    if (log.some((r) => within(r.at, log) > 10))
      assert.ok(
        log.some((r) => r.status === 429),
        'a crowded second answered 429',
      );
    await new Promise((r) => setTimeout(r, 1100));
    fake.force429(1);
    assert.equal((await api(access, '/me/organizations')).status, 429);
    assert.equal((await api(access, '/me/organizations')).status, 200);
  });

  it('with the idempotency option, a write repeating its Idempotency-Key gets the first answer (upload included)', async () => {
    const acct = fake.accounts.usd;
    const headers = { 'idempotency-key': 'k-1' };
    const body = JSON.stringify({ media: [{ name: 'm', type: 'IMAGE', ad_account_id: acct }] });
    const a = await api(access, `/adaccounts/${acct}/media`, { method: 'POST', body, headers });
    const b = await api(access, `/adaccounts/${acct}/media`, { method: 'POST', body, headers });
    assert.equal(b.body.media[0].media.id, a.body.media[0].media.id);
    const id = a.body.media[0].media.id;
    const upload = () => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(8)]), 'a.png');
      return fetch(`${fake.apiUrl}/media/${id}/upload`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${access}`, ...headers },
      }).then((r) => r.json());
    };
    assert.equal(
      (await upload()).request_id,
      (await upload()).request_id,
      'the second upload was answered from the first',
    );
  });

  it('revocation: refresh -> invalid_grant, access token -> 401', async () => {
    fake.revoke(refresh);
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: refresh })).body.error, 'invalid_grant');
    assert.equal((await api(access, '/me/organizations')).status, 401);
  });
});
