// The in-process search index must answer exactly what the SQL path answers: both services read
// the same database; one never builds an index (indexBytes 0), the other is warmed first.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createActivityStore } from '../src/modules/activity/store.js';
import { createOptionSetService } from '../src/modules/option-sets/service.js';
import { createOptionSetStore } from '../src/modules/option-sets/store.js';
import { client, createTenant, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: Client;
let t: Tenant;
let scope: { tenantId: string; appId: string };
type Service = ReturnType<typeof createOptionSetService>;
let viaSql: Service;
let viaIndex: Service;

before(async () => {
  server = await startTestServer();
  c = client(server.url);
  t = await createTenant(c);
  scope = { tenantId: t.orgId, appId: t.appId };
  const deps = {
    db: server.db,
    store: createOptionSetStore(server.db),
    activity: createActivityStore(server.db),
    cacheBytes: 0,
  };
  viaSql = createOptionSetService({ ...deps, indexBytes: 0 });
  viaIndex = createOptionSetService({ ...deps, onIndexError: (err) => assert.fail(String(err)) });
});
after(() => server.stop());

const pair = (k: Tenant['live']) => ({ 'x-api-key': k.public_key, 'x-api-secret': k.secret_key });
async function sync(setId: string, body: unknown) {
  const r = await c.post(`/api/v1/sdk/option-sets/${setId}/sync`, body, pair(t.live));
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

/** Reads once so the index of the current version builds, then waits for it. */
async function warm(setId: string) {
  const before = viaIndex.indexStats().sets;
  await viaIndex.answer(scope, setId);
  for (let i = 0; i < 200 && (viaIndex.indexStats().building > 0 || viaIndex.indexStats().sets === before); i++)
    await new Promise((r) => setTimeout(r, 10));
  assert.ok(viaIndex.indexStats().sets > 0, 'the index was built');
}

/** Every page of a query through both services: identical JSON, page after page. */
async function same(setId: string, q: string | undefined, limit: number, cursor?: string) {
  let pages = 0;
  do {
    const opts = { q, limit, cursor };
    const [a, b] = await Promise.all([viaSql.answer(scope, setId, opts), viaIndex.answer(scope, setId, opts)]);
    assert.equal(b, a, `q=${q} limit=${limit} page ${pages}`);
    cursor = JSON.parse(a).data.next_cursor ?? undefined;
    pages++;
  } while (cursor && pages < 50);
  return pages;
}

const WORDS = [
  'São',
  'Paulo',
  'Crème',
  'brûlée',
  'Zürich',
  'straße',
  'Œuvre',
  'ﬁnal',
  '100%',
  'x_y',
  'a\\b',
  'ÀÉÎÕÜ',
  'İstanbul',
  'Ærø',
  'ĳssel',
  '½',
  'naïve',
  'café',
  'Ångström',
  '東京',
  '😀emoji',
];

describe('option set index answers exactly like SQL', () => {
  it('plain paging, searches (accents, case, wildcards, short and long words) and cursors', async () => {
    const items = Array.from({ length: 900 }, (_, i) => ({
      id: i % 3 === 0 ? `id-${i}` : undefined,
      value: `v${(i * 7919) % 1000}-${WORDS[i % WORDS.length]!.toLowerCase()}`,
      label: `${WORDS[(i * 5) % WORDS.length]} ${WORDS[(i * 11) % WORDS.length]} ${i % 13 === 0 ? 'Rare' : ''}`.trim(),
      sort_order: i % 4 === 0 ? 0 : (i % 9) - 4.5,
      option_data: i % 2 ? { subtitle: `Item ${i}`, n: i, nested: { ok: true } } : undefined,
    }));
    await sync('idx', { items });
    await warm('idx');
    const queries = [
      undefined,
      'sao',
      'SAO paulo',
      'creme brulee',
      'strasse',
      'straße',
      'oeuvre',
      'œuvre',
      'final',
      '100%',
      '%',
      '_',
      'x_y',
      'a\\b',
      '\\',
      'aeiou',
      'istanbul',
      'i̇stanbul',
      'aerø',
      'aero',
      'ijssel',
      '1/2',
      '½',
      'naive',
      'CAFÉ',
      'angstrom',
      '東京',
      '京',
      '😀',
      'emoji',
      'rare',
      'ra',
      'e',
      'zz',
      'v1',
      'v10 -',
      'nothing-here',
      'v7 cafe rare',
      'p a u l o',
    ];
    for (const q of queries) for (const limit of [1, 7, 100]) await same('idx', q, limit);
  });

  it('a cursor taken before a sync keeps reading its version from the older index; forged cursors fall back', async () => {
    await sync('idx2', {
      items: Array.from({ length: 300 }, (_, i) => ({ value: `k${i}`, label: `Label ${i % 17} café` })),
    });
    await warm('idx2');
    const first = JSON.parse(await viaIndex.answer(scope, 'idx2', { q: 'cafe', limit: 50 })).data;
    await sync('idx2', {
      mode: 'replace',
      items: Array.from({ length: 100 }, (_, i) => ({ value: `k${i * 3}`, label: `New ${i}` })),
    });
    await warm('idx2');
    assert.equal(viaIndex.indexStats().sets >= 2, true);
    assert.equal(await same('idx2', 'cafe', 50, first.next_cursor), 5, 'old version paged to its end');
    await same('idx2', 'new', 10);
    await same('idx2', undefined, 30);
    // A cursor naming a value the version does not have, or another sort_order: keyset semantics via SQL.
    const forge = (sortOrder: number, value: string) =>
      Buffer.from(JSON.stringify([1, 'idx2', first.version + 1, sortOrder, value])).toString('base64url');
    await same('idx2', undefined, 30, forge(0, 'k100'));
    await same('idx2', undefined, 30, forge(-1, 'k3'));
    await same('idx2', 'new', 30, forge(0, 'k3'));
  });

  it('reads that start after a sync answered see it, while concurrent reads share version lookups', async () => {
    await sync('hot', { items: Array.from({ length: 50 }, (_, i) => ({ value: `h${i}`, label: `Hot ${i}` })) });
    const key = { 'x-api-key': t.live.public_key };
    let stop = false;
    let reads = 0;
    // Keep 12 reads in flight all along, so every version lookup has others joining it.
    const background = Array.from({ length: 12 }, async () => {
      while (!stop) {
        const r = await c.get('/api/v1/sdk/option-sets/hot?q=hot', key);
        assert.equal(r.status, 200);
        reads++;
      }
    });
    for (let round = 0; round < 5; round++) {
      const { version } = await sync('hot', { items: [{ value: `h${round}`, label: `Hot ${round} r${round}` }] });
      const after = await Promise.all(Array.from({ length: 6 }, () => c.get('/api/v1/sdk/option-sets/hot?q=hot', key)));
      for (const r of after)
        assert.ok(r.body.data.version >= version, `read after sync ${version} answered ${r.body.data.version}`);
    }
    stop = true;
    await Promise.all(background);
    assert.ok(reads > 20);
  });
});
