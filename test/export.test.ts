import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: Client;
let t: Tenant;
let other: Tenant;

const BASE = Date.now() - 3 * 86_400_000; // three days ago, whole seconds below
const base = BASE - (BASE % 1000);
const iso = (ms: number) => new Date(ms).toISOString();
const NAMES = ['app_open', 'paywall_view', 'session_start', 'purchase_completed'];
const key = (k: { public_key: string }) => ({ 'x-api-key': k.public_key });

// 2,500 consented production events; every 5 share one ts_ms so the event_id tie-break matters.
const events = Array.from({ length: 2500 }, (_, i) =>
  makeEvent({
    event_name: NAMES[i % NAMES.length],
    ts_ms: base + Math.floor(i / 5) * 1000,
    user: { anon_id: randomUUID(), ...(i % 50 === 0 ? { user_id: 'u-carrier' } : {}) },
    context: { session_id: randomUUID(), screen: i % 3 === 0 ? 'home, "main"\nscreen' : undefined, client_seq: i },
    properties: {
      step: i % 7,
      label: `l${i % 3}`,
      flag: i % 2 === 0,
      ...(i % 4 === 3 ? { mixed: i % 8 === 3 ? 'x' : 1 } : {}),
      nested: { a: [1, 'b'] },
    },
  }),
).map((e) =>
  e.context.screen === undefined
    ? { ...e, context: { session_id: e.context.session_id, client_seq: e.context.client_seq } }
    : e,
);
const linkedAnon = events[7].user.anon_id;
const declined = Array.from({ length: 20 }, (_, i) =>
  makeEvent({ ts_ms: base + i * 1000, privacy: { consent: { analytics: false } } }),
);
const sandboxEvents = Array.from({ length: 9 }, (_, i) =>
  makeEvent({ ts_ms: base + i * 1000, event_name: 'sandbox_only' }),
);
const otherEvents = Array.from({ length: 5 }, (_, i) => makeEvent({ ts_ms: base + i * 1000 }));

async function ingest(k: { public_key: string }, list: Record<string, any>[]) {
  for (let i = 0; i < list.length; i += 500) {
    const r = await c.post('/api/v1/ingest/events', { batch: list.slice(i, i + 500) }, key(k));
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.accepted, Math.min(500, list.length - i));
  }
}

const sortKey = (e: Record<string, any>) => `${String(e.ts_ms).padStart(15, '0')}|${e.event_id}`;
const expectedOrder = [...events].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1)).map((e) => e.event_id);
const window = `start_date=${encodeURIComponent(iso(base))}&end_date=${encodeURIComponent(iso(base + 86_400_000))}`;

before(async () => {
  server = await startTestServer({ ROLLUP_INTERVAL_S: '1' });
  c = client(server.url);
  [t, other] = await Promise.all([createTenant(c), createTenant(c)]);
  await ingest(t.live, events);
  await ingest(t.live, declined);
  await ingest(t.sandbox, sandboxEvents);
  await ingest(other.live, otherEvents);
  const id = await c.post(
    '/api/v1/ingest/identify',
    { anon_id: linkedAnon, user_id: 'u-linked', ts_ms: Date.now() },
    key(t.live),
  );
  assert.ok(id.status < 300, id.text);
});
after(() => server.stop());

async function pageAll(limit: number, extra = '') {
  const out: any[] = [];
  let total = -1;
  for (let offset = 0; ; offset += limit) {
    const r = await c.get(`/api/v1/sdk/events/export?${window}&limit=${limit}&offset=${offset}${extra}`, key(t.live));
    assert.equal(r.status, 200, r.text);
    if (total === -1) total = r.body.meta.total;
    assert.equal(r.body.meta.total, total);
    out.push(...r.body.data);
    assert.equal(r.body.meta.hasMore, offset + r.body.data.length < total);
    if (!r.body.meta.hasMore) break;
  }
  return { out, total };
}

describe('paged export', () => {
  it('pages 2,500 events without gaps or repeats, ordered by time then event id', async () => {
    for (const limit of [1000, 333]) {
      const { out, total } = await pageAll(limit);
      assert.equal(total, 2500);
      assert.equal(out.length, 2500);
      assert.equal(new Set(out.map((e) => e.event_id)).size, 2500);
      assert.deepEqual(
        out.map((e) => e.event_id),
        expectedOrder,
      );
    }
  });

  it('returns the stored envelope plus received_at, never consent-declined events', async () => {
    const r = await c.get(`/api/v1/sdk/events/export?${window}&limit=1000`, key(t.live));
    const byId = new Map(events.map((e) => [e.event_id, e]));
    for (const e of r.body.data) {
      const { received_at, ...envelope } = e;
      assert.match(received_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.deepEqual(envelope, byId.get(e.event_id));
    }
    const declinedIds = new Set(declined.map((e) => e.event_id));
    const { out } = await pageAll(1000);
    assert.equal(out.filter((e) => declinedIds.has(e.event_id)).length, 0);
  });

  it('filters by event names, user id and dates (start inclusive, end exclusive)', async () => {
    const names = await c.get(
      `/api/v1/sdk/events/export?${window}&event_names=paywall_view,%20session_start&limit=1000`,
      key(t.live),
    );
    assert.equal(names.body.meta.total, 1250);
    assert.ok(names.body.data.every((e: any) => ['paywall_view', 'session_start'].includes(e.event_name)));

    const carrier = await c.get(`/api/v1/sdk/events/export?${window}&user_id=u-carrier`, key(t.live));
    assert.equal(carrier.body.meta.total, 50);
    assert.ok(carrier.body.data.every((e: any) => e.user.user_id === 'u-carrier'));
    const linked = await c.get(`/api/v1/sdk/events/export?${window}&user_id=u-linked`, key(t.live));
    assert.deepEqual(
      linked.body.data.map((e: any) => e.event_id),
      [events[7].event_id],
    );

    // ts groups of 5 per second: [base+10s, base+20s) holds seconds 10..19 = 50 events.
    const w = `start_date=${encodeURIComponent(iso(base + 10_000))}&end_date=${encodeURIComponent(iso(base + 20_000))}`;
    const dates = await c.get(`/api/v1/sdk/events/export?${w}&limit=1000`, key(t.live));
    assert.equal(dates.body.meta.total, 50);
    assert.ok(dates.body.data.every((e: any) => e.ts_ms >= base + 10_000 && e.ts_ms < base + 20_000));
    // Offsets other than Z are honoured.
    const shifted = new Date(base + 10_000 + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    const off = await c.get(
      `/api/v1/sdk/events/export?start_date=${encodeURIComponent(shifted)}&end_date=${encodeURIComponent(iso(base + 20_000))}`,
      key(t.live),
    );
    assert.equal(off.body.meta.total, 50);
  });

  it('defaults to 100 per page and rejects out-of-bounds parameters', async () => {
    const d = await c.get(`/api/v1/sdk/events/export?${window}`, key(t.live));
    assert.equal(d.body.data.length, 100);
    assert.equal(d.body.meta.hasMore, true);
    const day = new Date(base).toISOString().slice(0, 10);
    for (const q of [
      `${window}&limit=0`,
      `${window}&limit=1001`,
      `${window}&offset=-1`,
      `start_date=${day}&end_date=${encodeURIComponent(iso(base + 86_400_000))}`,
      `start_date=${encodeURIComponent(iso(base))}&end_date=${day}`,
      `start_date=${encodeURIComponent(iso(base + 1000))}&end_date=${encodeURIComponent(iso(base))}`,
      `start_date=${encodeURIComponent(iso(base))}`,
      `start_date=2026-13-01T00:00:00Z&end_date=2026-14-01T00:00:00Z`,
      `start_date=0000-01-01T00:00:00Z&end_date=2026-01-01T00:00:00Z`,
      `start_date=2026-01-01T00:00:00%2B99:99&end_date=2026-02-01T00:00:00Z`,
      `${window}&event_names=${Array.from({ length: 51 }, (_, i) => `e${i}`).join(',')}`,
      `${window}&user_id=${'x'.repeat(300)}`,
    ]) {
      const r = await c.get(`/api/v1/sdk/events/export?${q}`, key(t.live));
      assert.equal(r.status, 400, q);
      assert.equal(r.body.code, 'validation_failed');
    }
    const dl = await c.get(`/api/v1/sdk/events/export/download?start_date=${day}&end_date=${day}`, key(t.live));
    assert.equal(dl.status, 400);
  });

  it('needs a key with export_data (403) and follows the key environment', async () => {
    const plain = await c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: [] }, t.console);
    assert.equal(plain.status, 201);
    for (const p of ['', '/download', '/schema', '/bulk/' + randomUUID(), '/bulk/' + randomUUID() + '/download']) {
      const r = await c.get(`/api/v1/sdk/events/export${p}?${window}`, key(plain.body.data));
      assert.equal(r.status, 403, p);
      assert.equal(r.body.code, 'forbidden');
    }
    const bulk = await c.post(
      '/api/v1/sdk/events/export/bulk',
      { start_date: iso(base), end_date: iso(base + 1000) },
      key(plain.body.data),
    );
    assert.equal(bulk.status, 403);
    assert.equal((await c.get(`/api/v1/sdk/events/export?${window}`)).status, 401);

    const sb = await c.get(`/api/v1/sdk/events/export?${window}&limit=1000`, key(t.sandbox));
    assert.equal(sb.body.meta.total, 9);
    assert.ok(sb.body.data.every((e: any) => e.event_name === 'sandbox_only'));
    const o = await c.get(`/api/v1/sdk/events/export?${window}&limit=1000`, key(other.live));
    assert.deepEqual(new Set(o.body.data.map((e: any) => e.event_id)), new Set(otherEvents.map((e) => e.event_id)));
  });
});

function flatten(o: Record<string, any>, prefix = '', out: Record<string, string> = {}) {
  for (const [k, v] of Object.entries(o)) {
    const name = prefix + k;
    if (name === 'properties' || name === 'context.experiment_exposures') out[name] = JSON.stringify(v);
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v, `${name}.`, out);
    else out[name] = v === null || v === undefined ? '' : String(v);
  }
  return out;
}

describe('download', () => {
  it('streams one JSON array equal to the paged read, as an attachment', async () => {
    const res = await fetch(`${server.url}/api/v1/sdk/events/export/download?${window}`, { headers: key(t.live) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /application\/json/);
    assert.match(res.headers.get('content-disposition')!, /^attachment; filename="events-.+\.json"$/);
    const file = JSON.parse(await res.text());
    const { out } = await pageAll(1000);
    assert.deepEqual(file, out);
    const empty = await c.get(
      `/api/v1/sdk/events/export/download?start_date=2020-01-01T00:00:00Z&end_date=2020-01-02T00:00:00Z`,
      key(t.live),
    );
    assert.deepEqual(empty.body, []);
  });

  it('streams CSV that a CSV parser reads back into the same events', async () => {
    const res = await fetch(
      `${server.url}/api/v1/sdk/events/export/download?${window}&format=csv&event_names=paywall_view,app_open`,
      { headers: key(t.live) },
    );
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/csv/);
    assert.match(res.headers.get('content-disposition')!, /^attachment; filename="events-.+\.csv"$/);
    const csvText = await res.text();
    const rows: Record<string, string>[] = parse(csvText, { columns: true });
    // Byte-identical to what csv-stringify makes of the same records (the quoting is ours, inlined for speed).
    assert.equal(csvText, stringify([Object.keys(rows[0]), ...rows.map((r) => Object.values(r))]));
    const json = await c.get(
      `/api/v1/sdk/events/export/download?${window}&event_names=paywall_view,app_open`,
      key(t.live),
    );
    assert.equal(rows.length, 1250);
    assert.equal(json.body.length, 1250);
    assert.ok(Object.keys(rows[0]).includes('device.platform'));
    rows.forEach((row, i) => {
      const expected = flatten(json.body[i]);
      for (const [col, value] of Object.entries(row)) {
        const at = col.split('.').reduce((o: any, k) => o?.[k], json.body[i]);
        if (col === 'properties' || col === 'context.experiment_exposures')
          assert.deepEqual(value === '' ? undefined : JSON.parse(value), at);
        else assert.equal(value, expected[col] ?? '', `${col} of row ${i}`);
      }
      // Every field of the JSON object is in the CSV.
      for (const col of Object.keys(expected)) assert.ok(col in row, col);
      assert.equal(JSON.parse(row.properties).nested.a[1], 'b');
    });
    // The quoted screen name (comma, quotes, newline) survived.
    assert.ok(rows.some((r) => r['context.screen'] === 'home, "main"\nscreen'));
  });
});

describe('download lifecycle', () => {
  it('releases the cursor and the download slot when the client goes away mid-file', async () => {
    for (let i = 0; i < 3; i++) {
      const ac = new AbortController();
      const res = await fetch(
        `${server.url}/api/v1/sdk/events/export/download?${window}&format=${i % 2 ? 'csv' : 'json'}`,
        { headers: key(t.live), signal: ac.signal },
      );
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await reader.cancel().catch(() => undefined);
    }
    const openCursors = async () =>
      (
        await server.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'FETCH % FROM export_cursor' AND state <> 'idle'`,
        )
      ).rows[0].n;
    for (let i = 0; i < 50 && (await openCursors()) > 0; i++) await sleep(100);
    assert.equal(await openCursors(), 0);
    // The per-app limit of 2 concurrent downloads was released each time.
    const again = await c.get(`/api/v1/sdk/events/export/download?${window}&event_names=app_open`, key(t.live));
    assert.equal(again.status, 200);
    assert.equal(again.body.length, 625);
  });
});

describe('schema', () => {
  it('lists event names with counts, first/last seen and observed property types', async () => {
    let data: any[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await c.get('/api/v1/sdk/events/export/schema', key(t.live));
      assert.equal(r.status, 200);
      data = r.body.data;
      if (data.length === 4 && data.every((d) => d.count === 625)) break;
      await sleep(250);
    }
    assert.deepEqual(
      data.map((d) => d.event_name),
      [...NAMES].sort(),
    );
    const paywall = data.find((d) => d.event_name === 'paywall_view');
    assert.equal(paywall.count, 625);
    const first = events.filter((e) => e.event_name === 'paywall_view').map((e) => e.ts_ms);
    assert.equal(paywall.first_seen, iso(Math.min(...first)));
    assert.equal(paywall.last_seen, iso(Math.max(...first)));
    const types = Object.fromEntries(paywall.properties.map((p: any) => [p.name, p.types]));
    assert.deepEqual(types, { flag: ['boolean'], label: ['string'], nested: ['object'], step: ['number'] });
    const purchase = data.find((d) => d.event_name === 'purchase_completed');
    assert.deepEqual(purchase.properties.find((p: any) => p.name === 'mixed').types, ['number', 'string']);

    const sb = await c.get('/api/v1/sdk/events/export/schema', key(t.sandbox));
    assert.deepEqual(
      sb.body.data.map((d: any) => [d.event_name, d.count]),
      [['sandbox_only', 9]],
    );

    // New events are folded in incrementally.
    await ingest(t.live, [makeEvent({ event_name: 'brand_new', ts_ms: base, properties: { k: null } })]);
    let fresh: any;
    for (let i = 0; i < 40 && !fresh; i++) {
      await sleep(250);
      fresh = (await c.get('/api/v1/sdk/events/export/schema', key(t.live))).body.data.find(
        (d: any) => d.event_name === 'brand_new',
      );
    }
    assert.deepEqual(fresh?.properties, [{ name: 'k', types: ['null'] }]);
    assert.equal(fresh.count, 1);
  });
});
