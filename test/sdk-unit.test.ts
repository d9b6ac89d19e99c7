import assert from 'node:assert/strict';
import murmur from 'murmurhash3js';
import { describe, it, mock } from 'node:test';
import { createClient, localStorageAdapter, memoryStorage, type SdkError } from '../packages/sdk/src/index.js';
import type { FetchLike } from '../packages/sdk/src/http.js';
import { bucketOf, murmur3 } from '../packages/sdk/src/murmur.js';
import { EventQueue } from '../packages/sdk/src/queue.js';
import { backoffMs } from '../packages/sdk/src/stream.js';
import { matchesRules, validateRules, type Rule } from '../packages/sdk/src/rules.js';
import { keepBySampling } from '../src/modules/ingest/sampling.js';

// The vectors published in packages/sdk/README.md.
const HASHES: [string, number][] = [
  ['', 0],
  ['hello', 613153351],
  ['The quick brown fox jumps over the lazy dog', 776992547],
  ['héllo', 3164577896],
  ['日本', 3302619458],
  ['😀', 3199479546],
];
const BUCKETS: [string, string, number][] = [
  ['user-1', 'exp-a', 4340],
  ['42', 'paywall_test', 149],
  ['00000000-0000-4000-8000-000000000000', 'checkout_v2', 3670],
  ['Zoë', 'exp-ü', 1797],
];

describe('sdk: bucketing', () => {
  it('MurmurHash3 x86 32, seed 0, over UTF-8: the published vectors', () => {
    for (const [s, h] of HASHES) assert.equal(murmur3(s), h, JSON.stringify(s));
    for (const [u, e, b] of BUCKETS) assert.equal(bucketOf(u, e), b, `${u}:${e}`);
  });

  it('the service buckets the same way (sampling hashes anon ids, which are ASCII uuids)', () => {
    // murmurhash3js hashes the low byte of each UTF-16 unit: equal to UTF-8 for ASCII only.
    for (const [s, h] of HASHES.slice(0, 3)) assert.equal(murmur.x86.hash32(s), h);
    const anon = '00000000-0000-4000-8000-000000000000';
    assert.equal(murmur.x86.hash32(anon), murmur3(anon));
    for (const rate of [0.1, 0.5, 0.9]) {
      for (let i = 0; i < 50; i++) {
        const id = `${i.toString(16).padStart(8, '0')}-1111-4111-8111-111111111111`;
        assert.equal(keepBySampling(id, 'app_open', rate), murmur3(id) % 10_000 < rate * 10_000);
      }
    }
  });
});

describe('sdk: rule language', () => {
  const traits: Record<string, unknown> = { plan: 'pro', age: 31, tags: ['beta', 'vip'], country: 'FR' };
  const device: Record<string, unknown> = { country: 'US', app_version: '3.10.2', platform: 'ios' };
  const lookup = (a: string) =>
    a.startsWith('traits.')
      ? traits[a.slice(7)]
      : a.startsWith('device.')
        ? device[a.slice(7)]
        : a in traits
          ? traits[a]
          : device[a];
  const cases: [Rule, boolean][] = [
    [{ attribute: 'traits.plan', op: 'eq', value: 'pro' }, true],
    [{ attribute: 'plan', op: 'neq', value: 'pro' }, false],
    [{ attribute: 'country', op: 'eq', value: 'FR' }, true], // a bare name: traits first
    [{ attribute: 'device.country', op: 'in', values: ['US', 'CA'] }, true],
    [{ attribute: 'device.country', op: 'not_in', values: ['US'] }, false],
    [{ attribute: 'tags', op: 'contains', value: 'vip' }, true],
    [{ attribute: 'plan', op: 'contains', value: 'r' }, true],
    [{ attribute: 'age', op: 'gt', value: 30 }, true],
    [{ attribute: 'age', op: 'lt', value: 30 }, false],
    [{ attribute: 'app_version', op: 'semver_gte', value: '3.9.0' }, true], // numeric, not text, compare
    [{ attribute: 'app_version', op: 'semver_lt', value: '3.10' }, false],
    [{ attribute: 'missing', op: 'neq', value: 'x' }, false], // a missing attribute matches nothing
    [{ attribute: 'missing', op: 'not_in', values: ['x'] }, false],
    [{ attribute: 'plan', op: 'gt', value: 1 }, false],
  ];
  for (const [rule, want] of cases) {
    it(`${rule.attribute} ${rule.op} ${JSON.stringify(rule.value ?? rule.values)} -> ${want}`, () => {
      assert.deepEqual(validateRules([rule]), []);
      assert.equal(matchesRules([rule], lookup), want);
    });
  }

  it('all rules must match; no rules targets everyone', () => {
    assert.equal(matchesRules([cases[0][0], cases[1][0]], lookup), false);
    assert.equal(matchesRules([cases[0][0], cases[3][0]], lookup), true);
    assert.equal(matchesRules([], lookup), true);
  });

  it('validation names the rule path of each problem', () => {
    assert.deepEqual(
      validateRules([
        { attribute: 'a', op: 'like', value: 'x' },
        { attribute: '', op: 'eq', value: 1 },
        { attribute: 'a', op: 'in', value: 'x' },
        { attribute: 'a', op: 'gt', value: '3' },
        { attribute: 'a', op: 'semver_lt', value: 'v1' },
        7,
      ]).map((p) => p.path),
      ['/0/op', '/1/attribute', '/2/values', '/3/value', '/4/value', '/5'],
    );
    assert.equal(validateRules({}).length, 1);
  });
});

describe('sdk: queue', () => {
  // Fixed-width ids and sequence numbers: every event has the same size.
  const ev = (i: number, pad = '') => ({
    event_id: `id-${i + 100}`,
    context: { client_seq: i + 100 },
    properties: { pad },
  });

  it('writes in segments: a push rewrites one segment, an acknowledgment drops whole ones, a reload sees the same queue', async () => {
    const storage = memoryStorage();
    const writes: [string, number][] = [];
    const spy = {
      ...storage,
      setItem: async (k: string, v: string) => (writes.push([k, v.length]), storage.setItem(k, v)),
    };
    const q = await EventQueue.load(spy, 'p.', 1e9);
    for (let i = 0; i < 50; i++) await q.push(ev(i));
    assert.deepEqual([...storage.data.keys()].sort(), ['p.q.0', 'p.q.1', 'p.q.2']);
    assert.equal(writes.length, 50, 'one write per event, no meta write');
    assert.ok(
      Math.max(...writes.map((w) => w[1])) <= 20 * (JSON.stringify(ev(0)).length + 1) + 1,
      'never more than one segment written',
    );
    await q.remove(q.peek(25).map((e) => e.id));
    assert.equal(storage.data.has('p.q.0'), false);
    assert.deepEqual(JSON.parse(storage.data.get('p.q.meta')!), { first: 1, dropped: 0 });
    const again = await EventQueue.load(storage, 'p.', 1e9);
    assert.equal(again.count, 25);
    assert.deepEqual(
      again.peek(100).map((e) => e.id),
      q.peek(100).map((e) => e.id),
    );
    assert.equal(again.lastSeq(), 149);
    await again.remove(again.peek(100).map((e) => e.id));
    await again.push(ev(50));
    assert.equal((await EventQueue.load(storage, 'p.', 1e9)).peek(5)[0].id, 'id-150');
  });

  it('is capped by bytes: drops the oldest, counts them until an event carries the count', async () => {
    const storage = memoryStorage();
    const one = JSON.stringify(ev(0, 'x'.repeat(100))).length;
    const q = await EventQueue.load(storage, '', one * 10);
    for (let i = 0; i < 10; i++) assert.equal(await q.push(ev(i, 'x'.repeat(100))), 0);
    assert.equal(await q.push(ev(10, 'x'.repeat(100))), 1);
    assert.equal(await q.push(ev(11, 'x'.repeat(100))), 1);
    assert.equal(q.peek(1)[0].id, 'id-102');
    assert.ok(q.bytes <= one * 10);
    assert.equal((await EventQueue.load(storage, '', one * 10)).dropped, 2, 'the count survives a restart');
    await q.push(ev(12, 'x'.repeat(100)), 2);
    assert.equal(q.dropped, 1, 'two reported, one more dropped by this push');
  });

  it('the localStorage adapter keeps the queue in a Web Storage object', async () => {
    const web = new Map<string, string>();
    const ls = {
      getItem: (k: string) => web.get(k) ?? null,
      setItem: (k: string, v: string) => void web.set(k, v),
      removeItem: (k: string) => void web.delete(k),
    };
    const q = await EventQueue.load(localStorageAdapter(ls), 'w.', 1e9);
    await q.push(ev(1));
    assert.equal(JSON.parse(web.get('w.q.0')!)[0].event_id, 'id-101');
    assert.equal((await EventQueue.load(localStorageAdapter(ls), 'w.', 1e9)).count, 1);
  });

  it('client_seq: increasing in queue order under concurrent tracks, below the ceiling stored first', async () => {
    const storage = memoryStorage();
    const c = createClient({
      apiKey: 'k',
      baseUrl: 'http://127.0.0.1:9',
      storage,
      device,
      fetch: never,
      batchSize: 1e9,
    });
    await Promise.all(Array.from({ length: 250 }, (_, i) => c.track('e', { i })));
    const seqs = [...storage.data.entries()]
      .filter(([k]) => /q\.\d+$/.test(k))
      .sort(([a], [b]) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
      .flatMap(([, v]) => JSON.parse(v).map((e: any) => e.context.client_seq));
    assert.deepEqual(
      seqs,
      Array.from({ length: 250 }, (_, i) => i),
    );
    assert.ok(JSON.parse(storage.data.get('msb.state')!).seqCeil > 249);
    const again = createClient({
      apiKey: 'k',
      baseUrl: 'http://127.0.0.1:9',
      storage,
      device,
      fetch: never,
      batchSize: 1e9,
    });
    await again.track('after_restart');
    const all = [...storage.data.entries()].filter(([k]) => /q\.\d+$/.test(k)).flatMap(([, v]) => JSON.parse(v));
    assert.ok(all.find((e: any) => e.event_name === 'after_restart').context.client_seq > 249);
  });

  it('the client reports drops through onError and on the next event', async () => {
    const errors: SdkError[] = [];
    const storage = memoryStorage();
    const c = createClient({
      apiKey: 'k',
      baseUrl: 'http://127.0.0.1:9',
      storage,
      device,
      maxQueueBytes: 3000,
      onError: (e) => errors.push(e),
      fetch: never,
    });
    for (let i = 0; i < 12; i++) await c.track('e', { pad: 'x'.repeat(200) });
    const overflow = errors.filter((e) => e.code === 'queue_overflow');
    assert.ok(overflow.length > 0);
    const texts = [...storage.data.entries()].filter(([k]) => /q\.\d+$/.test(k)).flatMap(([, v]) => JSON.parse(v));
    assert.ok(texts.some((e: any) => e.properties.sdk_dropped_events >= 1));
  });
});

const device = { platform: 'android', os: '14', appVersion: '1.0.0', locale: 'de_DE', country: 'DE' } as const;
const never: FetchLike = () => new Promise(() => {});

function fakeService(answers: (number | [number, Record<string, string>])[]) {
  const calls: { at: number; ids: string[] }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetchFn: FetchLike = async (url, init) => {
    const ids = JSON.parse(init.body ?? '{"batch":[]}').batch.map((e: { event_id: string }) => e.event_id);
    calls.push({ at: Date.now(), ids });
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((r) => setImmediate(r));
    inFlight--;
    const a = answers.shift() ?? 202;
    const [status, headers] = Array.isArray(a) ? a : [a, {}];
    const body =
      status === 202
        ? { accepted: ids.length, rejected: 0, sampled: 0, consent_declined: 0, suppressed: 0 }
        : { code: 'x' };
    return { status, headers: new Headers(headers), text: async () => JSON.stringify(body) };
  };
  return { calls, fetchFn, maxInFlight: () => maxInFlight };
}

describe('sdk: retry timing (fake clock)', () => {
  async function run(answers: (number | [number, Record<string, string>])[], events: number, random: number) {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 });
    try {
      const svc = fakeService(answers);
      const c = createClient({
        apiKey: 'k',
        baseUrl: 'http://sdk.test',
        storage: memoryStorage(),
        device,
        fetch: svc.fetchFn,
        timing: { random: () => random },
      });
      for (let i = 0; i < events; i++) await c.track('e');
      let done = false;
      void c.flush().then(() => (done = true));
      for (let i = 0; !done && i < 10_000; i++) {
        for (let j = 0; j < 5; j++) await new Promise((r) => setImmediate(r));
        mock.timers.tick(10);
      }
      assert.ok(done, 'the flush resolved');
      return { gaps: svc.calls.slice(1).map((c, i) => c.at - svc.calls[i].at), left: c.queuedCount(), svc };
    } finally {
      mock.timers.reset();
    }
  }
  const near = (got: number[], want: number[]) => {
    assert.equal(got.length, want.length, `gaps ${got}`);
    got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= 10, `gap ${i}: ${g} vs ${want[i]}`));
  };

  it('at most 3 retries per cycle at 1, 2, 4 s with +25% / -25% jitter; the batch stays', async () => {
    const hi = await run([503, 503, 503, 503, 503], 3, 1);
    near(hi.gaps, [1250, 2500, 5000]);
    assert.equal(hi.left, 3);
    const lo = await run([500, 500, 500, 500], 3, 0);
    near(lo.gaps, [750, 1500, 3000]);
  });

  it('Retry-After replaces the computed delay, without jitter', async () => {
    const r = await run([[429, { 'retry-after': '7' }], 202], 3, 1);
    near(r.gaps, [7000]);
    assert.equal(r.left, 0);
  });

  it('the retry counter resets after a success', async () => {
    const r = await run([503, 202, 503, 503, 503, 503], 40, 0.5);
    near(r.gaps, [1000, 0, 1000, 2000, 4000]);
    assert.equal(r.left, 20, 'the second batch waits for the next cycle');
  });
});

describe('sdk: one flush in flight', () => {
  it('parallel flush calls never send an event twice', async () => {
    const svc = fakeService([]);
    const c = createClient({
      apiKey: 'k',
      baseUrl: 'http://sdk.test',
      storage: memoryStorage(),
      device,
      fetch: svc.fetchFn,
    });
    for (let i = 0; i < 19; i++) await c.track('e');
    await Promise.all([c.flush(), c.flush(), c.track('e'), c.flush(), c.flush()]);
    await c.flush();
    assert.equal(svc.maxInFlight(), 1);
    const ids = svc.calls.flatMap((x) => x.ids);
    assert.equal(ids.length, 20);
    assert.equal(new Set(ids).size, 20);
    assert.equal(c.queuedCount(), 0);
  });

  it('after a cycle gives up, tracking does not start cycles back to back (no hot retry loop)', async () => {
    const svc = fakeService(Array(100).fill(503));
    const c = createClient({
      apiKey: 'k',
      baseUrl: 'http://sdk.test',
      storage: memoryStorage(),
      device,
      fetch: svc.fetchFn,
      timing: { retryDelaysMs: [1, 1, 1] },
    });
    for (let i = 0; i < 20; i++) await c.track('e'); // the 20th starts a cycle
    await c.flush(); // waits for it, then one more cycle
    const calls = svc.calls.length;
    assert.equal(calls, 8);
    for (let i = 0; i < 60; i++) await c.track('e');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(svc.calls.length, calls, 'the next try waits for the flush timer or an explicit flush()');
    assert.equal(c.queuedCount(), 80);
  });
});

describe('sdk: config stream backoff', () => {
  it('full jitter over min(cap, base x 2^attempt)', () => {
    assert.equal(
      backoffMs(0, 1000, () => 0),
      0,
    );
    assert.equal(
      backoffMs(0, 1000, () => 0.5),
      500,
    );
    assert.equal(
      backoffMs(3, 1000, () => 0.999),
      7992,
    );
    assert.equal(
      backoffMs(30, 1000, () => 0.5),
      150_000,
      'capped at 5 minutes',
    );
    assert.equal(
      backoffMs(2, 1000, () => 0.5, 3000),
      1500,
      'a custom cap',
    );
    for (let a = 0; a < 40; a++) assert.ok(backoffMs(a, 4817, Math.random) < 300_000);
  });
});
