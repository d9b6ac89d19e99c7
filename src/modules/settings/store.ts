import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { SecretBox } from '../../lib/secret-box.js';

export interface SdkSettings {
  flushInterval: number;
  batchSize: number;
  configTTL: number;
}

export interface AppSettings {
  events_per_minute: number;
  sampling_rate: number;
  timezone: string;
  sdk_settings: SdkSettings;
  callback_signing_secret: string;
  extra: Record<string, unknown>;
  updated_at: Date;
}

const COLS = 'events_per_minute, sampling_rate, timezone, sdk_settings, callback_signing_secret, extra, updated_at';

/** The callback signing secret is stored sealed and comes back opened. */
export function createSettingsStore(db: Queryable, box: SecretBox) {
  const opened = (s: AppSettings | undefined) =>
    s ? { ...s, callback_signing_secret: box.open(s.callback_signing_secret) } : s;
  return {
    async get(scope: Scope): Promise<AppSettings | null> {
      const { rows } = await db.query<AppSettings>(
        `SELECT ${COLS} FROM app_settings WHERE tenant_id = $1 AND app_id = $2`,
        [scope.tenantId, scope.appId],
      );
      return opened(rows[0]) ?? null;
    },
    async update(scope: Scope, s: Omit<AppSettings, 'updated_at' | 'callback_signing_secret'>): Promise<AppSettings> {
      const { rows } = await db.query<AppSettings>(
        `UPDATE app_settings SET events_per_minute = $3, sampling_rate = $4, timezone = $5, sdk_settings = $6, extra = $7, updated_at = now()
          WHERE tenant_id = $1 AND app_id = $2 RETURNING ${COLS}`,
        [scope.tenantId, scope.appId, s.events_per_minute, s.sampling_rate, s.timezone, s.sdk_settings, s.extra],
      );
      return opened(rows[0])!;
    },
  };
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;
