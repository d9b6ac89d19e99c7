import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { addDays, localDay, midnightIso } from '../src/lib/time.js';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';

// The fake must answer exactly what the network's reference documents (field sets, shapes, paging,
// errors), or a lenient fake hides client defects again. The reference's examples are kept as a
// checked-in copy (tools/fake-adnetwork/documented.json); the first test proves the copy still equals
// the reference, the others drive the fake with the documented requests and compare field by field.

const ROOT = path.resolve(import.meta.dirname, '..');
const REFERENCE = process.env.ADNETWORK_API_REF ?? path.resolve(ROOT, '..', 'shared', 'adnetwork-api.md');
const DOC = JSON.parse(readFileSync(path.join(ROOT, 'tools/fake-adnetwork/documented.json'), 'utf8')) as {
  examples: Record<string, any>;
  shapes: Record<string, string>;
};
const ex = DOC.examples;

/** Field names of `<item>:{...}` in a prose shape: required, optional (`x?`), fixed values, and whether it echoes the request (`…`). */
function docFields(item: string, shape = item) {
  const snippet = DOC.shapes[shape];
  const open = snippet.indexOf(`${item}:{`) + item.length + 2;
  const inner = snippet.slice(open, snippet.lastIndexOf('}}]'));
  const out = { required: [] as string[], optional: [] as string[], values: {} as Record<string, string>, echo: false };
  for (const tok of inner.split(', ')) {
    if (tok.startsWith('…')) {
      out.echo = true;
      continue;
    }
    const [name, value] = tok.split(':');
    if (name.endsWith('?')) out.optional.push(name.slice(0, -1));
    else out.required.push(name);
    if (value?.startsWith('"')) out.values[name] = JSON.parse(value);
  }
  return out;
}

const keys = (o: object) => Object.keys(o).sort();
const union = (...xs: string[][]) => [...new Set(xs.flat())].sort();

/** Asserts an object answered for a documented request has exactly the documented fields. */
function assertShape(
  item: string,
  got: Record<string, unknown>,
  request: Record<string, unknown>,
  readOnly: string[] = [],
) {
  const d = docFields(item);
  const expected = union(
    ['id'],
    d.required,
    d.optional.filter((k) => k in request),
    d.echo ? Object.keys(request) : [],
  );
  const extra = keys(got).filter((k) => !expected.includes(k) && !readOnly.includes(k));
  assert.deepEqual(extra, [], `${item}: fields the reference does not document: ${extra}`);
  assert.deepEqual(
    expected.filter((k) => !(k in got)),
    [],
    `${item}: documented fields missing`,
  );
  for (const [k, v] of Object.entries(d.values)) assert.equal(got[k], v, `${item}.${k}`);
}

/** The documented request with its placeholders ("…") replaced by real values. */
function documented(name: string, plural: string, fill: Record<string, unknown>) {
  const item = { ...ex[name][plural][0] };
  for (const [k, v] of Object.entries(item)) if (typeof v === 'string' && v.includes('…')) delete item[k];
  return { ...item, ...fill };
}

describe('ad network reference: the checked-in copy', () => {
  it('equals the reference (every JSON example, in order, and every prose shape verbatim)', () => {
    assert.ok(
      existsSync(REFERENCE),
      `The network reference is missing at ${REFERENCE}. The contract test checks its copy (tools/fake-adnetwork/documented.json) against it: ` +
        'put shared/ beside the clone (../shared/adnetwork-api.md) or set ADNETWORK_API_REF to the file.',
    );
    const text = readFileSync(REFERENCE, 'utf8');
    const blocks = [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
    assert.deepEqual(
      blocks,
      Object.values(ex),
      'the reference examples changed: update tools/fake-adnetwork/documented.json and the fake',
    );
    for (const [name, snippet] of Object.entries(DOC.shapes))
      assert.ok(text.includes(snippet), `shape "${name}" is no longer in the reference: ${snippet}`);
  });
});

describe('fake ad network: documented objects and answers', () => {
  let fake: FakeAdNetwork;
  let token: Record<string, unknown>;
  let acct: string;
  const ids: Record<string, string> = {};
  const api = async (p: string, init: { method?: string; body?: unknown; form?: FormData } = {}) => {
    const res = await fetch(p.startsWith('http') ? p : `${fake.apiUrl}${p}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${token.access_token}`,
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
      body: init.form ?? (init.body ? JSON.stringify(init.body) : undefined),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const post = (p: string, body: unknown) => api(p, { method: 'POST', body });

  before(async () => {
    fake = await startFakeAdNetwork({ seed: 3, tokenRps: 1000, appRps: 1000 });
    acct = fake.accounts.usd;
    const q = new URLSearchParams({
      client_id: fake.clientId,
      redirect_uri: 'https://x.example/cb',
      response_type: 'code',
      scope: 'snapchat-marketing-api',
      state: 's',
    });
    const code = new URL(
      (await fetch(`${fake.authUrl}/authorize?${q}`, { redirect: 'manual' })).headers.get('location')!,
    ).searchParams.get('code')!;
    const res = await fetch(`${fake.authUrl}/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
        code,
        redirect_uri: 'https://x.example/cb',
      }).toString(),
    });
    token = await res.json();
  });
  after(() => fake.stop());

  it('token, organizations and ad accounts', async () => {
    assert.deepEqual(keys(token), keys(ex.token));
    const orgs = await api('/me/organizations?with_ad_accounts=true');
    const org = orgs.body.organizations[0].organization;
    assert.deepEqual(keys(org), keys(ex.organizations.organizations[0].organization));
    for (const a of org.ad_accounts)
      assert.deepEqual(keys(a), keys(ex.organizations.organizations[0].organization.ad_accounts[0]));
    const accts = await api(`/organizations/${org.id}/adaccounts`);
    assert.deepEqual(keys(accts.body), keys(ex.adaccounts).concat('paging').sort());
    for (const a of accts.body.adaccounts)
      assert.deepEqual(keys(a.adaccount), keys(ex.adaccounts.adaccounts[0].adaccount));
    const undocumented = await api(`/adaccounts/${acct}`);
    assert.equal(undocumented.status, 404, 'GET /adaccounts/{id} is not documented');
    assert.deepEqual(keys(undocumented.body), keys(ex.request_error));
  });

  it('campaign, ad squad, media (two steps), creative and ad: the documented requests answer the documented fields', async () => {
    const campaignReq = documented('campaign_request', 'campaigns', { ad_account_id: acct, status: 'ACTIVE' });
    const cp = await post(`/adaccounts/${acct}/campaigns`, { campaigns: [campaignReq] });
    assert.equal(cp.status, 200, JSON.stringify(cp.body));
    assert.equal(cp.body.campaigns[0].sub_request_status, 'SUCCESS');
    assertShape('campaign', cp.body.campaigns[0].campaign, campaignReq);
    ids.campaign = cp.body.campaigns[0].campaign.id;

    const squadReq = documented('adsquad_request', 'adsquads', {
      campaign_id: ids.campaign,
      status: 'ACTIVE',
      start_time: new Date().toISOString(),
    });
    const sq = await post(`/campaigns/${ids.campaign}/adsquads`, { adsquads: [squadReq] });
    assert.equal(sq.status, 200, JSON.stringify(sq.body));
    assertShape('adsquad', sq.body.adsquads[0].adsquad, squadReq);
    assert.equal(
      sq.body.adsquads[0].adsquad.ad_account_id,
      undefined,
      'an ad squad names its campaign, not its ad account',
    );
    ids.squad = sq.body.adsquads[0].adsquad.id;
    const got = await api(`/adsquads/${ids.squad}`);
    assertShape('adsquad', got.body.adsquads[0].adsquad, squadReq);

    const mediaReq = documented('media_request', 'media', { ad_account_id: acct, type: 'IMAGE' });
    const md = await post(`/adaccounts/${acct}/media`, { media: [mediaReq] });
    assertShape('media', md.body.media[0].media, mediaReq);
    ids.media = md.body.media[0].media.id;
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(64)], { type: 'image/png' }), 'v.png');
    const up = await api(`/media/${ids.media}/upload`, { method: 'POST', form });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual(keys(up.body), keys(ex.upload_response), 'the upload answer is not sub-request wrapped');
    assert.deepEqual(keys(up.body.result), keys(ex.upload_response.result));
    assert.equal((await api(`/media/${ids.media}`)).body.media[0].media.media_status, 'READY');

    const creativeReq = documented('creative_request', 'creatives', {
      ad_account_id: acct,
      top_snap_media_id: ids.media,
      profile_properties: { profile_id: 'p-1' },
    });
    const cr = await post(`/adaccounts/${acct}/creatives`, { creatives: [creativeReq] });
    assert.equal(cr.status, 200, JSON.stringify(cr.body));
    assertShape('creative', cr.body.creatives[0].creative, creativeReq);
    ids.creative = cr.body.creatives[0].creative.id;

    const adReq = documented('ad_request', 'ads', {
      ad_squad_id: ids.squad,
      creative_id: ids.creative,
      status: 'ACTIVE',
    });
    const ad = await post(`/adsquads/${ids.squad}/ads`, { ads: [adReq] });
    assert.equal(ad.status, 200, JSON.stringify(ad.body));
    assertShape('ad', ad.body.ads[0].ad, adReq, ['delivery_status']);
    assert.equal(ad.body.ads[0].ad.ad_account_id, undefined, 'an ad names its ad squad, not its ad account');
    ids.ad = ad.body.ads[0].ad.id;
    fake.disapproveAd(ids.ad, ['Policy']);
    assertShape('ad', { ...(await api(`/ads/${ids.ad}`)).body.ads[0].ad, review_status: 'PENDING' }, adReq, [
      'delivery_status',
      'review_status_reasons',
    ]);
  });

  it('drops fields the reference does not document instead of echoing them', async () => {
    const req = documented('adsquad_request', 'adsquads', {
      campaign_id: ids.campaign,
      ad_account_id: acct,
      colour: 'red',
    });
    const sq = await post(`/campaigns/${ids.campaign}/adsquads`, { adsquads: [req] });
    assert.equal(sq.body.adsquads[0].sub_request_status, 'SUCCESS');
    assert.equal(sq.body.adsquads[0].adsquad.ad_account_id, undefined);
    assert.equal(sq.body.adsquads[0].adsquad.colour, undefined);
  });

  it('stats: DAY and TOTAL series, and breakdowns that hold only the children, paged with limit', async () => {
    // 50 more squads under the campaign (one batch), so a breakdown page of 50 has a next page.
    const more = Array.from({ length: 50 }, (_, i) =>
      documented('adsquad_request', 'adsquads', { campaign_id: ids.campaign, name: `B${i}` }),
    );
    assert.equal((await post(`/campaigns/${ids.campaign}/adsquads`, { adsquads: more })).status, 200);
    const docStat = ex.day_stats.timeseries_stats[0].timeseries_stat;
    const fields = Object.keys(docStat.timeseries[0].stats).join(',');
    const tz = 'America/Los_Angeles';
    const today = localDay(Date.now(), tz);
    const win = `start_time=${encodeURIComponent(midnightIso(addDays(today, -1), tz))}&end_time=${encodeURIComponent(midnightIso(addDays(today, 1), tz))}&fields=${fields}`;

    const own = await api(`/campaigns/${ids.campaign}/stats?granularity=DAY&${win}`);
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual(keys(own.body), keys(ex.day_stats));
    const ts = own.body.timeseries_stats[0].timeseries_stat;
    assert.deepEqual(
      keys(ts).filter((k) => k !== 'finalized_data_end_time'),
      keys(docStat),
    );
    assert.equal(ts.type, 'CAMPAIGN');
    assert.equal(ts.timeseries.length, 2);
    for (const row of ts.timeseries) {
      assert.deepEqual(keys(row), keys(docStat.timeseries[0]));
      assert.deepEqual(keys(row.stats), keys(docStat.timeseries[0].stats));
    }
    assert.ok(ts.timeseries[1].stats.impressions > 0, 'the active ad delivered today');

    const bd = await api(`/campaigns/${ids.campaign}/stats?granularity=DAY&${win}&breakdown=adsquad`);
    const bts = bd.body.timeseries_stats[0].timeseries_stat;
    assert.equal(bts.timeseries, undefined, 'a breakdown answer does not carry the parent series');
    assert.equal(bts.breakdown_stats.adsquad.length, 52);
    for (const child of bts.breakdown_stats.adsquad) assert.deepEqual(keys(child), ['id', 'timeseries', 'type']);
    assert.equal(bts.breakdown_stats.adsquad[0].type, 'AD_SQUAD');
    const first = bts.breakdown_stats.adsquad.find((x: any) => x.id === ids.squad);
    assert.deepEqual(first.timeseries, ts.timeseries, 'the only delivering squad carries the whole campaign');

    const p1 = await api(`/campaigns/${ids.campaign}/stats?granularity=DAY&${win}&breakdown=adsquad&limit=50`);
    assert.equal(p1.body.timeseries_stats[0].timeseries_stat.breakdown_stats.adsquad.length, 50);
    assert.match(p1.body.paging.next_link, /^http:\/\/127\.0\.0\.1:\d+\/v1\/campaigns\/.+cursor=/);
    const p2 = await api(p1.body.paging.next_link);
    assert.equal(p2.body.timeseries_stats[0].timeseries_stat.breakdown_stats.adsquad.length, 2);
    assert.ok(!p2.body.paging.next_link);

    const total = await api(`/campaigns/${ids.campaign}/stats?granularity=TOTAL&${win}`);
    const tstat = total.body.total_stats[0].total_stat;
    assert.deepEqual(
      keys(tstat).filter((k) => !['finalized_data_end_time', 'start_time', 'end_time'].includes(k)),
      union(docFields('total_stat', 'total_stats').required),
    );
    assert.equal(tstat.granularity, 'TOTAL');
    const tb = await api(`/campaigns/${ids.campaign}/stats?granularity=TOTAL&${win}&breakdown=adsquad`);
    const tbs = tb.body.total_stats[0].total_stat;
    assert.equal(tbs.stats, undefined);
    for (const child of tbs.breakdown_stats.adsquad) assert.deepEqual(keys(child), ['id', 'stats']);
  });

  it('stats rules: local midnight for DAY, limit only with breakdown (E1008)', async () => {
    const notMidnight = await api(
      `/campaigns/${ids.campaign}/stats?granularity=DAY&start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z`,
    );
    assert.equal(notMidnight.status, 400);
    assert.deepEqual(keys(notMidnight.body), keys(ex.request_error));
    assert.match(notMidnight.body.debug_message, /start of day \(00:00:00\) for the account's timezone/);
    const e1008 = await api(
      `/campaigns/${ids.campaign}/stats?granularity=DAY&start_time=2026-01-01T00:00:00-08:00&end_time=2026-01-02T00:00:00-08:00&limit=50`,
    );
    assert.equal(e1008.body.error_code, 'E1008');
  });

  it('paging of lists, request and item errors, deletes', async () => {
    const items = Array.from({ length: 55 }, (_, i) =>
      documented('campaign_request', 'campaigns', { ad_account_id: acct, name: `P${i}` }),
    );
    await post(`/adaccounts/${acct}/campaigns`, { campaigns: items });
    assert.equal((await api(`/adaccounts/${acct}/campaigns?limit=49`)).status, 400);
    assert.equal((await api(`/adaccounts/${acct}/campaigns?limit=1001`)).status, 400);
    const p1 = await api(`/adaccounts/${acct}/campaigns?limit=50`);
    assert.deepEqual(keys(p1.body), keys(ex.envelope));
    assert.deepEqual(keys(p1.body.campaigns[0]), keys(ex.envelope.campaigns[0]));
    const next = new URL(p1.body.paging.next_link);
    assert.ok(next.searchParams.get('cursor') && next.searchParams.get('limit') === '50');
    const p2 = await api(p1.body.paging.next_link);
    assert.equal(p1.body.campaigns.length + p2.body.campaigns.length, 56);
    assert.equal(p2.body.campaigns.at(-1).campaign.name, 'P54', 'creation order');

    const missing = await api('/campaigns/00000000-0000-4000-8000-000000000000');
    assert.equal(missing.status, 404);
    assert.deepEqual(keys(missing.body), keys(ex.request_error));
    const bad = await post(`/adaccounts/${acct}/campaigns`, {
      campaigns: [{ name: 'no start', ad_account_id: acct, status: 'PAUSED' }],
    });
    assert.deepEqual(keys(bad.body), keys(ex.item_error));
    assert.deepEqual(keys(bad.body.campaigns[0]), keys(ex.item_error.campaigns[0]));
    assert.equal(bad.body.request_status, 'ERROR');

    const del = await api(`/campaigns/${p2.body.campaigns.at(-1).campaign.id}`, { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual({ ...del.body, request_id: '…' }, JSON.parse(DOC.shapes.delete));
    assert.equal((await api(`/ads/${ids.ad}`, { method: 'DELETE' })).status, 404, 'no delete is documented for ads');
  });
});
