import assert from 'node:assert/strict';
import { startFakeAdNetwork, type FakeAdNetwork, type FakeOptions } from '../../tools/fake-adnetwork/server.js';
import { client, createTenant, type Client, type Tenant } from './client.js';
import { startTestServer, type TestServer } from './server.js';

export const REDIRECT_URI = 'https://console.example.com/ad-network/callback';

/** The service pointed at a fresh fake ad network. */
export async function startWithFake(
  opts: FakeOptions = {},
): Promise<{ fake: FakeAdNetwork; server: TestServer; c: Client }> {
  const fake = await startFakeAdNetwork(opts);
  const server = await startTestServer({
    AD_NETWORK_AUTH_URL: fake.authUrl,
    AD_NETWORK_API_URL: fake.apiUrl,
    AD_NETWORK_CLIENT_ID: fake.clientId,
    AD_NETWORK_CLIENT_SECRET: fake.clientSecret,
    AD_NETWORK_REDIRECT_URI: REDIRECT_URI,
  });
  return { fake, server, c: client(server.url) };
}

/** Follows the authorize URL like a browser would and returns the code and state sent to the redirect URI. */
export async function authorize(url: string): Promise<{ code: string; state: string }> {
  const res = await fetch(url, { redirect: 'manual' });
  assert.equal(res.status, 302);
  const to = new URL(res.headers.get('location')!);
  assert.equal(`${to.origin}${to.pathname}`, REDIRECT_URI);
  return { code: to.searchParams.get('code')!, state: to.searchParams.get('state')! };
}

export async function connect(c: Client, t: Tenant) {
  const start = await c.post('/api/v1/ad-network/connection/start', {}, t.console);
  assert.equal(start.status, 200, start.text);
  const { code, state } = await authorize(start.body.data.authorize_url);
  const cb = await c.post('/api/v1/ad-network/connection/callback', { code, state }, t.console);
  assert.equal(cb.status, 200, cb.text);
  return cb.body.data;
}

export async function superAdmin(c: Client): Promise<Record<string, string>> {
  const t = await createTenant(c, { email: 'root@example.com' });
  return { authorization: `Bearer ${t.token}` };
}

export async function setLive(c: Client, root: Record<string, string>, t: Tenant, accountId: string, enabled = true) {
  const r = await c.put(
    `/api/v1/admin/ad-network/apps/${t.appId}/accounts/${accountId}/live-writes`,
    { enabled },
    root,
  );
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data.live_writes, enabled);
}

export async function setRate(c: Client, root: Record<string, string>, currency: string, usdPerUnit: number) {
  const today = new Date();
  const days = [-3, -2, -1, 0, 1].map((d) => new Date(today.getTime() + d * 86_400_000).toISOString().slice(0, 10));
  const r = await c.put(
    '/api/v1/admin/exchange-rates',
    { rates: days.map((day) => ({ currency, day, usd_per_unit: usdPerUnit })) },
    root,
  );
  assert.equal(r.status, 200, r.text);
}

export const acctPath = (id: string) => `/api/v1/ad-network/accounts/${id}`;

export const writesTo = (fake: FakeAdNetwork, method: string, re: RegExp) =>
  fake.world.requests.filter((r) => r.method === method && re.test(r.path));

/**
 * A service beside the fake with one tenant connected, EUR at 1.25 USD and live writes on for both of the
 * fake's accounts: the setup of the tests that write to the network.
 */
export async function startLiveTenant(seed: number) {
  const { fake, server, c } = await startWithFake({ seed });
  const root = await superAdmin(c);
  const t = await createTenant(c);
  await connect(c, t);
  await setRate(c, root, 'EUR', 1.25);
  await setLive(c, root, t, fake.accounts.usd);
  await setLive(c, root, t, fake.accounts.eur);
  return { fake, server, c, t, USD: fake.accounts.usd, EUR: fake.accounts.eur };
}
