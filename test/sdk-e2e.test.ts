import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  createClient,
  memoryStorage,
  type Bundle,
  type ClientOptions,
  type SdkError,
  type Storage,
} from '../packages/sdk/src/index.js';
import { fileStorage } from '../packages/sdk/src/node.js';
import { startFaultProxy, type FaultProxy, type Seen } from './helpers/fault-proxy.js';
import { useTenantApp } from './helpers/suite.js';

// The SDK against the real service, through a proxy that injects the faults a phone meets.
// Every scenario ends with the export API: each tracked event stored exactly once.
const suite = useTenantApp({ WEBHOOK_POLL_MS: '60000' });
let proxy: FaultProxy;
let rootAuth: Record<string, string>;

// Inside a describe, so it runs after the suite's own `before` started the server.
describe('sdk e2e', () => {
  before(async () => {
    proxy = await startFaultProxy(suite.server.url);
    const root = await suite.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'long enough pw' });
    rootAuth = { authorization: `Bearer ${root.body.token}` };
  });
  after(() => proxy.close());

  const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
  const bundled: Bundle = { bundle_version: 0, content: { remote_config: { greeting: 'bundled' }, feature_flags: {} } };

  function sdk(storage: Storage, over: Partial<ClientOptions> = {}) {
    const errors: SdkError[] = [];
    const client = createClient({
      apiKey: suite.t.live.public_key,
      baseUrl: proxy.url,
      storage,
      device,
      bundledConfig: bundled,
      onError: (e) => errors.push(e),
      timing: { retryDelaysMs: [20, 40, 80], requestTimeoutMs: 2000 },
      stream: false, // delivery and polling alone here; test/sdk-stream.test.ts covers the config stream
      lifecycle: false, // exact event counts here; test/sdk-lifecycle.test.ts covers the automatic events
      ...over,
    });
    return { client, errors };
  }

  const isEvents = (s: Seen) => s.method === 'POST' && s.path === '/api/v1/ingest/events';
  const sentIds = (s: Seen) => (s.body.batch as { event_id: string }[]).map((e) => e.event_id);

  /** Every exported event of one device, by event_id. */
  async function exported(anonId: string): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const q = `start_date=${new Date(Date.now() - 3600_000).toISOString()}&end_date=${new Date(Date.now() + 3600_000).toISOString()}&limit=1000`;
    for (let offset = 0; ; offset += 1000) {
      const r = await suite.c.get(`/api/v1/sdk/events/export?${q}&offset=${offset}`, {
        'x-api-key': suite.t.live.public_key,
      });
      assert.equal(r.status, 200, r.text);
      for (const e of r.body.data)
        if (e.user.anon_id === anonId) counts.set(e.event_id, (counts.get(e.event_id) ?? 0) + 1);
      if (!r.body.meta.hasMore) return counts;
    }
  }

  async function assertStoredOnce(anonId: string, ids: string[]) {
    const counts = await exported(anonId);
    assert.deepEqual([...counts.keys()].sort(), [...ids].sort(), 'exactly the tracked events are stored');
    for (const [id, n] of counts) assert.equal(n, 1, `event ${id} stored once`);
  }

  /** Tracks `n` events and returns their ids (read back from the queue's storage through the proxy log later). */
  async function trackMany(client: ReturnType<typeof sdk>['client'], n: number, name = 'screen_view'): Promise<void> {
    for (let i = 0; i < n; i++) await client.track(name, { i });
  }

  /** The ids the proxy saw for one device. */
  const idsOf = (anonId: string) => {
    const ids = new Set<string>();
    for (const s of proxy.seen.filter(isEvents))
      for (const e of s.body.batch) if (e.user.anon_id === anonId) ids.add(e.event_id);
    return [...ids];
  };

  async function until(cond: () => boolean | Promise<boolean>, ms = 10_000) {
    const end = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  describe('sdk e2e: delivery under faults', () => {
    it('server down for a while: the batch stays queued through cycles, then goes once', async () => {
      const { client, errors } = sdk(memoryStorage());
      await client.start();
      proxy.decide = (s) => (isEvents(s) ? { kind: 'reset' } : undefined);
      await trackMany(client, 30); // the 20th event starts a cycle by itself
      await client.flush();
      const before = proxy.seen.filter(isEvents).length;
      await client.flush();
      assert.equal(client.queuedCount(), 30, 'nothing dropped while the server is down');
      assert.equal(
        proxy.seen.filter(isEvents).length - before,
        4,
        'a cycle: 1 try + 3 retries, then it waits for the next',
      );
      assert.ok(errors.some((e) => e.code === 'delivery_failed'));
      proxy.decide = () => undefined;
      await client.flush();
      assert.equal(client.queuedCount(), 0);
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
      assert.equal(idsOf(client.getAnonId()!).length, 30);
      await client.shutdown();
    });

    it('500s then recovery within one cycle; the retry counter resets after the success', async () => {
      const { client } = sdk(memoryStorage());
      await client.start();
      let fails = 2;
      proxy.decide = (s) =>
        isEvents(s) && fails-- > 0 ? { kind: 'respond', status: 500, body: { code: 'internal' } } : undefined;
      await trackMany(client, 45);
      await client.flush();
      assert.equal(client.queuedCount(), 0, 'delivered in the same flush after two 500s');
      proxy.decide = () => undefined;
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
      assert.equal(idsOf(client.getAnonId()!).length, 45);
    });

    it('429 with Retry-After: the header replaces the computed delay', async () => {
      const { client } = sdk(memoryStorage());
      await client.start();
      let first = true;
      proxy.decide = (s) => {
        if (!isEvents(s) || !first) return undefined;
        first = false;
        return { kind: 'respond', status: 429, headers: { 'retry-after': '1' }, body: { code: 'rate_limited' } };
      };
      await trackMany(client, 3);
      const from = proxy.seen.length;
      await client.flush();
      const tries = proxy.seen.slice(from).filter(isEvents);
      assert.equal(tries.length, 2);
      const gap = tries[1].at - tries[0].at;
      assert.ok(gap >= 950 && gap < 1500, `waited ${gap} ms (Retry-After: 1), not the 20 ms base delay`);
      proxy.decide = () => undefined;
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
    });

    it('an answer lost after the server committed: the resend is stored once', async () => {
      const { client } = sdk(memoryStorage());
      await client.start();
      let drop = true;
      proxy.decide = (s) => {
        if (!isEvents(s) || !drop) return undefined;
        drop = false;
        return { kind: 'drop-after-commit' };
      };
      await trackMany(client, 12);
      const from = proxy.seen.length;
      await client.flush();
      const tries = proxy.seen.slice(from).filter(isEvents);
      assert.equal(tries.length, 2);
      assert.equal(tries[0].status, 202, 'the first send was committed');
      assert.deepEqual(sentIds(tries[1]), sentIds(tries[0]), 'the same event_ids were sent again');
      proxy.decide = () => undefined;
      await assertStoredOnce(client.getAnonId()!, sentIds(tries[0]));
    });

    it('a client killed mid-flush and recreated on the same file storage resends once, client_seq goes on', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'sdk-kill-'));
      let killed = false;
      // After the kill the old instance never gets an answer again: it can no longer touch storage.
      const deadFetch: ClientOptions['fetch'] = (u, i) => (killed ? new Promise(() => {}) : fetch(u, i));
      const a = sdk(fileStorage(dir), { fetch: deadFetch }).client;
      await a.start();
      proxy.decide = (s) => (isEvents(s) ? { kind: 'hang-after-commit' } : undefined);
      const from = proxy.seen.length;
      await trackMany(a, 25);
      void a.flush();
      await until(() => proxy.seen.slice(from).some((s) => isEvents(s) && s.status === 202));
      killed = true;
      proxy.decide = () => undefined;

      const b = sdk(fileStorage(dir)).client;
      await b.start();
      assert.equal(b.getAnonId(), a.getAnonId(), 'the anon id survives the restart');
      assert.equal(b.queuedCount(), 25, 'nothing was removed without an acknowledgment');
      await b.track('after_restart');
      await b.flush();
      assert.equal(b.queuedCount(), 0);
      const anon = b.getAnonId()!;
      const sent = proxy.seen
        .slice(from)
        .filter(isEvents)
        .flatMap((s) => s.body.batch as any[]);
      const seqs = sent.filter((e) => e.user.anon_id === anon).map((e) => e.context.client_seq);
      const last = sent.find((e) => e.event_name === 'after_restart');
      assert.ok(
        last.context.client_seq > Math.max(...seqs.filter((s) => s !== last.context.client_seq)),
        'client_seq monotonic across the restart',
      );
      await assertStoredOnce(anon, idsOf(anon));
      assert.equal(idsOf(anon).length, 26);
    });

    it('a poison event refused with a whole-batch 400 is isolated and dropped; a 202 with errors drops only the rejected', async () => {
      const { client, errors } = sdk(memoryStorage());
      await client.start();
      proxy.decide = (s) =>
        isEvents(s) && s.body.batch.some((e: any) => e.event_name === 'poison_pill')
          ? { kind: 'respond', status: 400, body: { code: 'validation_failed', title: 'Validation failed' } }
          : undefined;
      await trackMany(client, 9);
      await client.track('poison_pill');
      await trackMany(client, 8);
      await client.track('too_big', { pad: 'x'.repeat(40_000) }); // over 32 KB: the service rejects it alone (202 + errors)
      await trackMany(client, 3);
      await client.flush();
      assert.equal(client.queuedCount(), 0, 'the queue is not stalled');
      const dropped = errors.find((e) => e.code === 'event_dropped');
      assert.ok(dropped, 'the poison event is reported');
      assert.ok(
        errors.some((e) => e.code === 'events_rejected'),
        'the rejected event is reported',
      );
      proxy.decide = () => undefined;
      const anon = client.getAnonId()!;
      const good = proxy.seen
        .filter(isEvents)
        .flatMap((s) => s.body.batch as any[])
        .filter((e) => e.user.anon_id === anon && e.event_name === 'screen_view')
        .map((e) => e.event_id);
      assert.equal(new Set(good).size, 20);
      await assertStoredOnce(anon, [...new Set(good)]);
    });
  });

  describe('sdk e2e: config, flags, safe mode', () => {
    it('a hung server: start() returns after the 3 s timeout with the bundled config, then the cache', async () => {
      const storage = memoryStorage();
      proxy.decide = (s) => (s.path.startsWith('/api/v1/sdk/') ? { kind: 'hang' } : undefined);
      const { client } = sdk(storage);
      const t0 = Date.now();
      await client.start();
      const took = Date.now() - t0;
      assert.ok(took >= 2900 && took < 4000, `start took ${took} ms`);
      assert.equal(client.getRemoteConfig('greeting', 'default'), 'bundled');
      await client.track('offline_start');
      proxy.decide = () => undefined;

      await suite.c.put('/api/v1/remote-config', { values: { greeting: 'remote' } }, suite.t.console);
      await client.foreground();
      assert.equal(client.getRemoteConfig('greeting', 'default'), 'remote', 'downloaded on foreground');
      await client.flush();
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));

      // Restarted with the service down: the cached bundle, not the bundled file.
      proxy.decide = (s) => (s.path.startsWith('/api/v1/sdk/') ? { kind: 'reset' } : undefined);
      const again = sdk(storage).client;
      await again.start();
      assert.equal(again.getRemoteConfig('greeting', 'default'), 'remote');
      proxy.decide = () => undefined;
    });

    it('polls the version endpoint with If-None-Match and downloads only a newer bundle', async () => {
      const { client } = sdk(memoryStorage(), { pollIntervalMs: 50 });
      await client.start();
      const from = proxy.seen.length;
      await until(() => proxy.seen.slice(from).filter((s) => s.path.endsWith('/config-bundle/version')).length >= 3);
      const polls = proxy.seen.slice(from).filter((s) => s.path.endsWith('/config-bundle/version'));
      assert.ok(polls[1].headers['if-none-match'], 'the poll sends the ETag it got');
      assert.equal(polls[1].status, 304);
      assert.equal(
        proxy.seen.slice(from).filter((s) => s.path === '/api/v1/sdk/config-bundle').length,
        0,
        'no download while unchanged',
      );
      await suite.c.put('/api/v1/remote-config', { values: { greeting: 'polled' } }, suite.t.console);
      await until(() => client.getRemoteConfig<string>('greeting', '') === 'polled');
      await client.shutdown();
    });

    it('flags: evaluated on the device from the bundle (rules over traits and device, rollout), validated when saved', async () => {
      const put = (key: string, body: unknown) => suite.c.put(`/api/v1/feature-flags/${key}`, body, suite.t.console);
      assert.equal(
        (
          await put('pro_us', {
            enabled: true,
            rules: [
              { attribute: 'traits.plan', op: 'eq', value: 'pro' },
              { attribute: 'country', op: 'in', values: ['US', 'CA'] },
            ],
          })
        ).status,
        200,
      );
      assert.equal(
        (
          await put('old_app', {
            enabled: true,
            rules: [{ attribute: 'app_version', op: 'semver_lt', value: '3.0.0' }],
          })
        ).status,
        200,
      );
      assert.equal((await put('off', { enabled: false })).status, 200);
      assert.equal((await put('nobody', { enabled: true, rollout_pct: 0 })).status, 200);

      const bad = await put('bad', {
        enabled: true,
        rules: [
          { attribute: 'country', op: 'eq', value: 'US' },
          { attribute: 'country', op: 'regex', value: '.*' },
        ],
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.code, 'validation_failed');
      assert.equal(bad.body.errors[0].path, '/body/rules/1/op');
      const malformed = await put('bad', { enabled: true, rules: [{ attribute: 'country', op: 'in', value: 'US' }] });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.errors[0].path, '/body/rules/0/values');

      const { client } = sdk(memoryStorage());
      await client.start();
      assert.equal(client.getFlag('pro_us', true), false, 'no plan trait yet');
      await client.identify('user-42', { plan: 'pro' });
      assert.equal(client.getFlag('pro_us', false), true);
      assert.equal(client.getFlag('old_app', true), false, 'app 3.1.0 is not < 3.0.0');
      assert.equal(client.getFlag('off', true), false, 'a disabled flag is false');
      assert.equal(client.getFlag('nobody', true), false, 'rollout 0%');
      assert.equal(client.getFlag('unknown', true), true, 'an unknown key gives the default');
      await client.track('after_identify');
      await client.flush();
      const ident = proxy.to('/ingest/identify').filter((s) => s.body.user_id === 'user-42');
      assert.equal(ident.length, 1);
      assert.equal(ident[0].status, 202);
      const ev = proxy.seen
        .filter(isEvents)
        .flatMap((s) => s.body.batch as any[])
        .find((e) => e.event_name === 'after_identify');
      assert.equal(ev.user.user_id, 'user-42');
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
    });

    it('setConsent: later events carry privacy.consent.analytics false; stored for audit only, once', async () => {
      const storage = memoryStorage();
      const { client } = sdk(storage);
      await client.start();
      client.setConsent({ analytics: false });
      await client.track('declined');
      await client.flush();
      const restarted = sdk(storage).client; // the choice is persisted
      await restarted.track('declined_after_restart');
      await restarted.flush();
      const sent = proxy.seen
        .filter(isEvents)
        .flatMap((x) => x.body.batch as any[])
        .filter((e) => e.user.anon_id === client.getAnonId());
      assert.deepEqual(
        sent.map((e) => e.privacy.consent.analytics),
        [false, false],
      );
      const rows = await suite.server.db.query('SELECT consent FROM events WHERE event_id = ANY($1::uuid[])', [
        sent.map((e) => e.event_id),
      ]);
      assert.deepEqual(
        rows.rows.map((r) => r.consent),
        [false, false],
      );
      assert.equal((await exported(client.getAnonId()!)).size, 0, 'not in the export');
    });

    it('getVariant: one persisted experiment_exposure per (experiment, user)', async () => {
      const storage = memoryStorage();
      const { client } = sdk(storage);
      await client.start();
      const v = client.getVariant('paywall_copy', ['a', 'b', 'c']);
      assert.equal(v, ['a', 'b', 'c'][Math.floor((client.bucket('paywall_copy') * 3) / 10_000)]);
      client.getVariant('paywall_copy', ['a', 'b', 'c']);
      await until(() => client.queuedCount() === 1);
      const again = sdk(storage).client;
      await again.start();
      assert.equal(again.getVariant('paywall_copy', ['a', 'b', 'c']), v);
      await again.flush();
      const exposures = proxy.seen
        .filter(isEvents)
        .flatMap((s) => s.body.batch as any[])
        .filter((e) => e.user.anon_id === client.getAnonId());
      assert.equal(exposures.length, 1);
      assert.equal(exposures[0].event_name, 'experiment_exposure');
      assert.deepEqual(exposures[0].context.experiment_exposures, [{ exp: 'paywall_copy', variant: v }]);
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
    });

    it('runtime_lock: safe mode keeps tracking but sends nothing, and resumes by itself when the lock is cleared', async () => {
      const lock = await suite.c.put(
        `/api/v1/admin/organizations/${suite.t.orgId}/runtime-lock`,
        { reason: 'billing_lapsed' },
        rootAuth,
      );
      assert.equal(lock.status, 200);
      const { client } = sdk(memoryStorage(), { timing: { retryDelaysMs: [20, 40, 80], lockRecheckMs: 100 } });
      await client.start();
      assert.equal(client.isLocked(), true);
      assert.equal(client.getRemoteConfig('greeting', 'default'), 'bundled', 'safe mode serves the bundled config');
      const from = proxy.seen.length;
      await trackMany(client, 25);
      await client.identify('locked-user');
      await client.flush();
      const sent = () => proxy.seen.slice(from).filter((s) => isEvents(s) || s.path.endsWith('/identify'));
      assert.equal(sent().length, 0, 'no events or identifies sent while locked');
      assert.equal(client.queuedCount(), 25);

      assert.equal(
        (await suite.c.del(`/api/v1/admin/organizations/${suite.t.orgId}/runtime-lock`, rootAuth)).status,
        204,
      );
      await until(() => !client.isLocked() && client.queuedCount() === 0);
      assert.equal(proxy.seen.slice(from).filter((s) => s.path.endsWith('/identify')).length, 1);
      await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
      assert.equal(idsOf(client.getAnonId()!).length, 25);
      await client.shutdown();
    });

    it('optionSet pages and searches an Option Set', async () => {
      const items = [
        { value: 'red', label: 'Rouge' },
        { value: 'green', label: 'Vert' },
        { value: 'blue', label: 'Bleu' },
      ];
      const pair = { 'x-api-key': suite.t.live.public_key, 'x-api-secret': suite.t.live.secret_key };
      assert.equal((await suite.c.post('/api/v1/sdk/option-sets/colors/sync', { items }, pair)).status, 200);
      const { client } = sdk(memoryStorage());
      const all = (await client.optionSet('colors')) as { items: { value: string }[]; next_cursor: string | null };
      assert.deepEqual(all.items.map((i) => i.value).sort(), ['blue', 'green', 'red']);
      assert.equal(all.next_cursor, null);
      const found = (await client.optionSet('colors', { q: 'verT' })) as { items: { value: string }[] };
      assert.deepEqual(
        found.items.map((i) => i.value),
        ['green'],
      );
      await assert.rejects(client.optionSet('nope'), /404/);
    });

    it("bootstrap's settings replace the options: batch size from the app's settings", async () => {
      const set = (batchSize: number) =>
        suite.c.patch('/api/v1/settings', { sdk_settings: { batchSize } }, suite.t.console);
      assert.equal((await set(5)).status, 200);
      try {
        const { client } = sdk(memoryStorage(), { batchSize: 1000 });
        await client.start();
        const from = proxy.seen.length;
        await trackMany(client, 5);
        await until(() => client.queuedCount() === 0);
        assert.equal(proxy.seen.slice(from).filter(isEvents)[0].body.batch.length, 5);
        await assertStoredOnce(client.getAnonId()!, idsOf(client.getAnonId()!));
        await client.shutdown();
      } finally {
        await set(20);
      }
    });
  });
});
