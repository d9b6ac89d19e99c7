import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { createClient, memoryStorage, type ClientOptions, type Storage } from '../packages/sdk/src/index.js';
import type { FetchLike } from '../packages/sdk/src/http.js';
import { createReactNativeClient, type AppStateLike } from '../packages/sdk/src/react-native.js';

// The lifecycle rules of issue 34 §1, each against the events the client actually uploads (a
// recording ingest endpoint; the same rules end to end: test/sdk-e2e.test.ts).
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
interface Sent {
  event_id: string;
  event_name: string;
  ts_ms: number;
  user: { anon_id: string };
  context: { session_id: string; client_seq: number };
  properties: Record<string, unknown>;
}

/** An ingest endpoint that records what it receives; `offline` makes every request fail. */
function recorder() {
  const sent: Sent[] = [];
  const rec = { sent, offline: false, fetchFn: (async () => undefined) as unknown as FetchLike };
  rec.fetchFn = async (url, init) => {
    if (rec.offline) throw new Error('offline');
    const ingest = new URL(url).pathname === '/api/v1/ingest/events';
    if (ingest) sent.push(...JSON.parse(init.body!).batch);
    const status = ingest ? 202 : 404;
    return { status, headers: new Headers(), text: async () => JSON.stringify({ code: 'x' }) };
  };
  return rec;
}
type Rec = ReturnType<typeof recorder>;
const names = (r: Rec) => r.sent.map((e) => e.event_name);
const named = (r: Rec, n: string) => r.sent.filter((e) => e.event_name === n);

function sdk(rec: Rec, storage: Storage = memoryStorage(), over: Partial<ClientOptions> = {}) {
  return createClient({
    apiKey: 'k',
    baseUrl: 'http://sdk.test',
    storage,
    device,
    fetch: rec.fetchFn,
    stream: false,
    timing: { retryDelaysMs: [1] },
    ...over,
  });
}

describe('sdk lifecycle', () => {
  it('launch: app_open (first_open on the first launch only, kept across reset) then session_start', async () => {
    const rec = recorder();
    const storage = memoryStorage();
    const c = sdk(rec, storage);
    await c.start();
    await c.flush();
    assert.deepEqual(names(rec), ['app_open', 'session_start']);
    const [open, start] = rec.sent;
    assert.equal(open.properties.first_open, true);
    assert.equal(open.context.session_id, start.context.session_id, 'app_open belongs to the new session');
    assert.ok(start.context.client_seq > open.context.client_seq);
    await c.reset();

    // Relaunch without shutdown (the process was killed): the open session ends 1 ms after its last event.
    const again = sdk(rec, storage);
    await again.start();
    await again.flush();
    assert.deepEqual(names(rec).slice(2), ['session_end', 'session_start', 'session_end', 'app_open', 'session_start']);
    const [end, restart, killed, open2, start2] = rec.sent.slice(2);
    assert.equal(end.context.session_id, start.context.session_id, 'reset ended the first session');
    assert.notEqual(end.user.anon_id, restart.user.anon_id, 'and started one for the new anonymous id');
    assert.equal(killed.context.session_id, restart.context.session_id);
    assert.equal(killed.ts_ms, restart.ts_ms + 1, 'the killed session ends 1 ms after its last event');
    assert.equal(open2.properties.first_open, false, 'not the first launch, also after reset()');
    assert.notEqual(start2.context.session_id, restart.context.session_id);
    assert.equal(named(rec, 'app_open').length, 2, 'one app_open per launch');
  });

  it('background: session_end (same session, duration) and the flush; foreground: session_start, no app_open', async () => {
    const rec = recorder();
    const c = sdk(rec);
    await c.start();
    await c.track('screen_view');
    const s1 = c.getSessionId();
    await c.setForeground(false);
    // The flush is part of going to the background: everything is uploaded when the call resolves.
    assert.equal(c.queuedCount(), 0, 'the background flush ran');
    assert.deepEqual(names(rec), ['app_open', 'session_start', 'screen_view', 'session_end']);
    const end = rec.sent[3];
    assert.equal(end.context.session_id, s1);
    assert.equal(end.properties.duration_ms, end.ts_ms - rec.sent[1].ts_ms);
    await c.setForeground(false);
    await c.setForeground(true);
    await c.setForeground(true);
    await c.flush();
    assert.deepEqual(names(rec).slice(4), ['session_start'], 'repeated values do nothing; no app_open');
    assert.notEqual(rec.sent[4].context.session_id, s1);
    await c.shutdown();
    assert.deepEqual(names(rec).slice(5), ['session_end', 'app_close'], 'termination, then the last flush');
    assert.equal(rec.sent[5].context.session_id, rec.sent[4].context.session_id);
  });

  it('each event carries the session current when it was tracked, not when it is sent', async () => {
    const rec = recorder();
    const c = sdk(rec);
    await c.start();
    const s1 = c.getSessionId();
    rec.offline = true; // nothing leaves until after the next session started
    const tracked = c.track('tapped');
    const hidden = c.setForeground(false);
    const shown = c.setForeground(true);
    await Promise.all([tracked, hidden, shown]);
    await c.track('after');
    rec.offline = false;
    await c.flush();
    const by = (n: string) => named(rec, n)[0].context.session_id;
    assert.equal(by('tapped'), s1);
    assert.equal(by('session_end'), s1);
    assert.notEqual(named(rec, 'session_start')[1].context.session_id, s1);
    assert.equal(by('after'), c.getSessionId());
    assert.equal(named(rec, 'session_start')[1].context.session_id, c.getSessionId());
    await c.shutdown();
  });

  it('no event for sessionTimeoutMs in the foreground: session_end 1 ms after the last event, then a new session', async () => {
    mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    try {
      const rec = recorder();
      const c = sdk(rec, memoryStorage(), { sessionTimeoutMs: 60_000 });
      await c.start();
      const s1 = c.getSessionId();
      await c.track('a');
      mock.timers.tick(60_000);
      await c.track('b'); // exactly the timeout: the same session
      mock.timers.tick(60_001);
      await c.track('c');
      await c.flush();
      assert.deepEqual(names(rec), ['app_open', 'session_start', 'a', 'b', 'session_end', 'session_start', 'c']);
      const [, , , b, end, start, ev] = rec.sent;
      assert.equal(b.context.session_id, s1);
      assert.equal(end.context.session_id, s1);
      assert.equal(end.ts_ms, b.ts_ms + 1, 'stamped 1 ms after the last event');
      assert.equal(end.properties.duration_ms, end.ts_ms - 1_000_000);
      assert.notEqual(start.context.session_id, s1);
      assert.equal(ev.context.session_id, start.context.session_id);
      assert.equal(start.ts_ms, ev.ts_ms);
    } finally {
      mock.timers.reset();
    }
  });

  it('lifecycle: false: no automatic events; the session id still changes after the timeout', async () => {
    mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    try {
      const rec = recorder();
      const c = sdk(rec, memoryStorage(), { lifecycle: false, sessionTimeoutMs: 1000 });
      await c.start();
      await c.track('a');
      await c.setForeground(false);
      await c.setForeground(true);
      mock.timers.tick(1001);
      await c.track('b');
      await c.shutdown();
      assert.deepEqual(names(rec), ['a', 'b']);
      assert.notEqual(rec.sent[0].context.session_id, rec.sent[1].context.session_id);
    } finally {
      mock.timers.reset();
    }
  });
});

/** A fake react-native AppState: `emit` plays a transition sequence as the OS would. */
function fakeAppState() {
  const listeners = new Set<(s: string) => void>();
  const appState: AppStateLike & { emit(...s: string[]): void; listeners: number } = {
    currentState: 'active',
    addEventListener: (_t, l) => {
      listeners.add(l);
      return { remove: () => void listeners.delete(l) };
    },
    emit: (...states) => {
      for (const s of states) {
        appState.currentState = s;
        for (const l of listeners) l(s);
      }
    },
    get listeners() {
      return listeners.size;
    },
  };
  return appState;
}

describe('sdk react-native entry', () => {
  async function play(sequence: string[], storage: ConstructorParameters<typeof Map>[0] = []) {
    const rec = recorder();
    const appState = fakeAppState();
    const mmkv = new Map<string, string>(storage as []);
    const c = createReactNativeClient({
      apiKey: 'k',
      baseUrl: 'http://sdk.test',
      device,
      fetch: rec.fetchFn,
      stream: false,
      appState,
      // MMKV's shape: synchronous getString / set / delete.
      storage: {
        getString: (k) => mmkv.get(k),
        set: (k, v) => void mmkv.set(k, v),
        delete: (k) => void mmkv.delete(k),
      },
    });
    await c.start();
    const s1 = c.getSessionId();
    appState.emit(...sequence);
    await c.flush();
    await c.shutdown();
    assert.equal(appState.listeners, 0, 'shutdown unsubscribes');
    return { rec, s1, after: names(rec).slice(2, -2) };
  }

  it('iOS active -> inactive -> active (Control Center, a call): no new session', async () => {
    const { after } = await play(['inactive', 'active', 'inactive', 'active']);
    assert.deepEqual(after, []);
  });

  it('iOS active -> inactive -> background -> active: the session ends, a new one starts', async () => {
    const { rec, after, s1 } = await play(['inactive', 'background', 'active']);
    assert.deepEqual(after, ['session_end', 'session_start']);
    assert.equal(named(rec, 'session_end')[0].context.session_id, s1);
    assert.notEqual(named(rec, 'session_start')[1].context.session_id, s1);
  });

  it('iOS background -> inactive -> background (the app switcher over a backgrounded app): no session opens', async () => {
    const { after } = await play(['inactive', 'background', 'inactive', 'background', 'inactive', 'active']);
    assert.deepEqual(after, ['session_end', 'session_start'], 'one end, one start: inactive never opens');
  });

  it('Android active -> background -> active, twice', async () => {
    const { after, rec } = await play(['background', 'active', 'background', 'active']);
    assert.deepEqual(after, ['session_end', 'session_start', 'session_end', 'session_start']);
    assert.equal(new Set(named(rec, 'session_start').map((e) => e.context.session_id)).size, 3);
    assert.equal(rec.sent.at(-1)!.event_name, 'app_close');
  });

  it('AsyncStorage-shaped storage with a synchronous getItem works too; the device says react_native', async () => {
    const rec = recorder();
    const data = new Map<string, string>();
    const c = createReactNativeClient({
      apiKey: 'k',
      baseUrl: 'http://sdk.test',
      device,
      fetch: rec.fetchFn,
      stream: false,
      appState: fakeAppState(),
      storage: {
        getItem: (k) => data.get(k) ?? null,
        setItem: async (k, v) => void data.set(k, v),
        removeItem: (k) => void data.delete(k),
      },
    });
    await c.track('x');
    assert.ok(
      [...data.keys()].some((k) => k.startsWith('msb.q.')),
      'the queue is in the given storage',
    );
    await c.flush();
    assert.equal((rec.sent[0] as unknown as { device: { framework: string } }).device.framework, 'react_native');
  });
});
