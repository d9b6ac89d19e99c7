import type { Scope } from '../../types/domain.js';
import { isValidTimezone } from '../../lib/time.js';
import { invalid, notFound } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { AppSettings, SdkSettings, SettingsStore } from './store.js';

export interface SettingsPatch {
  events_per_minute?: number;
  sampling_rate?: number;
  timezone?: string;
  sdk_settings?: Partial<SdkSettings>;
  retention_days?: number | null;
}

const view = (s: AppSettings, callbackSigningSecret: string) => ({
  events_per_minute: s.events_per_minute,
  sampling_rate: s.sampling_rate,
  timezone: s.timezone,
  sdk_settings: s.sdk_settings,
  callback_signing_secret: callbackSigningSecret,
  retention_days: s.retention_days,
  updated_at: s.updated_at.toISOString(),
});

export function createSettingsService({
  store,
  activity,
  cacheTtlMs = 2000,
}: {
  store: SettingsStore;
  activity: ActivityStore;
  cacheTtlMs?: number;
}) {
  // Ingestion and bootstrap read settings on every request; a short cache spares the database.
  const cache = new Map<string, { s: AppSettings; at: number }>();

  async function get(scope: Scope): Promise<AppSettings> {
    const key = scope.appId;
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < cacheTtlMs) return hit.s;
    const s = await store.get(scope);
    if (!s) throw notFound('App');
    cache.set(key, { s, at: Date.now() });
    return s;
  }

  /** Opened only where it is sent: the settings answer and export callbacks (not cached). */
  async function callbackSecret(scope: Scope): Promise<string> {
    const secret = await store.callbackSecret(scope);
    if (secret === null) throw notFound('App');
    return secret;
  }

  return {
    get,
    callbackSecret,
    async read(scope: Scope) {
      const s = await store.get(scope);
      if (!s) throw notFound('App');
      return view(s, await callbackSecret(scope));
    },
    async update(scope: Scope, userId: string, patch: SettingsPatch) {
      const current = await store.get(scope);
      if (!current) throw notFound('App');
      if (patch.timezone !== undefined && !isValidTimezone(patch.timezone))
        throw invalid(`Unknown IANA timezone "${patch.timezone}"`, '/body/timezone');
      const next = await store.update(scope, {
        events_per_minute: patch.events_per_minute ?? current.events_per_minute,
        sampling_rate: patch.sampling_rate ?? current.sampling_rate,
        timezone: patch.timezone ?? current.timezone,
        sdk_settings: { ...current.sdk_settings, ...patch.sdk_settings },
        retention_days: patch.retention_days === undefined ? current.retention_days : patch.retention_days,
        extra: current.extra,
      });
      cache.delete(scope.appId);
      await activity.record(scope, {
        entityType: 'settings',
        action: 'updated',
        description: `App settings changed: ${Object.keys(patch).join(', ') || 'nothing'}`,
        actorUserId: userId,
      });
      return view(next, await callbackSecret(scope));
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
