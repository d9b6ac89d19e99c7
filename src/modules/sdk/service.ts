import type { KeyContext } from '../../http/auth.js';
import type { SettingsService } from '../settings/service.js';
import type { TenancyStore } from '../tenancy/store.js';

/** storePath: the config-change stream's path, relative to the base URL (the SDK subscribes to it). */
export function createBootstrapService({
  settings,
  tenancy,
  storePath,
}: {
  settings: SettingsService;
  tenancy: TenancyStore;
  storePath: string;
}) {
  return {
    async bootstrap(key: KeyContext) {
      const [s, lock] = await Promise.all([settings.get(key), tenancy.runtimeLockOf(key.tenantId)]);
      return {
        orgId: key.tenantId,
        appId: key.appId,
        environment: key.environment,
        storePath,
        settings: {
          flushInterval: s.sdk_settings.flushInterval,
          batchSize: s.sdk_settings.batchSize,
          configTTL: s.sdk_settings.configTTL,
        },
        ...(lock ? { runtime_lock: lock } : {}),
      };
    },
  };
}

export type BootstrapService = ReturnType<typeof createBootstrapService>;
