import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { errors } from '../../http/schemas.js';
import { RETENTION_MAX_DAYS, RETENTION_MIN_DAYS } from '../privacy/retention.js';
import type { SettingsService } from './service.js';

const SdkSettings = Type.Object({
  flushInterval: Type.Integer({ minimum: 1, maximum: 3600 }),
  batchSize: Type.Integer({ minimum: 1, maximum: 500 }),
  configTTL: Type.Integer({ minimum: 60, maximum: 604_800 }),
});

const Settings = Type.Object({
  events_per_minute: Type.Integer(),
  sampling_rate: Type.Number(),
  timezone: Type.String(),
  sdk_settings: SdkSettings,
  callback_signing_secret: Type.String({ description: 'Signs export completion callbacks (Standard Webhooks).' }),
  retention_days: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'Raw events and completed exports older than this are dropped daily; null keeps them (docs/privacy.md)',
  }),
  updated_at: Type.String({ format: 'date-time' }),
});

const Patch = Type.Object({
  events_per_minute: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  sampling_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA name, e.g. Europe/Berlin' })),
  sdk_settings: Type.Optional(Type.Partial(SdkSettings)),
  retention_days: Type.Optional(
    Type.Union([Type.Integer({ minimum: RETENTION_MIN_DAYS, maximum: RETENTION_MAX_DAYS }), Type.Null()]),
  ),
});

export const settingsRoutes =
  ({ auth, settings }: { auth: Auth; settings: SettingsService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/settings',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags: ['settings'],
          summary: 'Read app settings (admin+)',
          response: { 200: Type.Object({ data: Settings }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await settings.read(scopeOf(customerOf(req))) }),
    );

    app.patch(
      '/api/v1/settings',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags: ['settings'],
          summary: 'Change app settings (admin+)',
          body: Patch,
          response: { 200: Type.Object({ data: Settings }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await settings.update(scopeOf(c), c.userId, req.body) };
      },
    );
  };
