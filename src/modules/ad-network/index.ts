import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import { createSecretBox } from '../../lib/secret-box.js';
import type { Db } from '../../db/pool.js';
import type { Auth } from '../../http/auth.js';
import type { ActivityStore } from '../activity/store.js';
import type { ExchangeRateService } from '../exchange-rates/service.js';
import { createNetworkClient } from './client.js';
import { createConnectionService } from './connection.js';
import { createExperimentStore } from './experiment-store.js';
import { createExperiments } from './experiments.js';
import { createSync } from './jobs.js';
import { createMemoryAdNetworkLimiter, type AdNetworkLimiter } from './limiter.js';
import { createManagement } from './management.js';
import { adNetworkRoutes } from './routes.js';
import { adNetworkInsightRoutes } from './routes-insights.js';
import { adNetworkManageRoutes } from './routes-manage.js';
import { createNetworkOps } from './service.js';
import { createStatsService } from './stats.js';
import { createStatsStore } from './stats-store.js';
import { createAdNetworkStore } from './store.js';
import { createWriteJournal } from './writes.js';

/** Builds the ad-network capability. The limiter is injectable (shared storage in production, failure injection in tests). */
export function createAdNetworkModule(deps: {
  db: Db;
  config: Config;
  activity: ActivityStore;
  rates: ExchangeRateService;
  limiter?: AdNetworkLimiter;
}) {
  const { db, config, activity, rates } = deps;
  const store = createAdNetworkStore(db);
  // Opens tokens sealed under either key during a rotation (the key check ran at start-up).
  const box = createSecretBox(config.encryptionKey, config.encryptionKeyPrevious);
  const client = createNetworkClient({
    apiUrl: config.adNetwork.apiUrl,
    limiter: deps.limiter ?? createMemoryAdNetworkLimiter(),
  });
  const conn = createConnectionService({ db, store, config, box, client, activity });
  const journal = createWriteJournal({ store });
  const ops = createNetworkOps({ store, conn, journal, rates });
  const mgmt = createManagement({ ops });
  const stats = createStatsService({ conn, store: createStatsStore(db), rates });
  const experiments = createExperiments({ store: createExperimentStore(db), writes: store, mgmt, stats });
  const sync = createSync({ store, conn, stats, activity });
  return {
    store,
    client,
    conn,
    ops,
    mgmt,
    stats,
    experiments,
    sync,
    plugins: (auth: Auth): FastifyPluginAsync[] =>
      [
        adNetworkRoutes({ auth, conn, store, sync, activity }),
        adNetworkManageRoutes({ auth, ops, mgmt }),
        adNetworkInsightRoutes({ auth, ops, stats, experiments }),
      ] as FastifyPluginAsync[],
    close: () => client.close(),
  };
}

export type AdNetworkModule = ReturnType<typeof createAdNetworkModule>;
