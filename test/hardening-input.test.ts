import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_JSON_DEPTH } from '../src/http/json-bounds.js';
import { makeEvent, rawRequest } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// Issue 20, items 1-3 and the 4xx part of 5: hostile values are refused alone, with their path,
// empty bodies are `{}`, and whatever the framework refuses is problem+json too.
const suite = useTenantApp();
const sdk = () => ({ 'x-api-key': suite.t.sandbox.public_key });

// Hostile nesting is written as text: the test's own JSON.stringify would overflow on it.
const DEEP = '"__deep__"';
const deepJson = (value: unknown) =>
  JSON.stringify(value).replace(DEEP, '{"d":'.repeat(10_000) + '1' + '}'.repeat(10_000));

const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
};

async function storedCount(ids: string[]): Promise<number> {
  const { rows } = await suite.server.db.query(
    'SELECT count(*)::int AS n FROM events WHERE app_id = $1 AND event_id = ANY ($2::uuid[])',
    [suite.t.appId, ids],
  );
  return rows[0].n;
}

function assertProblem(r: { status: number; headers: Headers; body: any }, status: number, code: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(r.body.code, code);
}

describe('hostile values in an ingest batch', () => {
  const poison: [string, Record<string, any>, string][] = [
    ['NUL in event_name', makeEvent({ event_name: 'tap\u0000' }), '/event_name'],
    ['NUL in a property value', makeEvent({ properties: { q: 'a\u0000b' } }), '/properties/q'],
    ['NUL in a property key', makeEvent({ properties: { 'k\u0000': 1 } }), '/properties/k\u0000'],
    ['NUL in device.locale', makeEvent({ device: { ...makeEvent().device, locale: 'en\u0000' } }), '/device/locale'],
    [
      'NUL in context.screen',
      makeEvent({ context: { session_id: makeEvent().context.session_id, screen: '\u0000' } }),
      '/context/screen',
    ],
    ['a lone surrogate deep in properties', makeEvent({ properties: { a: [{ b: 'x\ud800' }] } }), '/properties/a/0/b'],
    ['10,000-deep properties', makeEvent({ properties: { deep: '__deep__' } }), ''],
    ['an unknown field with NUL', makeEvent({ extra: { note: '\u0000' } }), '/extra/note'],
  ];

  it('rejects each bad event alone with index, path and reason, stores the rest once', async () => {
    const good = [
      makeEvent(),
      makeEvent({ properties: { emoji: '\ud83d\ude00', nested: nested(MAX_JSON_DEPTH - 3) } }),
    ];
    const batch = [good[0], ...poison.map(([, e]) => e), good[1]];
    for (let round = 0; round < 2; round++) {
      const r = await suite.c.post('/api/v1/ingest/events', deepJson({ batch }), sdk());
      assert.equal(r.status, 202, r.text);
      assert.equal(r.body.accepted, 2);
      assert.equal(r.body.rejected, poison.length);
      assert.equal(r.body.accepted + r.body.rejected, batch.length);
      for (const [i, [what, , path]] of poison.entries()) {
        const e = r.body.errors.find((x: any) => x.index === i + 1);
        assert.ok(e, `${what} is reported`);
        assert.equal(e.code, 'invalid_field', what);
        if (path) assert.equal(e.path, path, what);
        else assert.ok(e.path.startsWith('/properties/deep'), `${what}: ${e.path}`);
        assert.match(e.message, /NUL|surrogate|deeper/, what);
      }
    }
    // Sent twice, stored once.
    assert.equal(await storedCount(good.map((e) => e.event_id)), 2);
  });

  it('refuses a hostile whole body with a 400 naming the field', async () => {
    const deep = await suite.c.post(
      '/api/v1/ingest/identify',
      deepJson({ anon_id: makeEvent().user.anon_id, user_id: 'u1', ts_ms: Date.now(), traits: '__deep__' }),
      sdk(),
    );
    assertProblem(deep, 400, 'validation_failed');
    assert.match(deep.body.errors[0].path, /^\/body\/traits\/d\/d/);
    const nul = await suite.c.post(
      '/api/v1/ingest/identify',
      { anon_id: makeEvent().user.anon_id, user_id: 'u1', ts_ms: Date.now(), traits: { 'n\u0000': 1 } },
      sdk(),
    );
    assertProblem(nul, 400, 'validation_failed');
    assert.equal(nul.body.errors[0].path, '/body/traits/n\u0000');
    const rc = await suite.c.put('/api/v1/remote-config', { values: { greeting: 'hi\ud800' } }, suite.t.console);
    assertProblem(rc, 400, 'validation_failed');
    assert.equal(rc.body.errors[0].path, '/body/values/greeting');
    const wide = await suite.c.put(
      '/api/v1/remote-config',
      { values: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i])) },
      suite.t.console,
    );
    assertProblem(wide, 400, 'validation_failed');
    const q = await suite.c.get('/api/v1/sdk/option-sets/colors/items?q=%00', sdk());
    assertProblem(q, 400, 'validation_failed');
    const hook = await suite.c.post(
      '/api/v1/webhooks',
      { url: 'http://127.0.0.1:1/h', events: ['user.identified'], description: 'x\u0000' },
      suite.t.console,
    );
    assertProblem(hook, 400, 'validation_failed');
    assert.equal(hook.body.errors[0].path, '/body/description');
  });
});

describe('empty bodies of actions whose fields are all optional', () => {
  it('key rotation, bundle generation, webhook actions accept no body, an empty JSON body and {}', async () => {
    const variants: [string, Record<string, string>, string | undefined][] = [
      ['no body, no content type', {}, undefined],
      ['JSON content type, empty body', { 'content-type': 'application/json' }, ''],
      ['{}', { 'content-type': 'application/json' }, '{}'],
    ];
    const hook = await suite.c.post(
      '/api/v1/webhooks',
      { url: 'http://127.0.0.1:1/h', events: ['user.identified'] },
      suite.t.console,
    );
    assert.equal(hook.status, 201, hook.text);
    for (const [what, headers, body] of variants) {
      const key = await suite.c.post('/api/v1/sdk/api-keys', { environment: 'sandbox' }, suite.t.console);
      const calls: [string, number][] = [
        [`/api/v1/sdk/api-keys/${key.body.data.id}/rotate`, 201],
        ['/api/v1/sdk/config-bundle/generate', 201],
        [`/api/v1/webhooks/${hook.body.data.id}/rotate-secret`, 200],
        // An unknown delivery: the body is accepted, the id is not.
        [`/api/v1/webhooks/${hook.body.data.id}/deliveries/00000000-0000-4000-8000-000000000000/retry`, 404],
      ];
      for (const [path, status] of calls) {
        const r = await suite.c.raw('POST', path, body, { ...suite.t.console, ...headers });
        assert.equal(r.status, status, `${what}: POST ${path} -> ${r.text}`);
      }
    }
  });

  it('an empty body of a route with required fields names them', async () => {
    const r = await suite.c.raw('POST', '/api/v1/sdk/config-bundle/rollback', undefined, suite.t.console);
    assertProblem(r, 400, 'validation_failed');
    assert.equal(r.body.errors[0].path, '/body/bundle_version');
  });
});

describe('framework refusals are problem+json', () => {
  it('without CORS_ORIGINS no origin is allowed (no CORS headers, preflight not answered)', async () => {
    const r = await fetch(`${suite.server.url}/api/v1/me`, {
      method: 'OPTIONS',
      headers: { origin: 'https://x.example.com', 'access-control-request-method': 'GET' },
    });
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.equal(r.status, 404);
  });

  it('a JSON body sent as text/plain answers 415', async () => {
    const r = await suite.c.raw(
      'POST',
      '/api/v1/webhooks',
      '{"url":"http://127.0.0.1:1/h","events":["user.identified"]}',
      { ...suite.t.console, 'content-type': 'text/plain' },
    );
    assertProblem(r, 415, 'unsupported_media_type');
  });

  it('malformed JSON answers 400 validation_failed', async () => {
    const r = await suite.c.raw('POST', '/api/v1/webhooks', '{"url":', {
      ...suite.t.console,
      'content-type': 'application/json',
    });
    assertProblem(r, 400, 'validation_failed');
  });

  it('an unencoded non-ASCII query answers a problem+json 400', async () => {
    const raw = await rawRequest(
      suite.server.url,
      `GET /api/v1/sdk/option-sets/colors/items?q=Île HTTP/1.1\r\nHost: x\r\nx-api-key: ${suite.t.sandbox.public_key}\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 400/);
    assert.match(raw, /content-type: application\/problem\+json/i);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    assert.equal(body.code, 'validation_failed');
  });
});
