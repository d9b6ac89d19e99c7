import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { invalid } from '../../http/errors.js';
import { errors, page, PageMeta, PageQuery, Uuid } from '../../http/schemas.js';
import type { Experiments } from './experiments.js';
import { AccountParams, ctxOf, Day, IdemHeaders, NetId, Status, Usd } from './schemas.js';
import type { NetworkOps } from './service.js';
import type { StatsService } from './stats.js';

const StatRow = Type.Object({
  ad_account_id: Type.String(),
  entity_type: Type.String(),
  entity_id: Type.String(),
  day: Type.String(),
  impressions: Type.Integer(),
  swipes: Type.Integer(),
  view_completion: Type.Integer(),
  conversion_purchases: Type.Integer(),
  spend_local_micro: Type.Integer(),
  spend_local: Type.Number(),
  currency: Type.String(),
  usd_rate: Type.Union([Type.Number(), Type.Null()], { description: 'USD per unit of the account currency used' }),
  rate_day: Type.Union([Type.String(), Type.Null()]),
  spend_usd: Type.Union([Type.Number(), Type.Null()]),
  pulled_at: Type.String(),
});
const Variant = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.String(),
  creative_id: Type.String(),
  adsquad_id: Type.String(),
  ad_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.String(),
});
const Experiment = Type.Object({
  id: Type.String(),
  ad_account_id: Type.String(),
  campaign_id: Type.String(),
  name: Type.String(),
  status: Type.String(),
  dry_run: Type.Boolean(),
  created_at: Type.String(),
  variants: Type.Array(Variant),
  replayed: Type.Optional(Type.Boolean()),
});
const Totals = Type.Object({
  impressions: Type.Integer(),
  swipes: Type.Integer(),
  view_completion: Type.Integer(),
  conversion_purchases: Type.Integer(),
  spend_local_micro: Type.Integer(),
  spend_usd: Type.Union([Type.Number(), Type.Null()]),
});
const ExpParams = Type.Object({ accountId: NetId, id: Uuid });
const E = errors(400, 401, 403, 404, 409, 429, 502);

/** Stats (stored and on-demand pulls) and multi-ad-squad creative experiments. */
export const adNetworkInsightRoutes =
  ({
    auth,
    ops,
    stats,
    experiments,
  }: {
    auth: Auth;
    ops: NetworkOps;
    stats: StatsService;
    experiments: Experiments;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['ad-network'];
    const admin = auth.customer('admin');
    const viewer = auth.customer('viewer');
    const base = '/api/v1/ad-network/accounts/:accountId';

    app.get(
      '/api/v1/ad-network/stats',
      {
        preHandler: viewer,
        schema: {
          tags,
          summary:
            'Stored DAY stats (account-local days): spend in USD with native currency, rate used and local spend',
          querystring: Type.Object({
            from: Day,
            to: Day,
            ad_account_id: Type.Optional(NetId),
            entity_type: Type.Optional(Type.Union([Type.Literal('campaign'), Type.Literal('adsquad')])),
            entity_id: Type.Optional(NetId),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 1000 })),
          }),
          response: { 200: Type.Object({ data: Type.Array(StatRow) }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const q = req.query;
        if (q.from > q.to) throw invalid('from must not be after to', '/querystring/from');
        const data = await stats.read(scopeOf(customerOf(req)), {
          adAccountId: q.ad_account_id,
          entityType: q.entity_type,
          entityIds: q.entity_id ? [q.entity_id] : undefined,
          from: q.from,
          to: q.to,
          limit: q.limit ?? 1000,
        });
        return { data };
      },
    );

    app.post(
      `${base}/stats/pull`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Pull DAY stats now (one campaign, or every campaign of the account); default the last 7 local days',
          params: AccountParams,
          body: Type.Object({ campaign_id: Type.Optional(NetId), from: Type.Optional(Day), to: Type.Optional(Day) }),
          response: {
            200: Type.Object({ data: Type.Object({ campaigns: Type.Integer(), rows: Type.Integer() }) }),
            ...E,
          },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        if (req.body.campaign_id?.startsWith('dryrun-'))
          throw invalid('A dry-run campaign has no stats', '/body/campaign_id');
        if (req.body.campaign_id) await ops.current(ctx, 'campaign', req.body.campaign_id);
        return {
          data: await stats.pullAccount(ctx.scope, ctx.acct, {
            campaignId: req.body.campaign_id,
            from: req.body.from,
            to: req.body.to,
          }),
        };
      },
    );

    app.post(
      `${base}/experiments`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary:
            'Start a creative experiment: one ad squad + ad per variant; the first variant (control) ACTIVE, treatments PAUSED',
          params: AccountParams,
          headers: IdemHeaders,
          body: Type.Object({
            name: Type.String({ minLength: 1, maxLength: 200 }),
            campaign_id: NetId,
            daily_budget_usd: Usd,
            optimization_goal: Type.Optional(Type.String({ maxLength: 40, pattern: '^[A-Z_]+$' })),
            countries: Type.Optional(
              Type.Array(Type.String({ pattern: '^[A-Za-z]{2}$' }), { minItems: 1, maxItems: 50 }),
            ),
            variants: Type.Array(
              Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), creative_id: NetId }),
              { minItems: 2, maxItems: 10 },
            ),
          }),
          response: { 201: Type.Object({ data: Experiment }), ...E },
        },
      },
      async (req, reply) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        return reply
          .status(201)
          .send({ data: await experiments.start(ctx, req.body as Parameters<Experiments['start']>[1]) });
      },
    );

    app.get(
      `${base}/experiments`,
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'List experiments',
          params: AccountParams,
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(Experiment), meta: PageMeta }), ...E },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        const { limit = 20, offset = 0 } = req.query;
        const r = await experiments.list(ctx, limit, offset);
        return page(r.rows, r.total, limit, offset);
      },
    );

    app.get(
      `${base}/experiments/:id`,
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'One experiment with its variants',
          params: ExpParams,
          response: { 200: Type.Object({ data: Experiment }), ...E },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        return { data: experiments.view(await experiments.get(ctx, req.params.id)) };
      },
    );

    app.post(
      `${base}/experiments/:id/variants/:variantId/status`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Runner toggle: set one variant ad squad ACTIVE or PAUSED',
          params: Type.Object({ accountId: NetId, id: Uuid, variantId: Uuid }),
          headers: IdemHeaders,
          body: Type.Object({ status: Status }),
          response: {
            200: Type.Object({
              data: Type.Object({
                variant_id: Type.String(),
                adsquad_id: Type.String(),
                status: Type.String(),
                dry_run: Type.Boolean(),
              }),
            }),
            ...E,
          },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        const e = await experiments.get(ctx, req.params.id);
        return { data: await experiments.setVariant(ctx, e, req.params.variantId, req.body.status) };
      },
    );

    app.post(
      `${base}/experiments/:id/stop`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Stop: pause every variant',
          params: ExpParams,
          headers: IdemHeaders,
          response: { 200: Type.Object({ data: Experiment }), ...E },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        return { data: await experiments.stop(ctx, await experiments.get(ctx, req.params.id)) };
      },
    );

    app.get(
      `${base}/experiments/:id/stats`,
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'Per-variant DAY stats (campaign stats with breakdown=adsquad), pulled now and stored',
          params: ExpParams,
          querystring: Type.Object({ from: Type.Optional(Day), to: Type.Optional(Day) }),
          response: {
            200: Type.Object({
              data: Type.Object({
                experiment_id: Type.String(),
                from: Type.String(),
                to: Type.String(),
                currency: Type.String(),
                variants: Type.Array(
                  Type.Object({
                    variant_id: Type.String(),
                    name: Type.String(),
                    role: Type.String(),
                    adsquad_id: Type.String(),
                    status: Type.String(),
                    totals: Totals,
                    days: Type.Array(Type.Object({ day: Type.String() }, { additionalProperties: true })),
                  }),
                ),
              }),
            }),
            ...E,
          },
        },
      },
      async (req) => {
        const ctx = await ctxOf(ops, req, req.params.accountId);
        const e = await experiments.get(ctx, req.params.id);
        return { data: await experiments.stats(ctx, e, req.query.from, req.query.to) };
      },
    );
  };
