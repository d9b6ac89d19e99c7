import net from 'node:net';
import { randomUUID } from 'node:crypto';

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** A small fetch wrapper: JSON in, JSON (or text) out, status never thrown. */
export function client(baseUrl: string, defaults: Record<string, string> = {}) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Res<T>> {
    const res = await fetch(baseUrl + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...defaults, ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  }
  return {
    get: <T = any>(p: string, h?: Record<string, string>) => call<T>('GET', p, undefined, h),
    post: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('POST', p, b ?? {}, h),
    put: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('PUT', p, b ?? {}, h),
    patch: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('PATCH', p, b ?? {}, h),
    del: <T = any>(p: string, h?: Record<string, string>) => call<T>('DELETE', p, undefined, h),
    raw: call,
  };
}

export type Client = ReturnType<typeof client>;

export interface Tenant {
  token: string;
  userId: string;
  orgId: string;
  appId: string;
  /** Headers of a Customer-JWT call as the owner. */
  console: Record<string, string>;
  live: { id: string; public_key: string; secret_key: string };
  sandbox: { id: string; public_key: string; secret_key: string };
}

let counter = 0;

/** Signs up a user, creates an org, an app and a production + sandbox key. */
export async function createTenant(c: Client, opts: { email?: string; permissions?: string[] } = {}): Promise<Tenant> {
  const email = opts.email ?? `user${Date.now()}${counter++}-${randomUUID().slice(0, 6)}@example.com`;
  const signup = await c.post('/api/v1/auth/signup', { email, password: 'correct horse battery', name: 'Test' });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${signup.text}`);
  const token = signup.body.token as string;
  const auth = { authorization: `Bearer ${token}` };
  const org = await c.post('/api/v1/organizations', { name: 'Org' }, auth);
  const app = await c.post(`/api/v1/organizations/${org.body.data.id}/apps`, { name: 'App' }, auth);
  const consoleHeaders = { ...auth, 'x-tenant-id': org.body.data.id, 'x-app-id': app.body.data.id };
  const live = await c.post(
    '/api/v1/sdk/api-keys',
    { environment: 'production', permissions: opts.permissions ?? ['export_data'] },
    consoleHeaders,
  );
  const sandbox = await c.post(
    '/api/v1/sdk/api-keys',
    { environment: 'sandbox', permissions: opts.permissions ?? ['export_data'] },
    consoleHeaders,
  );
  if (live.status !== 201 || sandbox.status !== 201) throw new Error(`key creation failed: ${live.text}`);
  return {
    token,
    userId: signup.body.user.id,
    orgId: org.body.data.id,
    appId: app.body.data.id,
    console: consoleHeaders,
    live: live.body.data,
    sandbox: sandbox.body.data,
  };
}

/** A valid event envelope; override any part. */
export function makeEvent(over: Record<string, any> = {}): Record<string, any> {
  const base = {
    schema_version: 1,
    event_id: randomUUID(),
    event_name: 'app_open',
    ts_ms: Date.now() - 1000,
    user: { anon_id: randomUUID() },
    device: { platform: 'ios', os: '17.4', app_version: '1.2.3', sdk_version: '2.0.0', locale: 'en_US', country: 'US' },
    context: { session_id: randomUUID() },
    properties: {},
    privacy: { consent: { analytics: true } },
  };
  return { ...base, ...over };
}

/** A stored event as the export API answers it (the fields the tests read). */
export interface ExportedEvent {
  event_id: string;
  event_name: string;
  ts_ms: number;
  user: { anon_id: string; user_id?: string };
  device: Record<string, unknown>;
  context: { session_id: string; client_seq: number; [k: string]: unknown };
  properties: Record<string, any>;
}

/** One device's events of the last hour through the export API, in the order it sent them (client_seq). */
export async function deviceEvents(c: Client, publicKey: string, anonId: string): Promise<ExportedEvent[]> {
  const hour = 3600_000;
  const q = `start_date=${new Date(Date.now() - hour).toISOString()}&end_date=${new Date(Date.now() + hour).toISOString()}&limit=1000`;
  const r = await c.get(`/api/v1/sdk/events/export?${q}`, { 'x-api-key': publicKey });
  if (r.status !== 200) throw new Error(`export failed: ${r.status} ${r.text}`);
  return (r.body.data as ExportedEvent[])
    .filter((e) => e.user.anon_id === anonId)
    .sort((a, b) => a.context.client_seq - b.context.client_seq);
}

/**
 * One request written by hand on its own connection (a header twice, no Host, bytes fetch would
 * refuse to send), and everything the server answered until it closed the connection.
 */
export function rawRequest(baseUrl: string, text: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(text));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}
