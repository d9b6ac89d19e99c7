/**
 * Request and response examples of the main routes, by `METHOD url` as the route is registered. Kept
 * in one place and added to the document by src/http/openapi.ts; test/openapi.test.ts type-checks each
 * against the client generated from the document and sends the request examples to a real server.
 */
export interface RouteExamples {
  body?: unknown;
  /** By status code. */
  responses?: Record<number, unknown>;
}

const ANON_ID = '3f0c8a2e-5b1d-4c7a-9e2f-6a8b0c1d2e3f';

const EVENT = {
  schema_version: 1,
  event_id: '0b6f1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d',
  event_name: 'paywall_viewed',
  ts_ms: 1767225600000,
  user: { anon_id: ANON_ID, user_id: null },
  device: {
    platform: 'ios',
    os: 'iOS 18.2',
    app_version: '3.1.0',
    sdk_version: '1.4.0',
    framework: 'native',
    locale: 'en-US',
    country: 'US',
  },
  context: { session_id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a', screen: 'onboarding', client_seq: 17 },
  properties: { paywall_id: 'spring_sale', price_shown: 4.99 },
  privacy: { consent: { analytics: true } },
};

const BUNDLE_HEAD = { bundle_version: 12, sdk_min_version: '1.2.0', generated_at: '2026-01-01T00:00:00.000Z' };

export const EXAMPLES: Record<string, RouteExamples> = {
  'POST /api/v1/ingest/events': {
    body: { batch: [EVENT] },
    responses: { 202: { accepted: 1, rejected: 0, sampled: 0, consent_declined: 0, suppressed: 0 } },
  },
  'POST /api/v1/ingest/identify': {
    body: {
      anon_id: ANON_ID,
      user_id: 'user-8812',
      ts_ms: 1767225660000,
      traits: { plan: 'pro', signup_source: 'ad' },
    },
    responses: { 202: { linked: true, duplicate: false, suppressed: false } },
  },
  'GET /api/v1/sdk/bootstrap': {
    responses: {
      200: {
        orgId: '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
        appId: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
        environment: 'production',
        storePath: '/api/v1/sdk/config-stream',
        settings: { flushInterval: 30, batchSize: 50, configTTL: 300 },
      },
    },
  },
  'GET /api/v1/sdk/config-bundle': {
    responses: {
      200: {
        data: {
          ...BUNDLE_HEAD,
          size_bytes: 161,
          content: {
            onboarding_flows: {},
            paywalls: { spring_sale: { title: 'Spring sale', products: ['pro_monthly'] } },
            remote_config: { max_free_projects: 3 },
            feature_flags: { new_editor: { enabled: true } },
            in_app_messages: {},
          },
        },
      },
    },
  },
  'GET /api/v1/sdk/config-bundle/version': { responses: { 200: { data: BUNDLE_HEAD } } },
  'GET /api/v1/analytics/kpis': {
    responses: {
      200: {
        kpis: [
          { metric: 'dau', current: 1840, previous: 1710, change_pct: 7.6, trend: 'up', sparkline: [1790, 1802, 1840] },
        ],
        period: { start: '2026-01-01', end: '2026-01-03' },
        compared_to: { start: '2025-12-29', end: '2025-12-31' },
        compare: 'previous_period',
        platform: null,
        meta: {
          as_of: '2026-01-03',
          folded_at: '2026-01-04T00:05:00.000Z',
          timezone: 'Europe/Paris',
          rebuilding: false,
          rollup_interval_s: 60,
        },
      },
    },
  },
  'POST /api/v1/sdk/option-sets/:setId/sync': {
    body: {
      mode: 'merge',
      items: [{ id: 'fr', value: 'FR', label: 'France', sort_order: 1, option_data: { dial_code: '+33' } }],
    },
    responses: {
      200: {
        data: {
          set_id: 'countries',
          mode: 'merge',
          version: 4,
          created: 1,
          updated: 0,
          archived: 0,
          rejected: [],
          item_count: 1,
        },
      },
    },
  },
  'GET /api/v1/sdk/option-sets/:setId': {
    responses: {
      200: {
        data: {
          set_id: 'countries',
          version: 4,
          items: [{ id: 'fr', value: 'FR', label: 'France', sort_order: 1, option_data: { dial_code: '+33' } }],
          next_cursor: null,
        },
      },
    },
  },
  'GET /api/v1/sdk/events/export': {
    responses: {
      200: {
        data: [{ ...EVENT, received_at: '2026-01-01T00:00:01.250Z' }],
        meta: { total: 1, limit: 100, offset: 0, hasMore: false },
      },
    },
  },
};
