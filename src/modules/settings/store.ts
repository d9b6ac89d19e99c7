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
  /** Days raw events and exports are kept (privacy/retention.ts); null: for ever. */
  retention_days: number | null;
  extra: Record<string, unknown>;
  updated_at: Date;
}

const COLS = 'events_per_minute, sampling_rate, timezone, sdk_settings, retention_days, extra, updated_at';

/**
 * The callback signing secret is stored sealed and read apart: ingestion and bootstrap read the
 * settings on every request and send no secret, so they open none (nor fail when a key is missing).
 */
export function createSettingsStore(db: Queryable, box: SecretBox) {
  return {
    async get(scope: Scope): Promise<AppSettings | null> {
      const { rows } = await db.query<AppSettings>(
        `SELECT ${COLS} FROM app_settings WHERE tenant_id = $1 AND app_id = $2`,
        [scope.tenantId, scope.appId],
      );
      return rows[0] ?? null;
    },
    /** The export callbacks' signing secret, opened. */
    async callbackSecret(scope: Scope): Promise<string | null> {
      const { rows } = await db.query<{ s: string }>(
        'SELECT callback_signing_secret AS s FROM app_settings WHERE tenant_id = $1 AND app_id = $2',
        [scope.tenantId, scope.appId],
      );
      return rows[0] ? box.open(rows[0].s) : null;
    },
    async update(scope: Scope, s: Omit<AppSettings, 'updated_at'>): Promise<AppSettings> {
      const { rows } = await db.query<AppSettings>(
        `UPDATE app_settings SET events_per_minute = $3, sampling_rate = $4, timezone = $5, sdk_settings = $6, extra = $7,
                retention_days = $8, updated_at = now()
          WHERE tenant_id = $1 AND app_id = $2 RETURNING ${COLS}`,
        [
          scope.tenantId,
          scope.appId,
          s.events_per_minute,
          s.sampling_rate,
          s.timezone,
          s.sdk_settings,
          s.extra,
          s.retention_days,
        ],
      );
      return rows[0];
    },
  };
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;
