import type { FastifyPluginAsync } from 'fastify';
import type { Config } from './config.js';
import type { Db } from './db/pool.js';
import { createAuth } from './http/auth.js';
import { createSlidingWindowLimiter } from './http/rate-limit.js';
import type { JobHandlers } from './jobs/catalog.js';
import type { JobQueue } from './jobs/queue.js';
import { createOutboundClient } from './outbound/client.js';
import { createActivityStore } from './modules/activity/store.js';
import { adminRoutes } from './modules/admin/routes.js';
import { apiKeyRoutes } from './modules/api-keys/routes.js';
import { createApiKeyService } from './modules/api-keys/service.js';
import { createApiKeyStore } from './modules/api-keys/store.js';
import { exchangeRateRoutes } from './modules/exchange-rates/routes.js';
import { createExchangeRateService } from './modules/exchange-rates/service.js';
import { createExchangeRateStore } from './modules/exchange-rates/store.js';
import { healthRoutes } from './modules/health/routes.js';
import { identityRoutes } from './modules/identity/routes.js';
import { createIdentityService } from './modules/identity/service.js';
import { createIdentityStore } from './modules/identity/store.js';
import { createTokenService } from './modules/identity/tokens.js';
import { ingestRoutes } from './modules/ingest/routes.js';
import { createIngestService } from './modules/ingest/service.js';
import { createIngestStore, ensureEventPartitions } from './modules/ingest/store.js';
import { sdkRoutes } from './modules/sdk/routes.js';
import { createBootstrapService } from './modules/sdk/service.js';
import { settingsRoutes } from './modules/settings/routes.js';
import { createSettingsService } from './modules/settings/service.js';
import { createSettingsStore } from './modules/settings/store.js';
import { tenancyRoutes } from './modules/tenancy/routes.js';
import { createTenancyService } from './modules/tenancy/service.js';
import { createTenancyStore } from './modules/tenancy/store.js';

/** Wires stores, services and routes. The only place that knows every module. */
export async function compose({ db, config, jobs }: { db: Db; config: Config; jobs: JobQueue }) {
  const limiter = createSlidingWindowLimiter();
  const activity = createActivityStore(db);
  const identityStore = createIdentityStore(db);
  const tokens = createTokenService({ store: identityStore, config });
  await tokens.init();
  const identity = createIdentityService({ store: identityStore, tokens });
  const tenancyStore = createTenancyStore(db);
  const tenancy = createTenancyService({ db, store: tenancyStore, users: identityStore, activity });
  const keys = createApiKeyService({ db, store: createApiKeyStore(db), activity, cacheTtlMs: config.keyCacheTtlMs });
  const settings = createSettingsService({ store: createSettingsStore(db), activity });
  const auth = createAuth({ identity, tenancy: tenancyStore, keys });
  const bootstrap = createBootstrapService({ settings, tenancy: tenancyStore });
  const ingest = createIngestService({ store: createIngestStore(db), settings, limiter });
  const rates = createExchangeRateService({ store: createExchangeRateStore(db) });
  await rates.init();
  // Shared by webhooks and export callbacks: one pool, one private-target policy.
  const outbound = createOutboundClient({ allowPrivateTargets: config.allowPrivateTargets });

  const plugins: FastifyPluginAsync[] = [
    healthRoutes({ db, version: config.version }),
    identityRoutes({ identity, tokens }),
    tenancyRoutes({ auth, tenancy }),
    apiKeyRoutes({ auth, keys }),
    settingsRoutes({ auth, settings }),
    adminRoutes({ auth, identity, tenancy: tenancyStore }),
    sdkRoutes({ auth, bootstrap, limiter }),
    ingestRoutes({ auth, ingest }),
    exchangeRateRoutes({ auth, rates }),
  ] as FastifyPluginAsync[];

  const jobHandlers: JobHandlers = {
    'maintenance.event-partitions': () => ensureEventPartitions(db),
  };

  return { plugins, jobHandlers, close: () => outbound.close() };
}
