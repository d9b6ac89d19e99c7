import { after, before } from 'node:test';
import { client, createTenant, type Client, type Tenant } from './client.js';
import { startTestServer, type TestServer } from './server.js';

export interface TenantApp {
  server: TestServer;
  /** An HTTP client for the server. */
  c: Client;
  /** One tenant (owner, org, app, keys) made for the file. */
  t: Tenant;
}

/**
 * The usual set-up of a test file: a server on a fresh database and one tenant, made before the
 * file's tests and stopped after them. The fields are filled in once `before` has run.
 */
export function useTenantApp(env: Record<string, string> = {}): TenantApp {
  const s = {} as TenantApp;
  before(async () => {
    s.server = await startTestServer(env);
    s.c = client(s.server.url);
    s.t = await createTenant(s.c);
  });
  after(() => s.server.stop());
  return s;
}
