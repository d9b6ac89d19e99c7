import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createClient,
  memoryStorage,
  type Bundle,
  type ClientOptions,
  type SdkError,
  type Storage,
} from '../packages/sdk/src/index.js';
import { startFaultProxy, type FaultProxy } from './helpers/fault-proxy.js';
import { useTenantApp } from './helpers/suite.js';

// The SDK's config stream against the real service, through the fault proxy (which relays event
// streams as they come and can cut them). The poll interval is an hour unless a test says otherwise,
// so an update within seconds can only have come through the stream.
const suite = useTenantApp({ CONFIG_STREAM_RETRY_MS: '100', CONFIG_STREAM_RETRY_JITTER_MS: '100' });
let proxy: FaultProxy;

const STREAM = '/api/v1/sdk/config-stream';
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
const bundled: Bundle = { bundle_version: 0, content: { remote_config: {}, feature_flags: {} } };

function sdk(storage: Storage, over: Partial<ClientOptions> = {}) {
  const errors: SdkError[] = [];
  const client = createClient({
    apiKey: suite.t.live.public_key,
    baseUrl: proxy.url,
    storage,
    device,
    bundledConfig: bundled,
    pollIntervalMs: 3600_000,
    lifecycle: false,
    onError: (e) => errors.push(e),
    timing: { requestTimeoutMs: 2000 },
    ...over,
  });
  return { client, errors };
}

async function until(cond: () => boolean | Promise<boolean>, ms = 5000, what = 'condition') {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let n = 0;
/** Publishes a new bundle (a remote-config save generates one); returns the value set. */
async function publish(): Promise<string> {
  const value = `v${++n}`;
  const r = await suite.c.put('/api/v1/remote-config', { values: { greeting: value } }, suite.t.console);
  assert.ok(r.status < 300, r.text);
  return value;
}

const streamRequests = () => proxy.to(STREAM);
const greeting = (c: ReturnType<typeof sdk>['client']) => c.getRemoteConfig<string>('greeting', '');

describe('sdk config stream', () => {
  before(async () => {
    proxy = await startFaultProxy(suite.server.url);
  });
  after(() => proxy.close());

  it('a publish reaches the client within seconds, without waiting for the poll', async () => {
    const { client } = sdk(memoryStorage());
    await client.start();
    await until(() => proxy.streams.size === 1, 5000, 'stream open');
    const value = await publish();
    const t0 = Date.now();
    await until(() => greeting(client) === value, 2000, 'bundle updated');
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(proxy.to('/config-bundle/version').length > 0, true, 'the change notice led to a version check');
    await client.shutdown();
    await until(() => proxy.streams.size === 0, 2000, 'stream closed on shutdown');
  });

  it('a dropped stream reconnects with Last-Event-ID and gets the change made meanwhile; a cold start resumes too', async () => {
    const storage = memoryStorage();
    const { client } = sdk(storage);
    await client.start();
    await until(
      async () => proxy.streams.size === 1 && !!(await storage.getItem('msb.stream')),
      5000,
      'stream open with an id',
    );
    const idBefore = (await storage.getItem('msb.stream'))!;
    const from = streamRequests().length;

    proxy.decide = (s) => (s.path.startsWith(STREAM) ? { kind: 'reset' } : undefined); // the network is gone
    proxy.dropStreams();
    const value = await publish();
    await until(() => streamRequests().length > from, 5000, 'a reconnect attempt');
    assert.notEqual(greeting(client), value, 'not received while disconnected');
    proxy.decide = () => undefined;

    await until(() => greeting(client) === value, 5000, 'the missed change arrives after the reconnect');
    assert.equal(streamRequests()[from]!.headers['last-event-id'], idBefore, 'the reconnect resumes from the last id');
    await until(
      async () => Number(await storage.getItem('msb.stream')) > Number(idBefore),
      5000,
      'resume point moved past the change',
    );
    await client.shutdown();
    await until(() => proxy.streams.size === 0);

    // A cold start on the same storage resumes from the stored id.
    const lastId = (await storage.getItem('msb.stream'))!;
    const again = sdk(storage).client;
    const before2 = streamRequests().length;
    await again.start();
    await until(() => proxy.streams.size === 1);
    assert.equal(streamRequests()[before2]!.headers['last-event-id'], lastId);
    await again.shutdown();
    await until(() => proxy.streams.size === 0);
  });

  it('background closes the stream; foreground reopens it, resuming', async () => {
    const storage = memoryStorage();
    const { client } = sdk(storage);
    await client.start();
    await until(() => proxy.streams.size === 1, 5000, 'stream open');
    await client.setForeground(false);
    await until(() => proxy.streams.size === 0, 2000, 'stream closed in the background');
    const from = streamRequests().length;
    const value = await publish();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(streamRequests().length, from, 'no reconnect while in the background');
    assert.notEqual(greeting(client), value);

    await client.setForeground(true);
    assert.equal(greeting(client), value, 'the foreground refresh brings the bundle');
    await until(() => proxy.streams.size === 1, 5000, 'stream reopened');
    assert.ok(streamRequests()[from]!.headers['last-event-id'], 'reopened with Last-Event-ID');
    await client.shutdown();
    await until(() => proxy.streams.size === 0);
  });

  it('a stream route answering 503: the client keeps polling and still gets the update', async () => {
    proxy.decide = (s) =>
      s.path.startsWith(STREAM)
        ? { kind: 'respond', status: 503, headers: { 'retry-after': '1' }, body: { status: 503 } }
        : undefined;
    const { client } = sdk(memoryStorage(), { pollIntervalMs: 200 });
    await client.start();
    const value = await publish();
    await until(() => greeting(client) === value, 5000, 'update by polling');
    await until(() => streamRequests().filter((s) => s.status === 503).length >= 2, 5000, 'the stream is retried');
    const refused = streamRequests().filter((s) => s.status === 503);
    const gap = refused.at(-1)!.at - refused.at(-2)!.at;
    assert.ok(gap >= 950, `Retry-After respected between attempts (${gap} ms)`);
    assert.equal(proxy.streams.size, 0);
    await client.shutdown();
    proxy.decide = () => undefined;
  });

  it('a stream silent past the idle limit is closed and reopened', async () => {
    proxy.decide = (s) => (s.path.startsWith(STREAM) ? { kind: 'hang' } : undefined); // no byte ever
    const from = streamRequests().length;
    const { client } = sdk(memoryStorage(), { timing: { requestTimeoutMs: 2000, streamIdleMs: 300 } });
    await client.start();
    await until(() => streamRequests().length - from >= 3, 5000, 'reconnects after each silence');
    const tries = streamRequests().slice(from);
    assert.ok(tries[1]!.at - tries[0]!.at >= 290, 'waited the idle limit first');
    await client.shutdown();
    proxy.decide = () => undefined;
  });

  it('a 401 stops streaming for good; polling goes on', async () => {
    proxy.decide = (s) =>
      s.path.startsWith(STREAM) ? { kind: 'respond', status: 401, body: { status: 401 } } : undefined;
    const { client, errors } = sdk(memoryStorage(), { pollIntervalMs: 200 });
    const from = streamRequests().length;
    await client.start();
    await until(() => errors.some((e) => e.message.includes('401')), 3000, '401 reported');
    const value = await publish();
    await until(() => greeting(client) === value, 5000, 'update by polling');
    assert.equal(streamRequests().length - from, 1, 'one stream request, never retried');
    await client.shutdown();
    proxy.decide = () => undefined;
  });
});
