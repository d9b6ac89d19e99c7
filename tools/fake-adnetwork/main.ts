// `npm run fake-adnetwork`: runs the fake on its own. Env: FAKE_ADNETWORK_PORT (default 4010),
// FAKE_ADNETWORK_EXPIRES_IN, FAKE_ADNETWORK_CLIENT_ID / _SECRET, FAKE_ADNETWORK_SEED.
import { startFakeAdNetwork } from './server.js';

const env = process.env;
const fake = await startFakeAdNetwork({
  port: Number(env.FAKE_ADNETWORK_PORT ?? 4010),
  host: env.FAKE_ADNETWORK_HOST ?? '127.0.0.1',
  expiresIn: env.FAKE_ADNETWORK_EXPIRES_IN ? Number(env.FAKE_ADNETWORK_EXPIRES_IN) : undefined,
  clientId: env.FAKE_ADNETWORK_CLIENT_ID,
  clientSecret: env.FAKE_ADNETWORK_CLIENT_SECRET,
  seed: env.FAKE_ADNETWORK_SEED ? Number(env.FAKE_ADNETWORK_SEED) : undefined,
  refreshMode: env.FAKE_ADNETWORK_REFRESH === 'rotating' ? 'rotating' : 'static',
  log: env.FAKE_ADNETWORK_LOG === '1',
});
console.log(`fake ad network listening on ${fake.url}
  AD_NETWORK_AUTH_URL=${fake.authUrl}
  AD_NETWORK_API_URL=${fake.apiUrl}
  AD_NETWORK_CLIENT_ID=${fake.clientId}
  AD_NETWORK_CLIENT_SECRET=${fake.clientSecret}
  operator switches: POST ${fake.url}/__operator/<disapproveAd|suspendAccount|exhaustDailyCap|force429|revokeAll|...> with a JSON array of arguments`);

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    void fake.stop().then(() => process.exit(0));
  });
}
