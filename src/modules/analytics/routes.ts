import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { Environment, errors } from '../../http/schemas.js';
import { FunnelSteps } from './funnels.js';
import type { AnalyticsService } from './service.js';

const DateStr = Type.String({ maxLength: 10, description: 'YYYY-MM-DD' });
const Num = Type.Union([Type.Number(), Type.Null()]);
const Range = Type.Object({ start: Type.String(), end: Type.String() });
const Compare = Type.Union([
  Type.Literal('previous_period'),
  Type.Literal('previous_month'),
  Type.Literal('previous_year'),
]);
const Segment = Type.Union([Type.Literal('overall'), Type.Literal('platform'), Type.Literal('country')]);
const EnvQ = { environment: Type.Optional(Environment) };
const FunnelName = Type.Object({ funnelName: Type.String({ minLength: 1, maxLength: 64 }) });

const Meta = Type.Object({
  as_of: Type.Union([Type.String(), Type.Null()], {
    description: 'Date (app timezone) the rollups are folded to; null before the first fold',
  }),
  folded_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When the rollups these numbers come from were computed (last fold); null before the first fold',
  }),
  timezone: Type.String({ description: "The app's timezone" }),
  rebuilding: Type.Boolean({
    description: 'The timezone changed and the rollups wait for their rebuild in it (old numbers until then)',
  }),
  rollup_interval_s: Type.Integer({
    description: 'Seconds between folds (ROLLUP_INTERVAL_S): an answer older than this may miss newer events',
  }),
});
const FunnelDef = Type.Object({ funnel_name: Type.String(), steps: FunnelSteps, overridden: Type.Boolean() });

const Kpi = Type.Object({
  metric: Type.String(),
  current: Num,
  previous: Num,
  change_pct: Num,
  trend: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('flat')]),
  sparkline: Type.Array(Num),
});

const Point = Type.Object({ date: Type.String(), value: Num, breakdown_value: Type.Optional(Type.String()) });

const FunnelStepOut = Type.Object({
  step_name: Type.String(),
  step_order: Type.Integer(),
  users: Type.Integer(),
  conversion_rate: Num,
  cumulative_rate: Num,
  drop_off_rate: Num,
});

const Cohort = Type.Object({
  cohort_date: Type.String(),
  cohort_size: Type.Integer(),
  retention: Type.Object({ d1: Num, d3: Num, d7: Num, d14: Num, d30: Num, d60: Num, d90: Num }),
  segment: Type.String(),
});

const ActivityItem = Type.Object({
  id: Type.String(),
  icon: Type.String(),
  description: Type.String(),
  timestamp: Type.String({ format: 'date-time' }),
  relative_time: Type.String(),
  entity_type: Type.String(),
  action: Type.String(),
});

export const analyticsRoutes =
  ({ auth, analytics }: { auth: Auth; analytics: AnalyticsService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['analytics'];
    const viewer = auth.customer('viewer');

    app.get(
      '/api/v1/analytics/kpis',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'All 24 KPIs over a window, with comparison and daily sparkline',
          querystring: Type.Object({
            start_date: Type.Optional(DateStr),
            end_date: Type.Optional(DateStr),
            compare: Type.Optional(Compare),
            platform: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
            ...EnvQ,
          }),
          response: {
            200: Type.Object({
              kpis: Type.Array(Kpi),
              period: Range,
              compared_to: Range,
              compare: Compare,
              platform: Type.Union([Type.String(), Type.Null()]),
              meta: Meta,
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      async (req) => analytics.kpis(scopeOf(customerOf(req)), req.query),
    );

    app.get(
      '/api/v1/analytics/kpis/timeseries',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'Metric timeseries by day, ISO week or month, optionally segmented and compared',
          querystring: Type.Object({
            metrics: Type.String({ minLength: 1, maxLength: 600 }),
            period: Type.Optional(
              Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d'), Type.Literal('12m')]),
            ),
            start_date: Type.Optional(DateStr),
            end_date: Type.Optional(DateStr),
            granularity: Type.Optional(
              Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly')]),
            ),
            segment: Type.Optional(Segment),
            compare: Type.Optional(Compare),
            ...EnvQ,
          }),
          response: {
            200: Type.Object({
              metrics: Type.Array(
                Type.Object({
                  metric: Type.String(),
                  data: Type.Array(Point),
                  compare_data: Type.Optional(Type.Array(Point)),
                  compare_label: Type.Optional(Type.String()),
                }),
              ),
              period: Range,
              granularity: Type.String(),
              segment: Type.String(),
              compare: Type.Union([Compare, Type.Null()]),
              meta: Meta,
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      async (req) => analytics.timeseries(scopeOf(customerOf(req)), req.query),
    );

    app.get(
      '/api/v1/analytics/funnel/:funnelName',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'A named funnel for the latest day with data (30-day entry window)',
          params: FunnelName,
          querystring: Type.Object(EnvQ),
          response: {
            200: Type.Object({
              funnel_name: Type.String(),
              steps: Type.Array(FunnelStepOut),
              date: Type.String(),
              computed_at: Type.String({
                format: 'date-time',
                description:
                  'When these counts were computed (answers are materialized by the worker; see docs/analytics.md)',
              }),
              meta: Meta,
            }),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req) => analytics.funnel(scopeOf(customerOf(req)), req.params.funnelName, req.query.environment),
    );

    app.get(
      '/api/v1/analytics/funnels',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'The nine named funnels with the steps this app uses (its override or the default)',
          response: { 200: Type.Object({ data: Type.Array(FunnelDef) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await analytics.funnelDefinitions(scopeOf(customerOf(req))) }),
    );

    app.put(
      '/api/v1/analytics/funnels/:funnelName',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary: "Override a named funnel's steps for this app (admin+)",
          params: FunnelName,
          body: Type.Object({ steps: FunnelSteps }),
          response: { 200: Type.Object({ data: FunnelDef }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({
        data: await analytics.setFunnel(scopeOf(customerOf(req)), req.params.funnelName, req.body.steps),
      }),
    );

    app.delete(
      '/api/v1/analytics/funnels/:funnelName',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary: 'Back to the default definition of a named funnel (admin+)',
          params: FunnelName,
          response: { 200: Type.Object({ data: FunnelDef }), ...errors(401, 403, 404) },
        },
      },
      async (req) => ({ data: await analytics.setFunnel(scopeOf(customerOf(req)), req.params.funnelName, null) }),
    );

    app.get(
      '/api/v1/analytics/retention',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'Retention cohorts by first day (optionally by platform or country)',
          querystring: Type.Object({
            start_date: Type.Optional(DateStr),
            end_date: Type.Optional(DateStr),
            segment: Type.Optional(Segment),
            ...EnvQ,
          }),
          response: {
            200: Type.Object({ cohorts: Type.Array(Cohort), period: Range, segment: Type.String(), meta: Meta }),
            ...errors(400, 401, 403),
          },
        },
      },
      async (req) => analytics.retention(scopeOf(customerOf(req)), req.query),
    );

    app.get(
      '/api/v1/analytics/activity',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'The 20 most recent activity entries',
          response: { 200: Type.Object({ items: Type.Array(ActivityItem) }), ...errors(401, 403) },
        },
      },
      async (req) => analytics.activity(scopeOf(customerOf(req))),
    );

    app.post(
      '/api/v1/admin/analytics/rollup',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags: ['admin'],
          summary: 'Run one analytics fold now (operators, tests)',
          response: {
            200: Type.Object({
              data: Type.Object({
                folded: Type.Integer(),
                watermark: Type.Integer(),
                rebuilt: Type.Array(Type.String()),
                horizonReached: Type.Boolean(),
              }),
            }),
            ...errors(401, 403),
          },
        },
      },
      async () => ({ data: await analytics.runRollup() }),
    );
  };
