import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// Every route of the OpenAPI document, called with hostile input under every kind of credential:
// nothing a client can send may produce a 5xx.

let server: TestServer;
let t: Tenant;

before(async () => {
  server = await startTestServer({ ALLOW_PRIVATE_TARGETS: '0' });
  t = await createTenant(client(server.url));
});
after(() => server.stop());

/** Deterministic, so a failure replays identically. */
function prng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

const HOSTILE: unknown[] = [
  null,
  '',
  'x'.repeat(5000),
  -1,
  1e308,
  'NaN',
  '%00',
  '../../etc/passwd',
  '00000000-0000-0000-0000-000000000000',
  '2024-13-45',
  '1',
  [],
  {},
  [1, 2],
  { a: { b: 1 } },
  true,
  '\u0000',
  '😀'.repeat(100),
  "'; DROP TABLE events; --",
];
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

describe('robustness', () => {
  it('answers hostile input on every route without a 5xx', async () => {
    const rnd = prng(42);
    const pick = () => HOSTILE[Math.floor(rnd() * HOSTILE.length)];
    const spec = await (await fetch(`${server.url}/docs/json`)).json();
    const credentials = [
      t.console,
      { 'x-api-key': t.live.public_key },
      { 'x-api-key': t.live.public_key, 'x-api-secret': t.live.secret_key },
      {},
    ];
    const failures: string[] = [];
    let sent = 0;
    for (const [path, ops] of Object.entries<Record<string, any>>(spec.paths)) {
      for (const method of Object.keys(ops).filter((m) => METHODS.includes(m))) {
        const op = ops[method];
        for (let i = 0; i < 4; i++) {
          let url = path.replace(/\{[^}]+\}/g, () => encodeURIComponent(String(pick() ?? 'x')));
          const qs = new URLSearchParams();
          for (const p of op.parameters ?? []) if (p.in === 'query' && rnd() < 0.7) qs.set(p.name, String(pick()));
          if (qs.size) url += `?${qs}`;
          const body: Record<string, unknown> = {};
          for (const k of Object.keys(op.requestBody?.content?.['application/json']?.schema?.properties ?? {}))
            if (rnd() < 0.8) body[k] = pick();
          const withBody = method !== 'get' && method !== 'delete';
          const headers: Record<string, string> = {
            ...credentials[i],
            ...(withBody ? { 'content-type': 'application/json' } : {}),
          };
          const text = i === 3 ? '{not json' : JSON.stringify(rnd() < 0.15 ? (pick() ?? {}) : body);
          const r = await fetch(server.url + url, {
            method: method.toUpperCase(),
            headers,
            body: withBody ? text : undefined,
          });
          sent++;
          // An event stream stays open: its status is the answer.
          const stream = r.headers.get('content-type')?.startsWith('text/event-stream');
          const answer = stream ? (await r.body?.cancel(), '') : await r.text();
          if (r.status >= 500)
            failures.push(`${r.status} ${method.toUpperCase()} ${url.slice(0, 160)} ${answer.slice(0, 200)}`);
        }
      }
    }
    assert.ok(sent > 300, `covered ${sent} requests`);
    assert.deepEqual(failures, []);
  });
});
