import type { KeyContext } from '../../http/auth.js';
import type { SettingsService } from '../settings/service.js';
import type { TenancyStore } from '../tenancy/store.js';

export function createBootstrapService({ settings, tenancy }: { settings: SettingsService; tenancy: TenancyStore }) {
  return {
    async bootstrap(key: KeyContext) {
      const [s, lock] = await Promise.all([settings.get(key), tenancy.runtimeLockOf(key.tenantId)]);
      return {
        orgId: key.tenantId,
        appId: key.appId,
        environment: key.environment,
        storePath: `organizations/${key.tenantId}/apps/${key.appId}/config-bundle`,
        settings: { flushInterval: s.sdk_settings.flushInterval, batchSize: s.sdk_settings.batchSize, configTTL: s.sdk_settings.configTTL },
        ...(lock ? { runtime_lock: lock } : {}),
      };
    },
  };
}

export type BootstrapService = ReturnType<typeof createBootstrapService>;
