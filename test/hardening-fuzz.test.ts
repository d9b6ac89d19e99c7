import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ERROR_STATUS } from '../src/http/errors.js';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

/*
 * Issue 20, item 7: requests derived from the OpenAPI document the service serves, with hostile
 * values (NUL, lone surrogates, 10,000-deep nesting, huge strings, wrong types) put into every string,
 * every object key and every free-form object of bodies, and into every query and path parameter,
 * sent with valid credentials. No answer may be a 5xx; in ingestion batches the valid events beside
 * the hostile one are stored exactly once. Bounded: a few thousand requests, 4 at a time.
 */

// The tenant's owner is also a Super Admin (startTestServer lists root@example.com), so every
// authentication level is met with valid credentials by one set of headers.
const suite = useTenantApp({
  // Nothing may leave the machine: the ad network points at a closed local port.
  AD_NETWORK_AUTH_URL: 'http://127.0.0.1:9/oauth',
  AD_NETWORK_API_URL: 'http://127.0.0.1:9/v1',
  AD_NETWORK_CLIENT_ID: 'fuzz',
  AD_NETWORK_CLIENT_SECRET: 'fuzz',
  AD_NETWORK_REDIRECT_URI: 'http://127.0.0.1:9/cb',
});

type Schema = Record<string, any>;
interface Doc {
  paths: Record<string, Record<string, { parameters?: Schema[]; requestBody?: Schema }>>;
  components?: { schemas?: Record<string, Schema> };
}

const LOCAL_URL = 'http://127.0.0.1:9/hook';
// Requests in flight: the answers mostly wait on the database, shared with other test files.
const PARALLEL = 12;
const DEEP = '__deep_10000__';
/** Stands for a value of another JSON type than the one found there. */
const WRONG_TYPE = '__wrong_type__';
const DEEP_JSON = '{"d":'.repeat(10_000) + '1' + '}'.repeat(10_000);
// Over every free-form byte limit and every schema maxLength.
const HUGE = 'x'.repeat(70_000);
/** What goes in place of a string or a free-form value. */
const HOSTILE_VALUES: [string, unknown][] = [
  ['NUL', 'a\u0000b'],
  ['lone surrogate', 'a\ud800b'],
  ['huge string', HUGE],
  ['wrong type', WRONG_TYPE],
  ['10,000-deep nesting', DEEP],
];
const HOSTILE_KEYS = ['k\u0000', '\udc00'];
/** Query and path values, already percent-encoded (a lone surrogate has no UTF-8: sent as its CESU bytes). */
const HOSTILE_PARAMS: [string, string][] = [
  ['NUL', 'a%00b'],
  ['lone surrogate bytes', '%ED%A0%80'],
  ['invalid UTF-8', '%FF%FE'],
  ['huge', 'y'.repeat(8000)],
  ['wrong type', 'not-a-number'],
];

/**
 * Issue 33: what a client may write for a number of a query or path parameter, each of which must get a
 * 400 naming the parameter (the number rule, src/http/numbers.ts), already percent-encoded.
 */
const NUMERIC_PARAMS: [string, string][] = [
  ['1e999', '1e999'],
  ['-1e999', '-1e999'],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['2^53 + 1', '9007199254740993'],
  ['hexadecimal', '0x10'],
  ['underscore', '1_000'],
  ['exponent', '1e2'],
  ['leading space', '%205'],
  ['trailing space', '5%20'],
  ['empty', ''],
];
/** JSON numbers a body may hold in place of any number: each must get a 400 naming the field. */
const NUMERIC_LITERALS = ['1e999', '-1e999', '9007199254740993'];
const literal = (n: string) => `__number_${n}__`;

const encodeBody = (v: unknown) => {
  let text = JSON.stringify(v).replaceAll(`"${DEEP}"`, DEEP_JSON);
  for (const n of NUMERIC_LITERALS) text = text.replaceAll(`"${literal(n)}"`, n);
  return text;
};

function resolve(doc: Doc, s: Schema | undefined): Schema {
  let cur = s ?? {};
  for (let i = 0; i < 10 && cur.$ref; i++) cur = doc.components?.schemas?.[String(cur.$ref).split('/').pop()!] ?? {};
  return cur;
}

function sampleString(s: Schema): string {
  const p: string = s.pattern ?? '';
  let v = 'abc';
  if (s.format === 'uuid' || p.includes('[0-9a-fA-F]{8}')) v = randomUUID();
  else if (s.format === 'date-time') v = new Date(Date.now() - 60_000).toISOString();
  else if (s.format === 'date' || p.includes('\\d{4}-\\d{2}-\\d{2}') || p.includes('[0-9]{4}-'))
    v = new Date().toISOString().slice(0, 10);
  else if (s.format === 'email') v = `fuzz-${randomUUID().slice(0, 8)}@example.com`;
  else if (s.format === 'uri' || p.startsWith('^https?') || p.startsWith('^https://'))
    v = p.startsWith('^https://') ? 'https://127.0.0.1:9/x' : LOCAL_URL;
  else if (p.includes('[0-9]{1,6}\\.')) v = '1.0.0';
  else if (p === '^[A-Za-z]{2}$' || p === '^[A-Z]{3}$') v = p.includes('{3}') ? 'EUR' : 'US';
  else if (p.startsWith('^[0-9]')) v = '123';
  else if (/url|uri/i.test(String(s.description ?? ''))) v = LOCAL_URL;
  if (s.minLength && v.length < s.minLength) v = v.padEnd(s.minLength, 'a');
  if (s.maxLength && v.length > s.maxLength) v = v.slice(0, s.maxLength);
  return v;
}

/** A value the schema accepts, as far as a simple generator can tell (all optional fields included). */
function sample(doc: Doc, schema: Schema | undefined, depth = 0): unknown {
  const s = resolve(doc, schema);
  if (depth > 8) return null;
  if ('const' in s) return s.const;
  if (s.enum) return s.enum[0];
  if ('default' in s && s.type !== 'object' && s.type !== 'array') return s.default;
  const alt = s.anyOf ?? s.oneOf;
  if (alt) return sample(doc, alt.find((a: Schema) => resolve(doc, a).type !== 'null') ?? alt[0], depth + 1);
  if (s.allOf) return Object.assign({}, ...s.allOf.map((a: Schema) => sample(doc, a, depth + 1)));
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'string':
      return sampleString(s);
    case 'integer':
    case 'number':
      return s.minimum ?? (s.maximum !== undefined ? Math.min(1, s.maximum) : 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => sample(doc, s.items, depth + 1));
    case 'object':
    default: {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) out[k] = sample(doc, v, depth + 1);
      if (!s.properties && s.additionalProperties && typeof s.additionalProperties === 'object')
        out.key1 = sample(doc, s.additionalProperties, depth + 1);
      return type === undefined && !s.properties ? 'abc' : out;
    }
  }
}

type Path = (string | number)[];

/** Every place a hostile value can go: strings, objects (new keys) and free-form values. */
function places(v: unknown, path: Path = [], out: { values: Path[]; objects: Path[] } = { values: [], objects: [] }) {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out.values.push(path);
  else if (Array.isArray(v)) {
    out.values.push(path);
    v.forEach((x, i) => places(x, [...path, i], out));
  } else if (v && typeof v === 'object') {
    if (path.length > 0) out.values.push(path);
    out.objects.push(path);
    for (const [k, x] of Object.entries(v)) places(x, [...path, k], out);
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  let cur = root as any;
  for (const k of path) cur = cur?.[k];
  return cur;
}

function isNumeric(doc: Doc, schema: Schema | undefined): boolean {
  const s = resolve(doc, schema);
  const alt: Schema[] | undefined = s.anyOf ?? s.oneOf;
  if (alt) return alt.every((a) => isNumeric(doc, a));
  return s.type === 'integer' || s.type === 'number';
}

/** A 400 validation_failed whose errors[] holds the field's pointer. */
function refusesField(text: string, field: string): boolean {
  const body = JSON.parse(text);
  return body.code === 'validation_failed' && (body.errors ?? []).some((e: { path: string }) => e.path === field);
}

function setAt(root: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(root) as any;
  let cur = copy;
  for (const k of path.slice(0, -1)) cur = cur[k];
  const last = path[path.length - 1];
  cur[last] = value === WRONG_TYPE ? (typeof cur[last] === 'string' ? 12345 : 'abc') : value;
  return copy;
}

function addKey(root: unknown, path: Path, key: string): unknown {
  const copy = structuredClone(root) as any;
  let cur = copy;
  for (const k of path) cur = cur[k];
  cur[key] = 'v';
  return copy;
}

interface Probe {
  method: string;
  url: string;
  body?: string;
  what: string;
  /** An ingestion batch of two valid events around a hostile one. */
  batch?: boolean;
  /** The answer must be a 400 whose errors name this field (a JSON pointer such as `/querystring/limit`). */
  refuses?: string;
}

const CODES = new Set(Object.keys(ERROR_STATUS));
function isProblem(contentType: string | null, text: string): boolean {
  if (!contentType?.startsWith('application/problem+json')) return false;
  const body = JSON.parse(text);
  return CODES.has(body.code) && ERROR_STATUS[body.code as keyof typeof ERROR_STATUS] === body.status;
}

describe('every route of the OpenAPI document, with hostile input', () => {
  it('never answers 5xx, and ingestion stores the valid events of a batch exactly once', {
    timeout: 240_000,
  }, async () => {
    const { c, server } = suite;
    const started = Date.now();
    const docRes = await c.get('/docs/json');
    assert.equal(docRes.status, 200);
    const doc = docRes.body as Doc;

    // Credentials for every level; the owner is a Super Admin too.
    const admin = await c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
    assert.equal(admin.status, 201, admin.text);
    const adminAuth = { authorization: `Bearer ${admin.body.token}` };
    const org = await c.post('/api/v1/organizations', { name: 'Fuzz' }, adminAuth);
    const app = await c.post(`/api/v1/organizations/${org.body.data.id}/apps`, { name: 'Fuzz' }, adminAuth);
    const key = await c.post(
      '/api/v1/sdk/api-keys',
      { environment: 'sandbox', permissions: ['export_data'] },
      { ...adminAuth, 'x-tenant-id': org.body.data.id, 'x-app-id': app.body.data.id },
    );
    assert.equal(key.status, 201, key.text);
    const headers: Record<string, string> = {
      ...adminAuth,
      'x-tenant-id': org.body.data.id,
      'x-app-id': app.body.data.id,
      'x-api-key': key.body.data.public_key,
      'x-api-secret': key.body.data.secret_key,
      'idempotency-key': randomUUID(),
    };

    const probes: Probe[] = [];
    const routes = new Set<string>();
    const ingestBatches: { body: string; valid: string[] }[] = [];
    for (const [template, ops] of Object.entries(doc.paths)) {
      if (template.startsWith('/docs') || template.startsWith('/console')) continue;
      for (const [method, op] of Object.entries(ops)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        routes.add(`${method.toUpperCase()} ${template}`);
        const params = op.parameters ?? [];
        const value = (p: Schema) => encodeURIComponent(String(sample(doc, p.schema)));
        const build = (override?: { name: string; raw: string }) => {
          let path = template;
          const query: string[] = [];
          for (const p of params) {
            const v = override && override.name === p.name ? override.raw : value(p);
            if (p.in === 'path') path = path.replace(`{${p.name}}`, v);
            else if (p.in === 'query') query.push(`${encodeURIComponent(p.name)}=${v}`);
          }
          return path + (query.length ? `?${query.join('&')}` : '');
        };
        const bodySchema = op.requestBody?.content?.['application/json']?.schema;
        const base = bodySchema ? sample(doc, bodySchema) : undefined;
        const M = method.toUpperCase();
        const add = (what: string, url: string, body?: unknown, batch = false, refuses?: string) =>
          probes.push({
            method: M,
            url,
            body: body === undefined ? undefined : typeof body === 'string' ? body : encodeBody(body),
            what: `${M} ${template} ${what}`,
            batch,
            refuses,
          });
        add('baseline', build(), base);
        for (const p of params.filter((x) => x.in === 'path' || x.in === 'query')) {
          for (const [name, raw] of HOSTILE_PARAMS)
            add(`${p.in} ${p.name}: ${name}`, build({ name: p.name, raw }), base);
          if (!isNumeric(doc, p.schema)) continue;
          const field = `/${p.in === 'path' ? 'params' : 'querystring'}/${p.name}`;
          for (const [name, raw] of NUMERIC_PARAMS)
            add(`${p.in} ${p.name}: ${name}`, build({ name: p.name, raw }), base, false, field);
          if (p.in === 'query') {
            const url = build();
            const twice = `${url}&${encodeURIComponent(p.name)}=${value(p)}`;
            add(`query ${p.name}: given twice`, twice, base, false, field);
          }
        }
        if (template === '/api/v1/ingest/events') {
          // Hostile values in one event, between two valid ones.
          const ev = makeEvent({ properties: { plan: 'pro', tags: ['a'], nested: { x: 'y' } } });
          const { values, objects } = places(ev);
          const variants: [string, unknown][] = [];
          for (const p of values)
            for (const [name, v] of HOSTILE_VALUES)
              variants.push([`event${p.map((k) => `/${k}`).join('')}: ${name}`, setAt(ev, p, v)]);
          for (const p of objects)
            for (const k of HOSTILE_KEYS)
              variants.push([`event${p.map((x) => `/${x}`).join('')} key ${JSON.stringify(k)}`, addKey(ev, p, k)]);
          for (const p of values.filter((x) => typeof valueAt(ev, x) === 'number'))
            for (const n of NUMERIC_LITERALS)
              variants.push([`event${p.map((k) => `/${k}`).join('')}: ${n}`, setAt(ev, p, literal(n))]);
          for (const [what, bad] of variants) {
            const valid = [makeEvent(), makeEvent()];
            const body = encodeBody({ batch: [valid[0], { ...(bad as object), event_id: randomUUID() }, valid[1]] });
            ingestBatches.push({ body, valid: valid.map((e) => e.event_id) });
            add(`batch with ${what}`, build(), body, true);
            // One batch in three is sent twice: a retry stores nothing twice.
            if (ingestBatches.length % 3 === 0) add(`retry of batch with ${what}`, build(), body, true);
          }
          continue;
        }
        if (base === undefined) continue;
        const { values, objects } = places(base);
        for (const p of values)
          for (const [name, v] of HOSTILE_VALUES)
            add(`body${p.map((k) => `/${k}`).join('')}: ${name}`, build(), setAt(base, p, v));
        for (const p of objects)
          for (const k of HOSTILE_KEYS)
            add(`body${p.map((x) => `/${x}`).join('')} key ${JSON.stringify(k)}`, build(), addKey(base, p, k));
        for (const p of values.filter((x) => typeof valueAt(base, x) === 'number')) {
          const pointer = `/body${p.map((k) => `/${k}`).join('')}`;
          for (const n of NUMERIC_LITERALS)
            add(`${pointer.slice(1)}: ${n}`, build(), setAt(base, p, literal(n)), false, pointer);
        }
        for (const [name, v] of [
          ['array body', []],
          ['string body', 'x'],
          ['null body', null],
          ['deep body', DEEP],
        ] as const)
          add(name, build(), v);
      }
    }

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const answers = new Map<Probe, { status: number; body: any }>();
    let next = 0;
    const spent = new Map<string, number>();
    const send = async (p: Probe) => {
      const t0 = Date.now();
      const route = p.what.split(' ').slice(0, 2).join(' ');
      const ctl = new AbortController();
      // Generous: an operator route such as a forced analytics fold is slow on a loaded machine, not broken.
      const timer = setTimeout(() => ctl.abort(), 60_000);
      try {
        const res = await fetch(server.url + p.url, {
          method: p.method,
          headers: { ...headers, ...(p.body !== undefined ? { 'content-type': 'application/json' } : {}) },
          body: p.body,
          signal: ctl.signal,
        });
        // Event streams stay open: the status is the answer.
        const text = res.headers.get('content-type')?.startsWith('text/event-stream')
          ? (await res.body?.cancel(), '')
          : await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) failures.push(`${p.what} -> ${res.status} ${text.slice(0, 200)}`);
        else if (p.refuses && (res.status !== 400 || !refusesField(text, p.refuses)))
          failures.push(`${p.what} -> ${res.status}, not a 400 naming ${p.refuses}: ${text.slice(0, 200)}`);
        else if (res.status >= 400 && !isProblem(res.headers.get('content-type'), text))
          failures.push(`${p.what} -> ${res.status} not problem+json: ${text.slice(0, 200)}`);
        if (p.batch) answers.set(p, { status: res.status, body: text ? JSON.parse(text) : null });
      } catch (err) {
        failures.push(`${p.what} -> ${(err as Error).message}`);
      } finally {
        clearTimeout(timer);
        spent.set(route, (spent.get(route) ?? 0) + Date.now() - t0);
      }
    };
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < probes.length) await send(probes[next++]);
      }),
    );

    const ids = ingestBatches.flatMap((b) => b.valid);
    const { rows } = await server.db.query<{ event_id: string; n: number }>(
      'SELECT event_id::text, count(*)::int AS n FROM events WHERE event_id = ANY ($1::uuid[]) GROUP BY 1',
      [ids],
    );
    const stored = new Map(rows.map((r) => [r.event_id, r.n]));
    const missing = ids.filter((id) => stored.get(id) !== 1);
    const requests = probes.length;
    console.log(
      `hostile-input fuzz: ${requests} requests over ${routes.size} routes in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; ${ingestBatches.length} ingestion batches`,
    );
    if (process.env.FUZZ_PROFILE) console.log([...spent].sort((a, b) => b[1] - a[1]).slice(0, 15));
    assert.ok(routes.size > 50, `routes found in the document: ${routes.size}`);
    assert.ok(ingestBatches.length > 50, 'ingestion batches with hostile events');
    assert.deepEqual(failures.slice(0, 25), [], `${failures.length} answers were 5xx or failed`);
    assert.deepEqual(missing.slice(0, 10), [], `${missing.length} valid events not stored exactly once`);
    for (const [p, a] of answers)
      if (a.status === 202) assert.ok(a.body.accepted + a.body.rejected === 3, `${p.what}: accepted + rejected = 3`);
  });
});
