import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTenant, makeEvent, type Tenant } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp();

type Key = Tenant['live'];
const pair = (k: Key) => ({ 'x-api-key': k.public_key, 'x-api-secret': k.secret_key });
const sdk = (k: Key) => ({ 'x-api-key': k.public_key });
const sync = (k: Key, setId: string, body: unknown) =>
  suite.c.post(`/api/v1/sdk/option-sets/${setId}/sync`, body, pair(k));
const read = (k: Key, setId: string, query = '') => suite.c.get(`/api/v1/sdk/option-sets/${setId}${query}`, sdk(k));

async function readAll(k: Key, setId: string, query = '', limit = 100) {
  const items: any[] = [];
  const versions = new Set<number>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = query ? '&' : '?';
    const r = await read(
      k,
      setId,
      `${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    assert.equal(r.status, 200, r.text);
    items.push(...r.body.data.items);
    versions.add(r.body.data.version);
    cursor = r.body.data.next_cursor;
    pages++;
  } while (cursor);
  return { items, versions, pages };
}

async function lockValue(k: Key, setId: string, value: string) {
  const r = await suite.c.post(
    '/api/v1/ingest/events',
    {
      batch: [
        makeEvent({
          event_name: 'onboarding_step_completed',
          properties: { option_set_id: setId, option_value: value },
        }),
      ],
    },
    sdk(k),
  );
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.accepted, 1);
}

describe('option set sync: auth and limits', () => {
  it('needs the key pair: missing secret 401, wrong secret 401', async () => {
    const missing = await suite.c.post('/api/v1/sdk/option-sets/colors/sync', { items: [] }, sdk(suite.t.live));
    assert.equal(missing.status, 401);
    assert.equal(missing.body.code, 'missing_credentials');
    const wrong = await suite.c.post(
      '/api/v1/sdk/option-sets/colors/sync',
      { items: [] },
      { 'x-api-key': suite.t.live.public_key, 'x-api-secret': `${suite.t.live.secret_key}x` },
    );
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.code, 'invalid_credentials');
    const other = await suite.c.post(
      '/api/v1/sdk/option-sets/colors/sync',
      { items: [] },
      { 'x-api-key': suite.t.live.public_key, 'x-api-secret': suite.t.sandbox.secret_key },
    );
    assert.equal(other.status, 401);
  });

  it('rejects more than 5,000 items, oversized option_data and bad set ids with 400', async () => {
    const items = Array.from({ length: 5001 }, (_, i) => ({ value: `v${i}`, label: `L${i}` }));
    const big = await sync(suite.t.live, 'limits', { items });
    assert.equal(big.status, 400);
    assert.equal(big.body.code, 'validation_failed');
    const data = await sync(suite.t.live, 'limits', {
      items: [{ value: 'a', label: 'A', option_data: { blob: 'x'.repeat(5000) } }],
    });
    assert.equal(data.status, 400);
    assert.equal(data.body.errors[0].path, '/body/items/0/option_data');
    const longValue = await sync(suite.t.live, 'limits', { items: [{ value: 'x'.repeat(513), label: 'A' }] });
    assert.equal(longValue.status, 400);
    const badId = await sync(suite.t.live, 'bad%20set', { items: [] });
    assert.equal(badId.status, 400);
    const badMode = await sync(suite.t.live, 'limits', { mode: 'upsert', items: [] });
    assert.equal(badMode.status, 400);
    // Characters PostgreSQL cannot store answer 400, never 500; paired surrogates (emoji) are fine.
    const raw = (body: string) =>
      suite.c.raw('POST', '/api/v1/sdk/option-sets/limits/sync', body, {
        ...pair(suite.t.sandbox),
        'content-type': 'application/json',
      });
    for (const body of [
      '{"items":[{"value":"a\\u0000b","label":"A"}]}',
      '{"items":[{"value":"a","label":"\\ud800"}]}',
      '{"items":[{"value":"a","label":"A","option_data":{"k":"\\u0000"}}]}',
      '{"items":[{"value":"a","label":"A","option_data":{"\\udc00":1}}]}',
    ]) {
      const r = await raw(body);
      assert.equal(r.status, 400, body);
      assert.equal(r.body.code, 'validation_failed');
    }
    let deep: any = 1;
    for (let i = 0; i < 20; i++) deep = { d: deep };
    assert.equal(
      (await sync(suite.t.sandbox, 'limits', { items: [{ value: 'a', label: 'A', option_data: deep }] })).status,
      400,
    );
    // Nothing was created by the refused requests.
    assert.equal((await read(suite.t.live, 'limits')).status, 404);
  });

  it('answers 429 with Retry-After after 20 syncs per minute per key; other keys are unaffected', async () => {
    const r = await createTenant(suite.c);
    for (let i = 0; i < 20; i++) {
      const ok = await sync(r.live, 'rl', { items: [] });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.headers.get('ratelimit-limit'), '20');
    }
    const limited = await sync(r.live, 'rl', { items: [] });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal((await sync(r.sandbox, 'rl', { items: [] })).status, 200);
    // The refused request did not bump the version: 20 live syncs + 1 sandbox sync.
    assert.equal((await read(r.live, 'rl')).body.data.version, 21);
  });
});

describe('option set sync: merge, replace, archive and revive', () => {
  it('creates, orders, counts unchanged rows in neither created nor updated, and bumps the version', async () => {
    const s1 = await sync(suite.t.live, 'fruit', {
      items: [
        { value: 'pear', label: 'Pear', sort_order: 2 },
        { value: 'apple', label: 'Apple', sort_order: 1, option_data: { subtitle: 'red' } },
        { value: 'banana', label: 'Banana', sort_order: 1 },
        { value: 'cherry', label: 'Cherry' },
      ],
    });
    assert.equal(s1.status, 200, s1.text);
    assert.deepEqual(s1.body.data, {
      set_id: 'fruit',
      mode: 'merge',
      version: 1,
      created: 4,
      updated: 0,
      archived: 0,
      rejected: [],
      item_count: 4,
    });
    const r = await read(suite.t.live, 'fruit');
    assert.equal(r.status, 200);
    assert.equal(r.body.data.version, 1);
    assert.equal(r.body.data.next_cursor, null);
    assert.deepEqual(
      r.body.data.items.map((i: any) => i.value),
      ['cherry', 'apple', 'banana', 'pear'],
    );
    assert.deepEqual(r.body.data.items[1], {
      id: null,
      value: 'apple',
      label: 'Apple',
      sort_order: 1,
      option_data: { subtitle: 'red' },
    });

    // Same rows again (option_data keys in another order is still the same), one label changed.
    const s2 = await sync(suite.t.sandbox, 'fruit', {
      items: [
        { value: 'apple', label: 'Apple', sort_order: 1, option_data: { subtitle: 'red' } },
        { value: 'banana', label: 'Bananas' },
      ],
    });
    assert.equal(s2.status, 200);
    assert.deepEqual(
      [s2.body.data.version, s2.body.data.created, s2.body.data.updated, s2.body.data.archived],
      [2, 0, 1, 0],
    );
    // Sets are shared by both environments.
    const viaLive = await read(suite.t.live, 'fruit');
    const viaSandbox = await read(suite.t.sandbox, 'fruit');
    assert.deepEqual(viaLive.body, viaSandbox.body);
    const banana = viaLive.body.data.items.find((i: any) => i.value === 'banana');
    assert.equal(banana.label, 'Bananas');
    assert.equal(banana.sort_order, 1, 'omitted sort_order keeps the stored one');

    const empty = await sync(suite.t.live, 'fruit', { items: [] });
    assert.equal(empty.body.data.version, 3, 'every sync bumps the version');
  });

  it('replace archives what is not sent; sending it again revives it (counted as updated); nothing is deleted', async () => {
    await sync(suite.t.live, 'colors', {
      items: ['red', 'green', 'blue'].map((v) => ({ value: v, label: v.toUpperCase() })),
    });
    const rep = await sync(suite.t.live, 'colors', { mode: 'replace', items: [{ value: 'red', label: 'RED' }] });
    assert.deepEqual(
      [rep.body.data.mode, rep.body.data.created, rep.body.data.updated, rep.body.data.archived],
      ['replace', 0, 0, 2],
    );
    assert.deepEqual(
      (await read(suite.t.live, 'colors')).body.data.items.map((i: any) => i.value),
      ['red'],
    );
    // Archiving again archives nothing more.
    const again = await sync(suite.t.live, 'colors', { mode: 'replace', items: [{ value: 'red', label: 'RED' }] });
    assert.equal(again.body.data.archived, 0);
    const revive = await sync(suite.t.live, 'colors', { items: [{ value: 'blue', label: 'BLUE' }] });
    assert.deepEqual([revive.body.data.created, revive.body.data.updated], [0, 1]);
    assert.deepEqual(
      (await read(suite.t.live, 'colors')).body.data.items.map((i: any) => i.value),
      ['blue', 'red'],
    );
    const { rows } = await suite.server.db.query(
      `SELECT count(DISTINCT item_id)::int AS n FROM option_items WHERE app_id = $1 AND set_id = 'colors'`,
      [suite.t.appId],
    );
    assert.equal(rows[0].n, 3, 'archived items are kept');
  });

  it('identifies items by id: value changes through id, id adoption, swaps and clashes', async () => {
    await sync(suite.t.live, 'plans', {
      items: [
        { value: 'basic', label: 'Basic' },
        { id: 'p2', value: 'pro', label: 'Pro' },
        { id: 'p3', value: 'team', label: 'Team' },
      ],
    });
    const s = await sync(suite.t.live, 'plans', {
      items: [
        { id: 'p1', value: 'basic', label: 'Basic plan' }, // adopts the id-less item
        { id: 'p2', value: 'team', label: 'Team' }, // swap with p3
        { id: 'p3', value: 'pro', label: 'Pro' },
        { id: 'p4', value: 'pro', label: 'Clash' }, // value that p3 takes in this request
        { id: 'p1', value: 'basic', label: 'Twice' }, // same item twice
      ],
    });
    assert.equal(s.status, 200, s.text);
    assert.deepEqual([s.body.data.created, s.body.data.updated], [0, 3]);
    assert.deepEqual(
      s.body.data.rejected.map((r: any) => [r.index, r.id, r.value, r.reason]),
      [
        [3, 'p4', 'pro', 'value_in_use'],
        [4, 'p1', 'basic', 'duplicate_row'],
      ],
    );
    const items = (await read(suite.t.live, 'plans')).body.data.items;
    assert.deepEqual(
      items.map((i: any) => [i.id, i.value, i.label]),
      [
        ['p1', 'basic', 'Basic plan'],
        ['p3', 'pro', 'Pro'],
        ['p2', 'team', 'Team'],
      ],
    );
  });
});

describe('option set sync: locked values', () => {
  it('refuses a row that would change a locked value and applies the rest', async () => {
    await sync(suite.t.live, 'goals', {
      items: [
        { id: 'g1', value: 'lose_weight', label: 'Lose weight' },
        { id: 'g2', value: 'sleep', label: 'Sleep better' },
        { id: 'g3', value: 'focus', label: 'Focus' },
      ],
    });
    await lockValue(suite.t.sandbox, 'goals', 'lose_weight'); // a sandbox answer locks too: the set is app-wide
    const { rows } = await suite.server.db.query(
      `SELECT value FROM option_value_locks WHERE app_id = $1 AND set_id = 'goals'`,
      [suite.t.appId],
    );
    assert.deepEqual(
      rows.map((r) => r.value),
      ['lose_weight'],
    );

    const s = await sync(suite.t.live, 'goals', {
      mode: 'replace',
      items: [
        { id: 'g1', value: 'weight_loss', label: 'Lose weight' }, // would change a locked value
        { id: 'g2', value: 'better_sleep', label: 'Sleep better' }, // unlocked: may change
        { id: 'g3', value: 'focus', label: 'Focus more' },
      ],
    });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.data.rejected.length, 1);
    assert.deepEqual(
      { ...s.body.data.rejected[0], message: undefined },
      { index: 0, id: 'g1', value: 'weight_loss', reason: 'value_locked', message: undefined },
    );
    assert.deepEqual(
      [s.body.data.updated, s.body.data.archived],
      [2, 0],
      'the refused row still counts as sent: replace keeps its item',
    );
    const items = (await read(suite.t.live, 'goals')).body.data.items;
    assert.deepEqual(
      items.map((i: any) => [i.id, i.value, i.label]),
      [
        ['g2', 'better_sleep', 'Sleep better'],
        ['g3', 'focus', 'Focus more'],
        ['g1', 'lose_weight', 'Lose weight'],
      ],
    );

    // The label of a locked item can always change; an array option_value locks each value.
    const label = await sync(suite.t.live, 'goals', {
      items: [{ id: 'g1', value: 'lose_weight', label: 'Lose some weight' }],
    });
    assert.deepEqual([label.body.data.updated, label.body.data.rejected.length], [1, 0]);
    const r = await suite.c.post(
      '/api/v1/ingest/events',
      { batch: [makeEvent({ properties: { option_set_id: 'goals', option_value: ['focus', 'better_sleep'] } })] },
      sdk(suite.t.live),
    );
    assert.equal(r.status, 202);
    const s2 = await sync(suite.t.live, 'goals', {
      items: [
        { id: 'g3', value: 'deep_focus', label: 'Focus' },
        { id: 'g2', value: 'sleep', label: 'Sleep' },
      ],
    });
    assert.deepEqual(
      s2.body.data.rejected.map((x: any) => x.reason),
      ['value_locked', 'value_locked'],
    );
    assert.equal(s2.body.data.updated, 0);
  });
});

describe('option set read', () => {
  it('unknown set 404; another app cannot see the set', async () => {
    assert.equal((await read(suite.t.live, 'nope')).status, 404);
    const other = await createTenant(suite.c);
    assert.equal((await read(other.live, 'fruit')).status, 404);
    const missingKey = await suite.c.get('/api/v1/sdk/option-sets/fruit');
    assert.equal(missingKey.status, 401);
    const badCursor = await read(suite.t.live, 'fruit', '?cursor=notacursor');
    assert.equal(badCursor.status, 400);
    const forge = (setId: string, version: number) =>
      Buffer.from(JSON.stringify([1, setId, version, 0, 'a'])).toString('base64url');
    assert.equal(
      (await read(suite.t.live, 'fruit', `?cursor=${forge('fruit', 999)}`)).status,
      400,
      'a version the set never had',
    );
    assert.equal(
      (await read(suite.t.live, 'fruit', `?cursor=${forge('colors', 1)}`)).status,
      400,
      'a cursor of another set',
    );
    assert.equal((await read(other.live, 'fruit', `?cursor=${forge('fruit', 1)}`)).status, 404, 'another app');
    assert.equal((await read(suite.t.live, 'fruit', `?cursor=${forge('fruit', 2 ** 40)}`)).status, 400);
    const nulCursor = Buffer.from('[1,"fruit",1,0,"\\u0000"]').toString('base64url');
    assert.equal((await read(suite.t.live, 'fruit', `?cursor=${nulCursor}`)).status, 400);
    assert.equal((await read(suite.t.live, 'fruit', '?q=%00')).status, 400);
    assert.equal((await read(suite.t.live, 'fruit', `?q=${encodeURIComponent('x'.repeat(201))}`)).status, 400);
  });

  it('pages with a cursor without gaps or repeats, pinned to its version while syncs commit', async () => {
    const items = Array.from({ length: 250 }, (_, i) => ({
      id: `c${i}`,
      value: `city-${String(i).padStart(3, '0')}`,
      label: `City ${i} v1`,
      sort_order: i % 7,
    }));
    await sync(suite.t.live, 'cities', { items });
    const p1 = await read(suite.t.live, 'cities');
    assert.equal(p1.body.data.items.length, 100);
    const v1 = p1.body.data.version;
    // A sync between pages: relabels, reorders, archives half, adds new items.
    const changed = items
      .slice(0, 125)
      .map((it, i) => ({ ...it, label: it.label.replace('v1', 'v2'), sort_order: -i }));
    const s = await sync(suite.t.live, 'cities', {
      mode: 'replace',
      items: [...changed, { value: 'aaa-new', label: 'New', sort_order: -1000 }],
    });
    assert.equal(s.body.data.archived, 125);
    let cursor = p1.body.data.next_cursor;
    const seen = [...p1.body.data.items];
    while (cursor) {
      const p = await read(suite.t.live, 'cities', `?cursor=${encodeURIComponent(cursor)}`);
      assert.equal(p.body.data.version, v1, 'a cursor keeps reading the version paging started on');
      seen.push(...p.body.data.items);
      cursor = p.body.data.next_cursor;
    }
    assert.equal(seen.length, 250);
    assert.equal(new Set(seen.map((i) => i.value)).size, 250, 'no repeats');
    assert.ok(
      seen.every((i) => i.label.endsWith('v1')),
      'only the old version',
    );
    const expected = [...items]
      .sort((a, b) => a.sort_order - b.sort_order || (a.value < b.value ? -1 : 1))
      .map((i) => i.value);
    assert.deepEqual(
      seen.map((i) => i.value),
      expected,
      'sort_order then value',
    );
    // Searching from that cursor still reads the old version (not in the current-rows search index).
    const after = p1.body.data.items[99];
    const hay = (i: { value: string; label: string }) => `${i.value} ${i.label}`.toLowerCase();
    const older = await read(
      suite.t.live,
      'cities',
      `?q=${encodeURIComponent('CITY 12')}&limit=500&cursor=${encodeURIComponent(p1.body.data.next_cursor)}`,
    );
    assert.equal(older.body.data.version, v1);
    assert.deepEqual(
      older.body.data.items.map((i: any) => i.value),
      expected
        .filter((v) => expected.indexOf(v) > expected.indexOf(after.value))
        .filter(
          (v) =>
            hay(items.find((i) => i.value === v)!).includes('city') &&
            hay(items.find((i) => i.value === v)!).includes('12'),
        ),
    );
    assert.ok(older.body.data.items.length > 0);
    // A fresh read sees the new version.
    const fresh = await readAll(suite.t.live, 'cities', '', 37);
    assert.equal(fresh.items.length, 126);
    assert.deepEqual([...fresh.versions], [s.body.data.version]);
    assert.equal(fresh.items[0].value, 'aaa-new');
  });

  it('a concurrent read sees the old version or the new one, never a mix', async () => {
    const k = await createTenant(suite.c);
    const gen = (v: number) =>
      Array.from({ length: 600 }, (_, i) => ({
        value: `item-${i}`,
        label: `gen ${v}`,
        sort_order: (i * 7919 + v * 13) % 600,
      }));
    await sync(k.live, 'atomic', { items: gen(0) });
    const syncs = (async () => {
      for (let v = 1; v <= 6; v++) {
        const r = await sync(v % 2 ? k.live : k.sandbox, 'atomic', { mode: 'replace', items: gen(v) });
        assert.equal(r.status, 200);
      }
    })();
    const reads = Array.from({ length: 4 }, async () => {
      let n = 0;
      for (let i = 0; i < 6; i++) {
        const all = await readAll(k.live, 'atomic', '', 500);
        assert.equal(all.items.length, 600);
        assert.equal(all.versions.size, 1);
        const labels = new Set(all.items.map((x) => x.label));
        assert.equal(labels.size, 1, `mixed versions: ${[...labels].join(', ')}`);
        assert.equal(new Set(all.items.map((x) => x.value)).size, 600);
        n++;
      }
      return n;
    });
    await Promise.all([syncs, ...reads]);
  });

  it('searches value and label ignoring accents and case, with paging', async () => {
    await sync(suite.t.live, 'places', {
      items: [
        { value: 'sp', label: 'São Paulo' },
        { value: 'rj', label: 'Rio de Janeiro' },
        { value: 'creme', label: 'Crème brûlée' },
        { value: 'zurich', label: 'Zürich' },
        { value: 'PAULO-ALT', label: 'Other' },
        { value: 'x_y', label: '100% pure' },
      ],
    });
    const values = async (q: string) =>
      (await read(suite.t.live, 'places', `?q=${encodeURIComponent(q)}`)).body.data.items.map((i: any) => i.value);
    assert.deepEqual(await values('creme'), ['creme']);
    assert.deepEqual(await values('CRÈME Brulee'), ['creme']);
    assert.deepEqual(await values('sao paulo'), ['sp']);
    assert.deepEqual(await values('paulo'), ['PAULO-ALT', 'sp']);
    assert.deepEqual(await values('zurich'), ['zurich']);
    assert.deepEqual(await values('rio janeiro'), ['rj'], 'every word must occur');
    assert.deepEqual(await values('100%'), ['x_y'], 'LIKE wildcards are literal');
    assert.deepEqual(await values('_'), ['x_y']);
    assert.deepEqual(await values('lisbon'), []);
    const paged = await readAll(suite.t.live, 'places', '?q=E', 1);
    assert.deepEqual(paged.items.map((i) => i.value).sort(), ['PAULO-ALT', 'creme', 'rj', 'x_y'].sort());
    assert.equal(paged.pages, 4);
    // Archived items are not found.
    await sync(suite.t.live, 'places', { mode: 'replace', items: [{ value: 'rj', label: 'Rio de Janeiro' }] });
    assert.deepEqual(await values('sao paulo'), []);
  });

  it('sets over 5,000 items: several merges then a final replace (12,000 items)', async () => {
    const k = await createTenant(suite.c);
    const mk = (from: number, to: number, tag: string) =>
      Array.from({ length: to - from }, (_, i) => ({
        id: `e${from + i}`,
        value: `opt-${from + i}`,
        label: `Option ${from + i} ${tag}`,
      }));
    // Initial load: 12,000 items over three merges.
    for (const [a, b] of [
      [0, 5000],
      [5000, 10000],
      [10000, 12000],
    ] as const) {
      const r = await sync(k.live, 'big', { items: mk(a, b, 'a') });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.created, b - a);
    }
    // The next full list drops opt-0..999 and adds opt-12000..12999, relabelling everything.
    const first = await sync(k.live, 'big', { items: mk(1000, 6000, 'b') });
    assert.deepEqual([first.body.data.created, first.body.data.updated], [0, 5000]);
    const second = await sync(k.live, 'big', { items: mk(6000, 11000, 'b') });
    const last = await sync(k.live, 'big', {
      mode: 'replace',
      since_version: first.body.data.version,
      items: mk(11000, 13000, 'b'),
    });
    assert.equal(second.status, 200);
    assert.equal(last.status, 200, last.text);
    assert.deepEqual(
      [last.body.data.created, last.body.data.updated, last.body.data.archived, last.body.data.item_count],
      [1000, 1000, 1000, 12000],
    );
    const all = await readAll(k.live, 'big', '', 500);
    assert.equal(all.items.length, 12000);
    assert.equal(new Set(all.items.map((i) => i.value)).size, 12000);
    assert.ok(all.items.every((i) => i.label.endsWith(' b')));
    assert.ok(!all.items.some((i) => i.value === 'opt-999'));
    // Search on the large set: a broad query (walks the order index) and a narrow one (trigram index).
    const live = Array.from({ length: 12000 }, (_, i) => i + 1000);
    for (const [q, digits] of [
      ['OPTION 1', '1'],
      ['option 1234', '1234'],
    ] as const) {
      const found = await readAll(k.live, 'big', `?q=${encodeURIComponent(q)}`, 500);
      const expected = live
        .filter((n) => String(n).includes(digits))
        .map((n) => `opt-${n}`)
        .sort();
      assert.deepEqual(found.items.map((i) => i.value).sort(), expected, q);
      assert.equal(new Set(found.items.map((i) => i.value)).size, expected.length);
    }
    // Without since_version a replace keeps only what it sends.
    const plain = await sync(k.sandbox, 'big', { mode: 'replace', items: mk(0, 10, 'c') });
    assert.deepEqual([plain.body.data.updated, plain.body.data.archived, plain.body.data.item_count], [10, 12000, 10]);
  });
});

describe('option set activity and service contract', () => {
  it('records an activity entry per sync', async () => {
    const { rows } = await suite.server.db.query(
      `SELECT count(*)::int AS n FROM activity WHERE app_id = $1 AND entity_type = 'option_set' AND entity_id = 'fruit'`,
      [suite.t.appId],
    );
    assert.equal(rows[0].n, 3);
  });
});

describe('option set service contract for config bundles', () => {
  it('firstPages returns the GET first page per existing set; onSetChanged runs after the commit', async () => {
    const { createOptionSetService } = await import('../src/modules/option-sets/service.js');
    const { createOptionSetStore } = await import('../src/modules/option-sets/store.js');
    const { createActivityStore } = await import('../src/modules/activity/store.js');
    const scope = { tenantId: suite.t.orgId, appId: suite.t.appId };
    const seen: { setId: string; version: number }[] = [];
    const svc = createOptionSetService({
      db: suite.server.db,
      store: createOptionSetStore(suite.server.db),
      activity: createActivityStore(suite.server.db),
      onSetChanged: async (s, setId) => {
        // Runs after the commit: another connection already sees the new version.
        const r = await read(suite.t.live, setId);
        seen.push({ setId, version: r.body.data.version });
        assert.deepEqual(s, scope);
        throw new Error('a failing hook does not fail the committed sync');
      },
    });
    const res = await svc.sync(
      scope,
      'hooked',
      { mode: 'merge', items: Array.from({ length: 120 }, (_, i) => ({ value: `h${i}`, label: `H ${i}` })) },
      { keyId: suite.t.live.id, environment: 'production' },
    );
    assert.deepEqual(seen, [{ setId: 'hooked', version: res.version }]);
    const pages = await svc.firstPages(scope, ['hooked', 'fruit', 'missing']);
    assert.deepEqual(Object.keys(pages).sort(), ['fruit', 'hooked']);
    const viaHttp = (await read(suite.t.live, 'hooked')).body.data;
    assert.deepEqual(pages.hooked, {
      version: viaHttp.version,
      items: viaHttp.items,
      next_cursor: viaHttp.next_cursor,
    });
    assert.equal(pages.hooked!.items.length, 100);
    assert.ok(pages.hooked!.next_cursor);
  });
});
