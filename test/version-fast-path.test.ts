// The version check answered before Fastify (src/http/fast-path.ts, src/modules/bundles/version-fast-path.ts):
// which requests it takes, and that its answers are the route's, byte for byte and header for header.
import type { FastifyPluginAsync } from 'fastify';
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { toServed } from '../src/modules/bundles/served.js';
import { VERSION_PATH, versionFastPath } from '../src/modules/bundles/version-fast-path.js';
import { createTenant, rawRequest } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Headers that differ between any two answers (the clock, the connection). */
const PER_ANSWER = new Set(['date', 'keep-alive', 'connection']);

async function answer(base: string, path: string, headers: Record<string, string>) {
  const r = await fetch(base + path, { headers });
  const h = Object.fromEntries([...r.headers].filter(([k]) => !PER_ANSWER.has(k)));
  return { status: r.status, body: await r.text(), headers: h };
}

describe('version check fast path, through the real service', () => {
  const suite = useTenantApp();
  const key = () => ({ 'x-api-key': suite.t.live.public_key });

  it("answers as the route does: status, body and every header (the route is reached with a '?')", async () => {
    const first = await answer(suite.server.url, VERSION_PATH, key());
    assert.equal(first.status, 200);
    const etag = first.headers.etag;
    const variants: Record<string, string>[] = [
      {},
      { 'x-request-id': 'trace-42.a:b_c' },
      { 'x-request-id': 'not allowed!' },
      { 'if-none-match': etag },
      { 'if-none-match': `W/${etag}, "other"` },
      { 'if-none-match': '"other"' },
      { 'if-none-match': '*' },
      { 'accept-encoding': 'gzip, br' },
    ];
    for (const extra of variants) {
      const headers = { ...key(), ...extra };
      const fast = await answer(suite.server.url, VERSION_PATH, headers);
      const routed = await answer(suite.server.url, `${VERSION_PATH}?`, headers);
      const what = JSON.stringify(extra);
      assert.equal(fast.status, routed.status, what);
      assert.equal(fast.body, routed.body, what);
      if (extra['x-request-id'] === 'trace-42.a:b_c') assert.equal(fast.headers['x-request-id'], 'trace-42.a:b_c');
      else {
        assert.match(fast.headers['x-request-id'], UUID, what);
        assert.notEqual(fast.headers['x-request-id'], routed.headers['x-request-id']);
        fast.headers['x-request-id'] = routed.headers['x-request-id'];
      }
      assert.deepEqual(fast.headers, routed.headers, what);
    }
    const notModified = await answer(suite.server.url, VERSION_PATH, { ...key(), 'if-none-match': etag });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.body, '');
  });

  it("serves each key its own app's version, a new version at once, and refuses a revoked key at once", async () => {
    const other = await createTenant(suite.c);
    const otherKey = { 'x-api-key': other.live.public_key };
    const v = async (k: Record<string, string>) => (await suite.c.get(VERSION_PATH, k)).body.data.bundle_version;
    const mine = await v(key());
    assert.equal(await v(otherKey), 1);
    const p = await suite.c.post('/api/v1/paywalls', { name: 'Fast path' }, other.console);
    await suite.c.post(`/api/v1/paywalls/${p.body.data.id}/publish`, {}, other.console);
    // Twice each: the first read may warm a cache, the second is the fast path's.
    for (let i = 0; i < 2; i++) {
      assert.equal(await v(otherKey), 2);
      assert.equal(await v(key()), mine);
    }
    const revoked = await suite.c.del(`/api/v1/sdk/api-keys/${other.live.id}`, other.console);
    assert.equal(revoked.status, 200);
    const refused = await suite.c.get(VERSION_PATH, otherKey);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'invalid_credentials');
  });

  it("counts its answers in the route's request metrics", async () => {
    const count = async (status: number) => {
      const text = await (await fetch(`${suite.server.url}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`http_requests_total{method="GET",route="${VERSION_PATH}",status="${status}"}`));
      return Number(line?.split(' ').pop() ?? 0);
    };
    const etag = (await suite.c.get(VERSION_PATH, key())).headers.get('etag')!;
    const [ok, notModified] = [await count(200), await count(304)];
    for (let i = 0; i < 5; i++) await suite.c.get(VERSION_PATH, key());
    for (let i = 0; i < 3; i++) await suite.c.get(VERSION_PATH, { ...key(), 'if-none-match': etag });
    assert.equal(await count(200), ok + 5);
    assert.equal(await count(304), notModified + 3);
  });

  it('an HTTP/1.1 request without Host is a 400 with Connection: close, as Node answers it, fast path or not', async () => {
    for (const path of [VERSION_PATH, '/livez']) {
      const text = await rawRequest(
        suite.server.url,
        `GET ${path} HTTP/1.1\r\nx-api-key: ${suite.t.live.public_key}\r\n\r\n`,
      );
      assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/, path);
      assert.match(text, /\r\nConnection: close\r\n/i, path);
    }
    // HTTP/1.0 needs no Host: the route answers it.
    const old = await rawRequest(
      suite.server.url,
      `GET ${VERSION_PATH} HTTP/1.0\r\nx-api-key: ${suite.t.live.public_key}\r\n\r\n`,
    );
    assert.match(old, /^HTTP\/1\.1 200 OK\r\n/);
  });
});

describe('version check fast path: which requests it takes', () => {
  // The real app and fast path, with the route answering "routed": each answer tells which path took it.
  const served = toServed({
    bundle_version: 7,
    sdk_min_version: '1.0.0',
    size_bytes: 2,
    generated_at: new Date('2026-11-29T00:00:00Z'),
    reason: 'test',
    rolled_back_from: null,
    actor_user_id: null,
    content: '{}',
  });
  const scope = { tenantId: 't', appId: 'a' };
  const keys = new Map([['svc_live_fast', scope]]);
  let cached = true;
  const observed: number[] = [];
  const route: FastifyPluginAsync = async (app) => {
    app.get(VERSION_PATH, async () => 'routed');
  };
  const fastPaths = {
    [VERSION_PATH]: versionFastPath({
      keyScope: (k) => keys.get(k),
      peek: (s) => (cached && s === scope ? served : null),
      observe: (_method, status) => observed.push(status),
    }),
  };
  let url = '';
  let corsUrl = '';
  const apps: Awaited<ReturnType<typeof buildApp>>[] = [];
  before(async () => {
    const logger = pino({ level: 'silent' });
    const app = await buildApp({ logger, plugins: [route], version: 't', fastPaths });
    const cors = await buildApp({ logger, plugins: [route], version: 't', fastPaths, corsOrigins: ['https://a.test'] });
    apps.push(app, cors);
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    corsUrl = await cors.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => Promise.all(apps.map((a) => a.close())));

  const get = (path: string, headers: Record<string, string> = {}, base = url) =>
    fetch(base + path, { headers }).then(async (r) => ({ status: r.status, body: await r.text(), r }));
  const raw = (lines: string[]) => rawRequest(url, `${lines.join('\r\n')}\r\n\r\n`);
  const key = { 'x-api-key': 'svc_live_fast' };

  it('takes the exact GET with a cached key and version, and counts it', async () => {
    const before = observed.length;
    const r = await get(VERSION_PATH, key);
    assert.equal(r.status, 200);
    assert.equal(r.body, served.versionBody);
    assert.equal(r.r.headers.get('etag'), served.versionEtag);
    assert.equal(r.r.headers.get('content-length'), String(Buffer.byteLength(served.versionBody)));
    assert.equal(r.r.headers.get('x-content-type-options'), 'nosniff');
    assert.deepEqual(observed.slice(before), [200]);
    const inm = await get(VERSION_PATH, { ...key, 'if-none-match': served.versionEtag });
    assert.equal(inm.status, 304);
    assert.deepEqual(observed.slice(before), [200, 304]);
    // Header names in any case.
    const upper = await raw([
      `GET ${VERSION_PATH} HTTP/1.1`,
      'HOST: x',
      'X-API-KEY: svc_live_fast',
      'Connection: close',
    ]);
    assert.match(upper, /\r\n\r\n\{"data":\{"bundle_version":7,/);
  });

  it('hands the route everything else', async () => {
    assert.equal((await get(VERSION_PATH)).body, 'routed', 'no key');
    assert.equal((await get(VERSION_PATH, { 'x-api-key': 'svc_live_other' })).body, 'routed', 'unknown key');
    assert.equal((await get(`${VERSION_PATH}?x=1`, key)).body, 'routed', 'a query');
    assert.equal((await get(`${VERSION_PATH}/`, key)).status, 404, 'another URL');
    const head = await fetch(url + VERSION_PATH, { method: 'HEAD', headers: key });
    assert.equal(head.headers.get('content-length'), '6', 'HEAD: the route\'s "routed"');
    cached = false;
    assert.equal((await get(VERSION_PATH, key)).body, 'routed', 'version not cached');
    cached = true;
    const send = (extra: string[], body = '') =>
      rawRequest(
        url,
        `${[`GET ${VERSION_PATH} HTTP/1.1`, 'Host: x', 'x-api-key: svc_live_fast', 'Connection: close', ...extra].join('\r\n')}\r\n\r\n${body}`,
      );
    const routed = /\r\n\r\nrouted$/;
    assert.match(await send(['X-Api-Key: svc_live_fast']), routed, 'key sent twice');
    assert.match(await send(['if-none-match: "a"', 'if-none-match: "b"']), routed, 'if-none-match twice');
    assert.match(await send(['x-request-id: a', 'X-Request-Id: b']), routed, 'x-request-id twice');
    assert.match(await send(['content-length: 0']), routed, 'a body');
    assert.match(await send(['transfer-encoding: chunked'], '0\r\n\r\n'), routed, 'a chunked body');
    assert.match(await send(['x-other: 1', 'x-other: 2']), /\r\n\r\n\{"data"/, 'other headers do not matter');
  });

  it("is off when CORS is on: CORS headers are the route pipeline's", async () => {
    const r = await get(VERSION_PATH, { ...key, origin: 'https://a.test' }, corsUrl);
    assert.equal(r.body, 'routed');
    assert.equal(r.r.headers.get('access-control-allow-origin'), 'https://a.test');
    assert.equal((await get(VERSION_PATH, key, corsUrl)).body, 'routed');
  });

  it('steps aside once the app closes: a request on an open connection gets the route and Connection: close', async () => {
    // A slow request holds the connection open while the close begins; the version check sent after it
    // on the same connection arrives while the app drains.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let drained: () => void = () => undefined;
    const draining = new Promise<void>((r) => (drained = r));
    const slow: FastifyPluginAsync = async (app) => {
      app.get('/slow', async () => {
        await gate;
        return 'slow';
      });
      app.addHook('preClose', (done) => {
        drained();
        done();
      });
    };
    const app = await buildApp({ logger: pino({ level: 'silent' }), plugins: [route, slow], version: 't', fastPaths });
    const { port } = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.setEncoding('utf8');
    let text = '';
    const ended = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('data', (d: string) => (text += d));
    const send = (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nx-api-key: svc_live_fast\r\n\r\n`);
    send(VERSION_PATH);
    send('/slow');
    while (!text.includes('"bundle_version":7')) await new Promise((r) => setImmediate(r));
    const closing = app.close();
    await draining;
    send(VERSION_PATH);
    release();
    await closing;
    await ended;
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 3, text);
    assert.match(answers[0], /\r\n\r\n\{"data"/, 'before the close: the fast path');
    assert.match(answers[1], /\r\n\r\nslow$/);
    assert.match(answers[2], /\r\nConnection: close\r\n/i);
    assert.match(answers[2], /\r\n\r\nrouted$/, 'while draining: the route');
  });
});
