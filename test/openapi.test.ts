import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { EXAMPLES } from '../src/http/openapi-examples.js';
import { client, createTenant, makeEvent, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// The document a client generator reads (GET /docs/json): valid OpenAPI 3, every operation's security
// derived from its route's authentication, examples that fit the generated types and a real server.

const root = path.resolve(import.meta.dirname, '..');
const consoleModules = path.join(root, 'console', 'node_modules');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const UUID = '00000000-0000-4000-8000-000000000000';
// Asynchronous: the program calls the server, which runs in this process.
const run = promisify(execFile);

type Operation = { security?: Record<string, string[]>[]; 'x-min-role'?: string; requestBody?: unknown };
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown> };
};

let server: TestServer;
let t: Tenant;
let doc: Doc;
const work =
  (mkdirSync(path.join(root, '.test-data'), { recursive: true }),
  mkdtempSync(path.join(root, '.test-data', 'openapi-')));

before(async () => {
  server = await startTestServer();
  t = await createTenant(client(server.url));
  doc = await (await fetch(`${server.url}/docs/json`)).json();
});
after(async () => {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.entries(item).map(([method, op]) => ({ path: p, method, op })),
  );
const op = (method: string, p: string) => doc.paths[p]?.[method];

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3 document with only real methods', async () => {
    assert.match(doc.openapi, /^3\./);
    const result = await new Validator().validate(doc as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
    for (const { path: p, method } of operations()) assert.ok(METHODS.includes(method), `${method} ${p}`);
    assert.deepEqual(Object.keys(doc.paths['/api/v1/ad-network/webhooks']).sort(), [
      'delete',
      'get',
      'patch',
      'post',
      'put',
    ]);
  });

  it('declares the security of every operation from its route', () => {
    for (const { path: p, method, op: o } of operations()) {
      assert.ok(Array.isArray(o.security), `${method} ${p} declares its security`);
      for (const req of o.security)
        for (const scheme of Object.keys(req)) assert.ok(doc.components.securitySchemes[scheme], scheme);
    }
    assert.deepEqual(op('post', '/api/v1/ingest/events')!.security, [{ sdkKey: [] }]);
    assert.deepEqual(op('post', '/api/v1/sdk/option-sets/{setId}/sync')!.security, [{ sdkKey: [], apiSecret: [] }]);
    assert.deepEqual(op('get', '/api/v1/sdk/events/export')!.security, [{ exportKey: [] }]);
    // Issue 33: the ad network's refused webhook operations declared none.
    for (const m of ['get', 'post', 'put', 'patch', 'delete'])
      assert.deepEqual(op(m, '/api/v1/ad-network/webhooks')!.security, [{ bearer: [], tenant: [], app: [] }], m);
    assert.deepEqual(op('get', '/api/v1/analytics/kpis')!.security, [{ bearer: [], tenant: [], app: [] }]);
    assert.equal(op('get', '/api/v1/analytics/kpis')!['x-min-role'], 'viewer');
    assert.equal(op('post', '/api/v1/sdk/api-keys')!['x-min-role'], 'admin');
    assert.deepEqual(op('get', '/api/v1/me')!.security, [{ bearer: [] }]);
    assert.deepEqual(op('put', '/api/v1/admin/signup-enabled')!.security, [{ superAdmin: [] }]);
    assert.deepEqual(op('post', '/api/v1/auth/login')!.security, []);
  });

  it('documents each ingested event as an EventEnvelope, while the route takes any item and checks each alone', async () => {
    type Body = {
      content: Record<string, { schema: { properties: { batch: { items: unknown; maxItems: number } } } }>;
    };
    const batch = (op('post', '/api/v1/ingest/events')!.requestBody as Body).content['application/json'].schema
      .properties.batch;
    assert.deepEqual(batch.items, { $ref: '#/components/schemas/EventEnvelope' });
    assert.equal(batch.maxItems, 500);
    // Not the validated schema: a bad item is rejected alone, with its index, and the rest is stored.
    const res = await client(server.url).post(
      '/api/v1/ingest/events',
      { batch: [{ nonsense: true }, makeEvent()] },
      { 'x-api-key': t.live.public_key },
    );
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.accepted, 1);
    assert.equal(res.body.errors[0].index, 0);
  });

  it('matches what the server enforces: without credentials a secured operation answers 401, a public one never', async () => {
    const results: { name: string; secured: boolean; status: number }[] = [];
    for (const { path: p, method, op: o } of operations()) {
      const url = server.url + p.replace(/\{[^}]+\}/g, UUID);
      const body = o.requestBody ? { body: '{}', headers: { 'content-type': 'application/json' } } : {};
      const res = await fetch(url, { method: method.toUpperCase(), ...body, signal: AbortSignal.timeout(10_000) });
      await res.body?.cancel();
      results.push({ name: `${method} ${p}`, secured: o.security!.length > 0, status: res.status });
    }
    // Schema validation runs before authentication, so a secured call with a bad body may answer 400 first.
    const wrong = results.filter((r) =>
      r.secured ? ![400, 401].includes(r.status) : r.status === 401 || r.status === 403,
    );
    assert.deepEqual(wrong, []);
    assert.ok(results.filter((r) => r.secured && r.status === 401).length > 50, 'most secured operations answer 401');
  });

  it('generates a typed client whose types accept the examples and a program that calls the server', async () => {
    writeFileSync(path.join(work, 'openapi.json'), JSON.stringify(doc));
    await run(
      process.execPath,
      [path.join(consoleModules, 'openapi-typescript', 'bin', 'cli.js'), 'openapi.json', '-o', 'schema.d.ts'],
      { cwd: work },
    );

    // Each example typed by the generated client: tsc rejects one that does not fit its schema.
    const typed = Object.entries(EXAMPLES).flatMap(([route, ex], i) => {
      const [method, url] = route.split(' ');
      const at = `paths['${url.replace(/:(\w+)/g, '{$1}')}']['${method.toLowerCase()}']`;
      const body =
        ex.body === undefined
          ? []
          : [
              `const body${i}: NonNullable<${at}['requestBody']>['content']['application/json'] = ${JSON.stringify(ex.body)};`,
            ];
      const responses = Object.entries(ex.responses ?? {}).map(
        ([status, value]) =>
          `const res${i}_${status}: ${at}['responses'][${status}]['content']['application/json'] = ${JSON.stringify(value)};`,
      );
      return [...body, ...responses];
    });
    const program = `
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';
${typed.join('\n')}
void [${typed.map((l) => l.slice(6, l.indexOf(':'))).join(', ')}];

const api = createClient<paths>({ baseUrl: process.env.BASE_URL });
const sdk = { 'x-api-key': process.env.PUBLIC_KEY! };
const pair = { ...sdk, 'x-api-secret': process.env.SECRET_KEY! };
const examples = ${JSON.stringify(
      Object.fromEntries(
        Object.entries(EXAMPLES)
          .filter(([, e]) => e.body)
          .map(([r, e]) => [r, e.body]),
      ),
    )};

// The example event with a current time: events over 90 days old are refused.
type Envelope = components['schemas']['EventEnvelope'];
const event: Envelope = { ...(examples['POST /api/v1/ingest/events'].batch[0] as Envelope), ts_ms: Date.now() };
type IngestBody = NonNullable<paths['/api/v1/ingest/events']['post']['requestBody']>['content']['application/json'];
// @ts-expect-error each batch item is an EventEnvelope in the document: platform is ios or android
const wrong: IngestBody = { batch: [{ ...event, device: { ...event.device, platform: 'windows' } }] };
void wrong;
const ingested = await api.POST('/api/v1/ingest/events', { headers: sdk, body: { batch: [event] } });
const accepted: number | undefined = ingested.data?.accepted;
const identify = await api.POST('/api/v1/ingest/identify', { headers: sdk, body: examples['POST /api/v1/ingest/identify'] as never });
const synced = await api.POST('/api/v1/sdk/option-sets/{setId}/sync', {
  headers: pair,
  params: { path: { setId: 'countries' } },
  body: { mode: 'merge', items: [{ id: 'fr', value: 'FR', label: 'France', sort_order: 1, option_data: { dial_code: '+33' } }] },
});
const page = await api.GET('/api/v1/sdk/option-sets/{setId}', { headers: sdk, params: { path: { setId: 'countries' }, query: { limit: 10 } } });
const labels: string[] | undefined = page.data?.data.items.map((item) => item.label);
const version = await api.GET('/api/v1/sdk/config-bundle/version', { headers: sdk });
const bundleVersion: number | undefined = version.data?.data.bundle_version;
// @ts-expect-error user_id is a string in the document
await api.POST('/api/v1/ingest/identify', { headers: sdk, body: { anon_id: '', user_id: 5, ts_ms: 0 } });
console.log(JSON.stringify({ accepted, linked: identify.data?.linked, synced: synced.data?.data.version, labels, bundleVersion }));
`;
    writeFileSync(path.join(work, 'client.ts'), program);
    writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'esnext',
        moduleResolution: 'bundler',
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules', '@types')],
      },
      files: ['client.ts'],
    };
    writeFileSync(path.join(work, 'tsconfig.json'), JSON.stringify(tsconfig));
    try {
      await run(process.execPath, [path.join(consoleModules, 'typescript', 'bin', 'tsc'), '-p', work], { cwd: work });
    } catch (err) {
      assert.fail(
        `the program does not type-check against the generated client:\n${(err as { stdout: string }).stdout}`,
      );
    }

    const env = { ...process.env, BASE_URL: server.url, PUBLIC_KEY: t.live.public_key, SECRET_KEY: t.live.secret_key };
    const out = JSON.parse(
      (await run(process.execPath, ['--import', 'tsx', path.join(work, 'client.ts')], { cwd: root, env })).stdout,
    );
    assert.deepEqual(out, {
      accepted: 1,
      linked: true,
      synced: 1,
      labels: ['France'],
      bundleVersion: out.bundleVersion,
    });
    assert.equal(typeof out.bundleVersion, 'number');
  });
});
