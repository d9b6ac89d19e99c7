import type { FastifyPluginAsync } from 'fastify';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createNotifications } from './db/notifications.js';
import type { Db } from './db/pool.js';
import { createAuth } from './http/auth.js';
import { createGlobalLimiter, createSlidingWindowLimiter } from './http/rate-limit.js';
import { createLimitStore, createPgAdNetworkLimiter } from './http/rate-limit-store.js';
import { servesHttps } from './http/security-headers.js';
import { createBackgroundTasks } from './jobs/background.js';
import type { JobHandlers } from './jobs/catalog.js';
import type { JobQueue } from './jobs/queue.js';
import { createOutboundClient } from './outbound/client.js';
import { prepareSecrets } from './db/key-check.js';
import { createSecretBox } from './lib/secret-box.js';
import { createActivityStore } from './modules/activity/store.js';
import { createAdNetworkModule } from './modules/ad-network/index.js';
import { createFunnelAnswers } from './modules/analytics/funnel-answers.js';
import { createFoldWorkers } from './modules/analytics/fold/workers.js';
import { createFunnelStore } from './modules/analytics/funnel-store.js';
import { createRollupRunner, kickRollupChain, rollupJobHandler } from './modules/analytics/jobs.js';
import { createAnalyticsReadModel } from './modules/analytics/read-model.js';
import { analyticsRoutes } from './modules/analytics/routes.js';
import { createAnalyticsService } from './modules/analytics/service.js';
import { createRollupStore } from './modules/analytics/store.js';
import { adminRoutes } from './modules/admin/routes.js';
import { apiKeyRoutes } from './modules/api-keys/routes.js';
import { consoleRoutes } from './modules/console/routes.js';
import { createApiKeyService } from './modules/api-keys/service.js';
import { createApiKeyStore } from './modules/api-keys/store.js';
import { exchangeRateRoutes } from './modules/exchange-rates/routes.js';
import { createExperimentFoldStore } from './modules/experiments/fold-store.js';
import { createExperimentFold, experimentFoldJob, kickExperimentFold } from './modules/experiments/jobs.js';
import { createExperimentReadModel } from './modules/experiments/read-model.js';
import { experimentRoutes } from './modules/experiments/routes.js';
import { createExperimentService } from './modules/experiments/service.js';
import { createExperimentStore } from './modules/experiments/store.js';
import { createExportJobs } from './modules/export/jobs.js';
import { createExportReadModel } from './modules/export/read-model.js';
import { exportRoutes } from './modules/export/routes.js';
import { createExportService } from './modules/export/service.js';
import { createLocalStorage } from './modules/export/storage.js';
import { createExportStore } from './modules/export/store.js';
import { createExchangeRateService } from './modules/exchange-rates/service.js';
import { createExchangeRateStore } from './modules/exchange-rates/store.js';
import { createLifecycle } from './modules/health/lifecycle.js';
import { healthRoutes } from './modules/health/routes.js';
import { createMetrics } from './modules/metrics/metrics.js';
import { metricsRoutes } from './modules/metrics/routes.js';
import { createMetricsStore } from './modules/metrics/store.js';
import { createRefreshTokens } from './modules/identity/refresh.js';
import { identityRoutes } from './modules/identity/routes.js';
import { createIdentityService } from './modules/identity/service.js';
import { createSignInThrottle } from './modules/identity/sign-in-throttle.js';
import { createIdentityStore } from './modules/identity/store.js';
import { createTokenService } from './modules/identity/tokens.js';
import { createGroupCommit } from './modules/ingest/group-commit.js';
import { ingestRoutes } from './modules/ingest/routes.js';
import { createEraseStore } from './modules/privacy/erase-store.js';
import { createRetentionJob, createRetentionStore } from './modules/privacy/retention.js';
import { createDeletionJob } from './modules/privacy/jobs.js';
import { privacyRoutes } from './modules/privacy/routes.js';
import { createPrivacyService } from './modules/privacy/service.js';
import { createPrivacyStore } from './modules/privacy/store.js';
import { createSuppressionCheck } from './modules/privacy/suppression.js';
import { createIngestService } from './modules/ingest/service.js';
import { createIngestStore, ensureEventPartitions } from './modules/ingest/store.js';
import { optionSetConsoleRoutes } from './modules/option-sets/console-routes.js';
import { createOptionSetReadModel } from './modules/option-sets/read-model.js';
import { optionSetRoutes } from './modules/option-sets/routes.js';
import { bundleRoutes } from './modules/bundles/routes.js';
import { VERSION_PATH, versionFastPath } from './modules/bundles/version-fast-path.js';
import { createBundleService } from './modules/bundles/service.js';
import { createBundleStore } from './modules/bundles/store.js';
import { contentRoutes } from './modules/content/routes.js';
import { createContentService } from './modules/content/service.js';
import { createContentStore } from './modules/content/store.js';
import { createOptionSetService } from './modules/option-sets/service.js';
import { createOptionSetStore } from './modules/option-sets/store.js';
import { configStreamRoutes, STREAM_PATH } from './modules/config-stream/routes.js';
import { createConfigStreamService } from './modules/config-stream/service.js';
import { createConfigChangeStore } from './modules/config-stream/store.js';
import { sdkRoutes } from './modules/sdk/routes.js';
import { createBootstrapService } from './modules/sdk/service.js';
import { settingsRoutes } from './modules/settings/routes.js';
import { createSettingsService } from './modules/settings/service.js';
import { createSettingsStore } from './modules/settings/store.js';
import { tenancyRoutes } from './modules/tenancy/routes.js';
import { webhookJobs } from './modules/webhooks/jobs.js';
import { createQueueStore } from './modules/webhooks/queue-store.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { createWebhookService } from './modules/webhooks/service.js';
import { createWebhookStore } from './modules/webhooks/store.js';
import { createDeliveryWorker } from './modules/webhooks/worker.js';
import { createTenancyService } from './modules/tenancy/service.js';
import { createTenancyStore } from './modules/tenancy/store.js';

/** Wires stores, services and routes. The only place that knows every module. */
export async function compose({
  db,
  databaseUrl,
  config,
  jobs,
  logger,
}: {
  db: Db;
  databaseUrl: string;
  config: Config;
  jobs: JobQueue;
  logger: Logger;
}) {
  const globalLimits = config.rateLimits === 'global';
  const limiter = globalLimits
    ? createGlobalLimiter(createLimitStore(db), Date.now, (err) => logger.warn({ err }, 'rate limit store error'))
    : createSlidingWindowLimiter();
  const activity = createActivityStore(db);
  const identityStore = createIdentityStore(db);
  const tokens = createTokenService({ store: identityStore, config });
  await tokens.init();
  // Signing secrets and ad-network tokens are sealed at rest. Before anything opens one: the key check
  // (another ENCRYPTION_KEY refuses to start), rotation with ENCRYPTION_KEY_PREVIOUS, rows from before 018.
  const secretBox = createSecretBox(config.encryptionKey, config.encryptionKeyPrevious);
  await prepareSecrets(db, { current: config.encryptionKey, previous: config.encryptionKeyPrevious }, logger);
  const identity = createIdentityService({
    store: identityStore,
    tokens,
    throttle: createSignInThrottle({ store: identityStore, config: config.signInThrottle }),
    refresh: createRefreshTokens({ store: identityStore, ttlS: config.refreshTtlSeconds }),
  });
  const tenancyStore = createTenancyStore(db, secretBox);
  const tenancy = createTenancyService({ db, store: tenancyStore, users: identityStore, activity });
  const keys = createApiKeyService({ db, store: createApiKeyStore(db), activity, cacheTtlMs: config.keyCacheTtlMs });
  const settings = createSettingsService({ store: createSettingsStore(db, secretBox), activity });
  const auth = createAuth({ identity, tenancy: tenancyStore, keys });
  const bootstrap = createBootstrapService({ settings, tenancy: tenancyStore, storePath: STREAM_PATH });
  // Bundle generations and option-set syncs record a numbered change in their own transaction;
  // the config stream replays and fans them out (LISTEN/NOTIFY, one connection per instance).
  const configChanges = createConfigChangeStore(db);
  // One LISTEN connection for the instance (bundle versions and config changes), opened on first use.
  const notifications = createNotifications({
    databaseUrl,
    onError: (err, where) => logger.child({ module: 'notifications' }).warn({ err, where }, 'LISTEN connection lost'),
  });
  const streams = createConfigStreamService({
    store: configChanges,
    notifications,
    settings: config.configStream,
    onError: (err, where) => logger.child({ module: 'config-stream' }).warn({ err, where }, 'config stream error'),
  });
  const ingestStore = createIngestStore(db);
  // Concurrent ingest requests share a transaction and its commit.
  const ingestWriter = createGroupCommit(ingestStore.insertGroup, config.ingestGroupCommit);
  // Privacy: subjects suppressed at ingestion, cached like API keys (a new suppression holds everywhere within the TTL).
  const privacyStore = createPrivacyStore(db);
  const suppression = createSuppressionCheck({ store: privacyStore, ttlMs: config.keyCacheTtlMs });
  const ingest = createIngestService({ store: ingestStore, writer: ingestWriter, settings, limiter, suppression });
  // A sync regenerates the config bundle when a published flow references the set (bundles is defined below;
  // the callback only runs after a request, long after composition).
  const optionSets = createOptionSetService({
    db,
    store: createOptionSetStore(db),
    activity,
    onSetChanged: (scope, setId) => bundles.regenerateIfReferenced(scope, setId),
    onHookError: (err, setId) => bundleLog.error({ err, setId }, 'bundle regeneration after option-set sync failed'),
    // A failed index build is not fatal (reads use SQL), but it should be seen.
    onIndexError: (err) =>
      logger.child({ module: 'option-sets' }).error({ err }, 'option-set search index build failed'),
    recordChange: configChanges.record,
  });
  // Config bundles and the content behind them (flows, paywalls, messages, remote config, flags).
  const bundleLog = logger.child({ module: 'bundles' });
  const contentStore = createContentStore(db);
  const experimentStore = createExperimentStore(db);
  const bundles = createBundleService({
    db,
    store: createBundleStore(db),
    activity,
    // Published content plus the started experiments (content.experiments).
    source: {
      published: async (scope, tx) => ({
        ...(await contentStore.published(scope, tx)),
        experiments: await experimentStore.bundled(scope, tx),
      }),
      flowReferences: (scope, setId) => contentStore.flowReferences(scope, setId),
    },
    optionSetPages: optionSets.firstPages,
    // Each generation holds a connection and may need a second one: keep them well under the pool size.
    maxConcurrentGenerations: Math.max(1, Math.floor(config.dbPoolMax / 3)),
    notifications,
    recordChange: configChanges.record,
  });
  const content = createContentService({ store: contentStore, bundles, activity });
  const rates = createExchangeRateService({ store: createExchangeRateStore(db) });
  await rates.init();
  // Ad network (OAuth connection, campaign management, stats sync, experiments); its limiter is injectable.
  const adNetwork = createAdNetworkModule({
    db,
    config,
    activity,
    rates,
    limiter: globalLimits ? createPgAdNetworkLimiter(db) : undefined,
  });
  const adNetworkLog = logger.child({ module: 'ad-network' });
  // Shared by webhooks and export callbacks: one pool, one private-target policy.
  const outbound = createOutboundClient({ allowPrivateTargets: config.allowPrivateTargets });
  // Webhooks and export callbacks: one durable delivery queue; the worker runs in worker roles only.
  const webhookLog = logger.child({ module: 'webhooks' });
  const webhookQueue = createQueueStore(db, secretBox);
  const webhookWorker = createDeliveryWorker({
    queue: webhookQueue,
    outbound,
    activity,
    scheduleS: config.webhookRetryScheduleS,
    pollMs: config.webhookPollMs,
    onError: (err, where) => webhookLog.error({ err, where }, 'webhook delivery worker error'),
  });
  // webhooks.sendCallback(scope, { url, secret, eventType, body }) is the export completion callback's sender.
  const webhooks = createWebhookService({
    db,
    store: createWebhookStore(db, secretBox),
    activity,
    allowPrivateTargets: config.allowPrivateTargets,
    scheduleS: config.webhookRetryScheduleS,
    wake: webhookWorker.wake,
  });
  if (config.runsWorkers) webhookWorker.start();
  // Event export: files under DATA_DIR/exports (an object store can implement ExportStorage instead).
  const exportLog = logger.child({ module: 'export' });
  const exportDeps = {
    db,
    store: createExportStore(db),
    readModel: createExportReadModel(db),
    storage: createLocalStorage(path.join(config.dataDir, 'exports')),
    activity,
    callbackSecret: settings.callbackSecret,
    sendCallback: webhooks.sendCallback,
  };
  const exports = createExportService({ ...exportDeps, jobs, allowPrivateTargets: config.allowPrivateTargets });
  const exportJobs = createExportJobs({
    ...exportDeps,
    exportTtlHours: config.exportTtlHours,
    publicUrl: config.publicUrl,
    schemaIntervalS: config.rollupIntervalS,
    onError: (err, where) => exportLog.error({ err, where }, 'export background error'),
  });
  if (config.runsWorkers) exportJobs.startBackground();

  // Analytics: a self-rescheduling fold job feeds the rollups the dashboard endpoints read.
  // Its rounds run in one thread per partition, on their own connections (fold/workers.ts).
  const foldWorkers = createFoldWorkers({
    databaseUrl,
    tempBuffersMb: config.foldTempBuffersMb,
    workMemMb: config.foldWorkMemMb,
  });
  const rollupStore = createRollupStore(db, {
    workers: foldWorkers,
    parts: config.foldPartitions,
    parallelMin: config.foldParallelMin,
  });
  const rollups = createRollupRunner({
    store: rollupStore,
    chunkSize: config.foldChunk,
    catchUpMin: config.foldParallelMin,
  });
  const analyticsRead = createAnalyticsReadModel(db);
  const funnels = createFunnelAnswers({
    db,
    read: analyticsRead,
    store: createFunnelStore(db),
    refreshS: config.funnelRefreshS,
  });
  const analytics = createAnalyticsService({
    read: analyticsRead,
    runner: rollups,
    funnels,
    rollupIntervalS: config.rollupIntervalS,
  });
  // Experiments: their own fold (per-device state) behind the same seq horizon as the analytics fold.
  const experimentFold = createExperimentFold({
    store: createExperimentFoldStore(db),
    horizon: rollupStore,
  });
  const experiments = createExperimentService({
    store: experimentStore,
    read: createExperimentReadModel(db),
    bundles,
    activity,
    onShipped: webhookWorker.wake,
  });
  const experimentJob = experimentFoldJob({ fold: experimentFold, jobs, intervalS: config.rollupIntervalS });
  const stopExperimentKick = config.runsWorkers ? kickExperimentFold(jobs) : () => undefined;
  const rollupJob = rollupJobHandler({ runner: rollups, jobs, intervalS: config.rollupIntervalS });
  // The refresh after each fold runs beside the fold chain; the stop waits for it before the pool closes.
  const afterFold = createBackgroundTasks((err) => logger.warn({ err }, 'funnel answers refresh failed'));
  let stopping = false;
  const stopRollupKick = config.runsWorkers ? kickRollupChain(jobs) : () => undefined;
  // A deletion whose job died with its process (kill -9) goes on as soon as a worker starts.
  if (config.runsWorkers)
    void jobs.whenStarted().then(() => jobs.send('privacy.resume', { all: true }).catch(() => null));

  const privacy = createPrivacyService({
    db,
    store: privacyStore,
    jobs,
    activity,
    // The erasure starts once every instance's suppression cache has reloaded: nothing of theirs lands after it.
    settleS: Math.ceil(config.keyCacheTtlMs / 1000) + 1,
  });
  const deletionJob = createDeletionJob({
    db,
    store: privacyStore,
    erase: createEraseStore(db),
    foldNow: () => rollups.run(),
    purgeExportFiles: () => exportJobs.handlers['export.cleanup'](),
    analyticsTimeoutMs: 30 * 60_000,
    // A stop does not wait for a rebuild: the job ends and the deletion resumes at the next start.
    isStopping: () => stopping,
  });

  // Operations endpoints (/livez, /readyz, /metrics): every role serves them; metrics first, its hooks see every route.
  const lifecycle = createLifecycle();
  const metrics = createMetrics({
    db,
    store: createMetricsStore(db),
    onError: (err) => logger.warn({ err }, 'metrics read failed'),
  });
  const opsPlugins: FastifyPluginAsync[] = [
    ...(config.metricsEnabled ? [metricsRoutes({ metrics, token: config.metricsToken })] : []),
    healthRoutes({ db, version: config.version, lifecycle }),
  ] as FastifyPluginAsync[];
  const plugins: FastifyPluginAsync[] = [
    ...opsPlugins,
    identityRoutes({ identity, tokens, secureCookies: config.publicUrl?.startsWith('https:') ?? false }),
    tenancyRoutes({ auth, tenancy }),
    apiKeyRoutes({ auth, keys }),
    settingsRoutes({ auth, settings }),
    adminRoutes({ auth, identity, tenancy: tenancyStore }),
    sdkRoutes({ auth, bootstrap, limiter }),
    configStreamRoutes({ auth, streams }),
    ingestRoutes({ auth, ingest }),
    optionSetRoutes({ auth, optionSets, limiter }),
    optionSetConsoleRoutes({ auth, read: createOptionSetReadModel(db) }),
    bundleRoutes({ auth, bundles }),
    contentRoutes({ auth, content }),
    exchangeRateRoutes({ auth, rates }),
    webhookRoutes({ auth, webhooks }),
    exportRoutes({ auth, exports, onClose: exportJobs.stop }),
    analyticsRoutes({ auth, analytics }),
    privacyRoutes({ auth, privacy }),
    experimentRoutes({ auth, experiments, fold: experimentFold }),
    consoleRoutes({ https: servesHttps(config.publicUrl) }),
    ...adNetwork.plugins(auth),
  ] as FastifyPluginAsync[];

  // The version check answered before routing when key and version are cached (docs/bundles.md).
  const versionSeries = config.metricsEnabled ? metrics.httpRoute(VERSION_PATH) : undefined;
  const fastPaths = {
    [VERSION_PATH]: versionFastPath({
      keyScope: (publicKey) => {
        const row = keys.peek(publicKey);
        return row && { tenantId: row.tenant_id, appId: row.app_id };
      },
      peek: bundles.peek,
      observe: versionSeries?.observe.bind(versionSeries),
    }),
  };

  const jobHandlers: JobHandlers = {
    'maintenance.event-partitions': () => ensureEventPartitions(db),
    'config-stream.prune': async () => void (await configChanges.prune(config.configStream.retentionHours)),
    'ad-network.sync': () =>
      adNetwork.sync.runAll(
        (msg, err) => adNetworkLog.warn({ err }, msg),
        () => stopping,
      ),
    ...webhookJobs({ queue: webhookQueue }),
    ...exportJobs.handlers,
    'privacy.delete': deletionJob.run,
    'privacy.resume': deletionJob.resume,
    'privacy.retention': createRetentionJob({
      store: createRetentionStore(db),
      purgeExportFiles: () => exportJobs.handlers['export.cleanup'](),
      onApp: (scope, dropped) =>
        void activity
          .record(scope, {
            entityType: 'privacy',
            action: 'retention_applied',
            description: `Retention: ${dropped.events} events and ${dropped.exports} exports past the app's retention dropped`,
          })
          .catch((err) => logger.warn({ err }, 'retention activity not recorded')),
    }),
    // After each fold, the funnel answers it made stale (paced by ANALYTICS_FUNNEL_REFRESH_S), beside
    // the next folds rather than before them: a refresh takes seconds at 10M events, and the fold
    // chain waited for it (the steady state's lag grew by that much every minute).
    'experiments.fold': experimentJob,
    'analytics.rollup': async () => {
      await rollupJob();
      afterFold.start(() => funnels.refresh());
    },
  };

  /**
   * The stop's first step: long work ends at its next safe point (a fold after its round, a funnel
   * refresh after its answer, an ad-network sync after its app) and running exports are interrupted
   * (they run again after the restart), so the jobs running them end soon; the export schema fold ends.
   */
  const stopWork = async () => {
    stopping = true;
    stopRollupKick();
    stopExperimentKick();
    funnels.stop();
    void rollups.stop();
    await exportJobs.stop();
  };
  /** After HTTP and the job queue have stopped: every loop, timer, thread and connection, in order. */
  const close = async () => {
    await ingestWriter.close();
    bundles.stop();
    await notifications.stop();
    await webhookWorker.stop();
    await outbound.close();
    await adNetwork.close();
    await rollups.stop();
    await afterFold.close();
    await foldWorkers.close();
    await limiter.close();
  };
  const drain = () => {
    lifecycle.draining = true;
  };
  return { plugins, opsPlugins, fastPaths, jobHandlers: metrics.instrumentJobs(jobHandlers), drain, stopWork, close };
}
