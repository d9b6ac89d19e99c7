import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { addDays, localDay } from '../src/lib/time.js';
import { effectivelyActive } from '../tools/fake-adnetwork/entities.js';
import type { FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { acctPath, startLiveTenant } from './helpers/ad-network.js';
import type { Client, Tenant } from './helpers/client.js';
import type { TestServer } from './helpers/server.js';

// The capability against the strict fake, which answers only the documented objects: ad squads name
// their campaign (not the ad account), ads their ad squad, and a breakdown answer holds only the children.

let fake: FakeAdNetwork;
let server: TestServer;
let c: Client;
let t: Tenant;
let USD: string;
let EUR: string;
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(128, 3)]);

before(async () => {
  ({ fake, server, c, t, USD, EUR } = await startLiveTenant(11));
});
after(async () => {
  await server.stop();
  await fake.stop();
});

async function campaign(acct: string, name: string) {
  const r = await c.post(`${acctPath(acct)}/campaigns`, { name, status: 'ACTIVE', daily_budget_usd: 40 }, t.console);
  assert.equal(r.status, 201, r.text);
  return r.body.data.object.id as string;
}

async function squad(acct: string, campaignId: string, name: string) {
  const r = await c.post(
    `${acctPath(acct)}/adsquads`,
    { campaign_id: campaignId, name, status: 'ACTIVE', daily_budget_usd: 10 },
    t.console,
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.object.id as string;
}

async function upload(acct: string, name: string) {
  const res = await fetch(
    `${server.url}${acctPath(acct)}/media?name=${encodeURIComponent(name)}&type=IMAGE&file_name=m.png`,
    {
      method: 'POST',
      headers: { ...t.console, 'content-type': 'image/png' },
      body: PNG,
    },
  );
  const media = await res.json();
  assert.equal(res.status, 201, JSON.stringify(media));
  return media.data.object.id as string;
}

/** One uploaded media per account serves every creative (each call counts against the network quota). */
const media: Record<string, Promise<string>> = {};

async function creative(acct: string, name: string) {
  media[acct] ??= upload(acct, 'Shared');
  const r = await c.post(
    `${acctPath(acct)}/creatives`,
    { name, headline: 'Hello', brand_name: 'Brand', media_id: await media[acct], profile_id: 'p-1' },
    t.console,
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.object.id as string;
}

async function ad(acct: string, squadId: string, creativeId: string, name: string) {
  const r = await c.post(`${acctPath(acct)}/ads`, { ad_squad_id: squadId, creative_id: creativeId, name }, t.console);
  assert.equal(r.status, 201, r.text);
  return r.body.data.object.id as string;
}

const liveSquads = (campaignId: string) =>
  [...fake.world.entities.values()].filter(
    (e) => e.kind === 'adsquad' && !e.deleted && e.fields.campaign_id === campaignId,
  );

describe('ad network against the documented objects', () => {
  it('updates, pauses and resumes an ad squad and creates and pauses an ad (ownership through campaign and ad squad)', async () => {
    const cid = await campaign(USD, 'Graph');
    const sid = await squad(USD, cid, 'Graph squad');
    const patch = await c.patch(`${acctPath(USD)}/adsquads/${sid}`, { name: 'Graph squad 2' }, t.console);
    assert.equal(patch.status, 200, patch.text);
    assert.equal(fake.world.entities.get(sid)!.fields.name, 'Graph squad 2');
    const pause = await c.post(`${acctPath(USD)}/adsquads/${sid}/pause`, {}, t.console);
    assert.equal(pause.status, 200, pause.text);
    assert.equal(fake.world.entities.get(sid)!.fields.status, 'PAUSED');
    const resume = await c.post(`${acctPath(USD)}/adsquads/${sid}/resume`, {}, t.console);
    assert.equal(resume.status, 200, resume.text);
    assert.equal(fake.world.entities.get(sid)!.fields.status, 'ACTIVE');

    const adId = await ad(USD, sid, await creative(USD, 'Graph creative'), 'Graph ad');
    assert.equal(fake.world.entities.get(adId)!.fields.ad_squad_id, sid);
    const adPause = await c.post(`${acctPath(USD)}/ads/${adId}/pause`, {}, t.console);
    assert.equal(adPause.status, 200, adPause.text);
    assert.equal(fake.world.entities.get(adId)!.fields.status, 'PAUSED');
  });

  it("still refuses another ad account's ad squad and ad (404), and an ad on it (400)", async () => {
    const eurSquad = await squad(EUR, await campaign(EUR, 'Other'), 'Other squad');
    const eurAd = await ad(EUR, eurSquad, await creative(EUR, 'Other creative'), 'Other ad');
    const n = fake.world.requests.filter((r) => r.method === 'PUT').length;
    assert.equal((await c.post(`${acctPath(USD)}/adsquads/${eurSquad}/pause`, {}, t.console)).status, 404);
    assert.equal((await c.post(`${acctPath(USD)}/ads/${eurAd}/pause`, {}, t.console)).status, 404);
    const eurCampaign = fake.world.entities.get(eurSquad)!.fields.campaign_id;
    assert.equal((await c.get(`${acctPath(USD)}/adsquads?campaign_id=${eurCampaign}`, t.console)).status, 404);
    const usdCreative = await creative(USD, 'Mine');
    const cross = await c.post(
      `${acctPath(USD)}/ads`,
      { ad_squad_id: eurSquad, creative_id: usdCreative, name: 'x' },
      t.console,
    );
    assert.equal(cross.status, 400, cross.text);
    assert.match(cross.body.detail, /ad squad of this ad account/);
    assert.equal(fake.world.requests.filter((r) => r.method === 'PUT').length, n, 'nothing was written');
  });

  it("stores the campaign's own DAY rows from a campaign-level call, and the ad-squad rows from the breakdown", async () => {
    const cid = await campaign(USD, 'Stats');
    const squads = [await squad(USD, cid, 'Stats A'), await squad(USD, cid, 'Stats B')];
    for (const [i, s] of squads.entries()) await ad(USD, s, await creative(USD, `Stats ${i}`), `Stats ad ${i}`);
    const today = localDay(Date.now(), 'America/Los_Angeles');
    const from = addDays(today, -2);
    const n = fake.world.requests.length;
    const pull = await c.post(`${acctPath(USD)}/stats/pull`, { campaign_id: cid, from, to: today }, t.console);
    assert.equal(pull.status, 200, pull.text);
    const calls = fake.world.requests.slice(n).filter((r) => r.path === `/v1/campaigns/${cid}/stats`);
    assert.ok(calls.length >= 2, 'the campaign series and the breakdown');
    const got = await c.get(`/api/v1/ad-network/stats?from=${from}&to=${today}&ad_account_id=${USD}`, t.console);
    assert.equal(got.status, 200, got.text);
    const rows = got.body.data.filter((r: any) => r.entity_id === cid || squads.includes(r.entity_id));
    const own = rows.filter((r: any) => r.entity_type === 'campaign');
    assert.deepEqual(
      own.map((r: any) => r.day),
      [from, addDays(from, 1), today],
      'three days of campaign rows',
    );
    const todayCampaign = own.find((r: any) => r.day === today);
    assert.ok(todayCampaign.impressions > 0 && todayCampaign.spend_local_micro > 0, 'the campaign delivered today');
    const todaySquads = rows.filter((r: any) => r.entity_type === 'adsquad' && r.day === today);
    assert.equal(todaySquads.length, 2);
    // In the fake a campaign is the sum of its squads; the network does not document that, so we store both as answered.
    assert.equal(
      todayCampaign.impressions,
      todaySquads.reduce((s: number, r: any) => s + r.impressions, 0),
    );
  });

  it('asks for DAY stats between local midnights across a DST change (Europe/Berlin, October 2026)', async () => {
    const cid = await campaign(EUR, 'DST');
    // The network answers 400 unless start (+02:00) and end (+01:00) are both local midnights.
    const pull = await c.post(
      `${acctPath(EUR)}/stats/pull`,
      { campaign_id: cid, from: '2026-10-23', to: '2026-10-26' },
      t.console,
    );
    assert.equal(pull.status, 200, pull.text);
    assert.equal(pull.body.data.rows, 4, 'four local days of the campaign (it has no ad squads)');
  });

  it('finds an ad squad whose create answer was lost (ad squads have no created_at) instead of creating a second one', async () => {
    const cid = await campaign(USD, 'Lost');
    fake.dropResponses(1, /^POST \/v1\/campaigns\/[^/]+\/adsquads$/);
    const sid = await squad(USD, cid, 'Lost squad');
    assert.deepEqual(
      liveSquads(cid).map((s) => s.id),
      [sid],
      'exactly one squad on the network',
    );
  });

  it('sends the media upload with an Idempotency-Key', async () => {
    const n = fake.world.requests.length;
    await upload(USD, 'Keyed');
    const sent = fake.world.requests
      .slice(n)
      .find((r) => r.method === 'POST' && /^\/v1\/media\/[^/]+\/upload$/.test(r.path));
    assert.ok(sent, 'the file was uploaded');
    assert.ok(sent.idempotencyKey, 'the upload carries an Idempotency-Key');
  });

  it('undoes an experiment start that fails midway: nothing left spending, and a retry starts cleanly', async () => {
    const cid = await campaign(USD, 'Exp undo');
    const creatives = [await creative(USD, 'Exp 0'), await creative(USD, 'Exp 1')];
    const body = {
      name: 'Undo test',
      campaign_id: cid,
      daily_budget_usd: 10,
      variants: creatives.map((id, i) => ({ name: `V${i}`, creative_id: id })),
    };
    const headers = { ...t.console, 'idempotency-key': 'exp-undo-1' };
    fake.failRequests(1, /^POST \/v1\/adsquads\/[^/]+\/ads$/, 1); // the treatment's ad is refused
    const failed = await c.post(`${acctPath(USD)}/experiments`, body, headers);
    assert.equal(failed.status, 400, failed.text);
    assert.deepEqual(
      liveSquads(cid)
        .filter((s) => s.fields.status === 'ACTIVE')
        .map((s) => s.fields.name),
      [],
      'no ACTIVE ad squad left behind',
    );
    assert.deepEqual(
      liveSquads(cid).map((s) => s.fields.name),
      [],
      'the squads the start created were deleted',
    );
    const orphans = [...fake.world.entities.values()].filter(
      (e) => e.kind === 'ad' && fake.world.entities.get(e.fields.ad_squad_id)?.fields.campaign_id === cid,
    );
    assert.ok(
      orphans.length >= 1 && orphans.every((e) => !effectivelyActive(fake.world, e)),
      'the control ad left in its deleted squad cannot deliver',
    );
    const list = await c.get(`${acctPath(USD)}/experiments`, t.console);
    assert.equal(list.body.data.filter((e: any) => e.campaign_id === cid).length, 0, 'no experiment recorded');

    const retry = await c.post(`${acctPath(USD)}/experiments`, body, headers);
    assert.equal(retry.status, 201, retry.text);
    assert.deepEqual(
      retry.body.data.variants.map((v: any) => v.status),
      ['ACTIVE', 'PAUSED'],
    );
    assert.equal(liveSquads(cid).length, 2, 'exactly one squad per variant');
    for (const v of retry.body.data.variants)
      assert.equal(fake.world.entities.get(v.adsquad_id)!.fields.status, v.status);
  });

  it('sent every write with an Idempotency-Key', () => {
    const unkeyed = fake.world.requests
      .filter((r) => r.method !== 'GET' && !r.idempotencyKey)
      .map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(unkeyed, []);
  });
});
