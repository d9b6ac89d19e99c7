import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Auth } from '../../http/auth.js';
import { invalid } from '../../http/errors.js';
import { errors } from '../../http/schemas.js';
import type { Management } from './management.js';
import {
  AccountParams,
  ctxOf,
  EntityParams,
  IdemHeaders,
  IsoTime,
  ListAnswer,
  Name,
  NetId,
  Status,
  Usd,
  WriteAnswer,
} from './schemas.js';
import type { NetworkOps } from './service.js';

const W = { 200: WriteAnswer, ...errors(400, 401, 403, 404, 409, 429, 502) };
const C = { 201: WriteAnswer, ...errors(400, 401, 403, 404, 409, 429, 502) };
const L = { 200: ListAnswer, ...errors(401, 403, 404, 409, 429, 502) };
const MEDIA_TYPES = ['application/octet-stream', 'image/png', 'image/jpeg', 'video/mp4', 'video/quicktime'];

const CampaignBody = Type.Object({
  name: Name,
  status: Type.Optional(Status),
  start_time: Type.Optional(IsoTime),
  end_time: Type.Optional(IsoTime),
  daily_budget_usd: Type.Optional(Usd),
  lifetime_spend_cap_usd: Type.Optional(Usd),
  objective: Type.Optional(
    Type.Union(['AWARENESS_AND_ENGAGEMENT', 'TRAFFIC', 'SALES', 'APP_PROMOTION', 'LEADS'].map((x) => Type.Literal(x))),
  ),
});
const CampaignPatch = Type.Object(
  {
    name: Type.Optional(Name),
    start_time: Type.Optional(IsoTime),
    end_time: Type.Optional(IsoTime),
    daily_budget_usd: Type.Optional(Usd),
  },
  { minProperties: 1 },
);
const Countries = Type.Array(Type.String({ pattern: '^[A-Za-z]{2}$' }), { minItems: 1, maxItems: 50 });
const Goal = Type.Union(
  ['IMPRESSIONS', 'SWIPES', 'APP_INSTALLS', 'VIDEO_VIEWS', 'PIXEL_PURCHASE', 'APP_PURCHASE'].map((x) =>
    Type.Literal(x),
  ),
);
const SquadBody = Type.Object({
  campaign_id: NetId,
  name: Name,
  status: Type.Optional(Status),
  daily_budget_usd: Usd,
  bid_usd: Type.Optional(Usd),
  optimization_goal: Type.Optional(Goal),
  countries: Type.Optional(Countries),
  start_time: Type.Optional(IsoTime),
});
const CreativeBody = Type.Object({
  name: Name,
  type: Type.Optional(Type.Union(['SNAP_AD', 'WEB_VIEW', 'APP_INSTALL', 'DEEP_LINK'].map((x) => Type.Literal(x)))),
  headline: Type.String({ minLength: 1, maxLength: 34 }),
  brand_name: Type.String({ minLength: 1, maxLength: 32 }),
  media_id: NetId,
  profile_id: Type.String({
    minLength: 1,
    maxLength: 80,
    description: 'Public Profile id (profile_properties.profile_id), required by the network',
  }),
  call_to_action: Type.Optional(Type.String({ maxLength: 40 })),
  web_view_url: Type.Optional(Type.String({ pattern: '^https://', maxLength: 2000 })),
  shareable: Type.Optional(Type.Boolean()),
});
const AdBody = Type.Object({ ad_squad_id: NetId, creative_id: NetId, name: Name, status: Type.Optional(Status) });

/** Campaigns, ad squads, media, creatives and ads of one connected ad account. Writes are admin+. */
export const adNetworkManageRoutes =
  ({ auth, ops, mgmt }: { auth: Auth; ops: NetworkOps; mgmt: Management }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['ad-network'];
    const admin = auth.customer('admin');
    const viewer = auth.customer('viewer');
    const base = '/api/v1/ad-network/accounts/:accountId';
    app.addContentTypeParser(MEDIA_TYPES, { parseAs: 'buffer', bodyLimit: 32 * 1024 * 1024 }, (_req, body, done) =>
      done(null, body),
    );

    // Campaigns
    app.get(
      `${base}/campaigns`,
      {
        preHandler: viewer,
        schema: { tags, summary: 'List campaigns (live from the network)', params: AccountParams, response: L },
      },
      async (req) => ({ data: await mgmt.listCampaigns(await ctxOf(ops, req, req.params.accountId)) }),
    );
    app.post(
      `${base}/campaigns`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create a campaign (budget in USD -> micro of the account currency)',
          params: AccountParams,
          headers: IdemHeaders,
          body: CampaignBody,
          response: C,
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send({ data: await mgmt.createCampaign(await ctxOf(ops, req, req.params.accountId), req.body) }),
    );
    app.patch(
      `${base}/campaigns/:id`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Update a campaign (read-modify-write PUT)',
          params: EntityParams,
          headers: IdemHeaders,
          body: CampaignPatch,
          response: W,
        },
      },
      async (req) => ({
        data: await mgmt.updateCampaign(await ctxOf(ops, req, req.params.accountId), req.params.id, req.body),
      }),
    );
    for (const [action, status] of [
      ['pause', 'PAUSED'],
      ['resume', 'ACTIVE'],
    ] as const) {
      app.post(
        `${base}/campaigns/:id/${action}`,
        {
          preHandler: admin,
          schema: {
            tags,
            summary: `${action} a campaign (status ${status})`,
            params: EntityParams,
            headers: IdemHeaders,
            response: W,
          },
        },
        async (req) => ({
          data: await mgmt.updateCampaign(
            await ctxOf(ops, req, req.params.accountId),
            req.params.id,
            {},
            action,
            status,
          ),
        }),
      );
    }
    app.delete(
      `${base}/campaigns/:id`,
      {
        preHandler: admin,
        schema: { tags, summary: 'Delete a campaign', params: EntityParams, headers: IdemHeaders, response: W },
      },
      async (req) => ({ data: await mgmt.deleteCampaign(await ctxOf(ops, req, req.params.accountId), req.params.id) }),
    );

    // Ad squads
    app.get(
      `${base}/adsquads`,
      {
        preHandler: viewer,
        schema: {
          tags,
          summary: 'List ad squads (of one campaign with campaign_id)',
          params: AccountParams,
          querystring: Type.Object({ campaign_id: Type.Optional(NetId) }),
          response: L,
        },
      },
      async (req) => ({
        data: await mgmt.listSquads(await ctxOf(ops, req, req.params.accountId), req.query.campaign_id),
      }),
    );
    app.post(
      `${base}/adsquads`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create an ad squad (POST /campaigns/{id}/adsquads)',
          params: AccountParams,
          headers: IdemHeaders,
          body: SquadBody,
          response: C,
        },
      },
      async (req, reply) =>
        reply.status(201).send({ data: await mgmt.createSquad(await ctxOf(ops, req, req.params.accountId), req.body) }),
    );
    app.patch(
      `${base}/adsquads/:id`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Update an ad squad',
          params: EntityParams,
          headers: IdemHeaders,
          body: Type.Object({ name: Type.Optional(Name), daily_budget_usd: Type.Optional(Usd) }, { minProperties: 1 }),
          response: W,
        },
      },
      async (req) => ({
        data: await mgmt.updateSquad(await ctxOf(ops, req, req.params.accountId), req.params.id, req.body),
      }),
    );
    for (const [action, status] of [
      ['pause', 'PAUSED'],
      ['resume', 'ACTIVE'],
    ] as const) {
      app.post(
        `${base}/adsquads/:id/${action}`,
        {
          preHandler: admin,
          schema: {
            tags,
            summary: `${action} an ad squad (status ${status})`,
            params: EntityParams,
            headers: IdemHeaders,
            response: W,
          },
        },
        async (req) => ({
          data: await mgmt.updateSquad(await ctxOf(ops, req, req.params.accountId), req.params.id, {}, action, status),
        }),
      );
    }

    // Media: the raw file is the body; name and type in the query.
    app.get(
      `${base}/media`,
      { preHandler: viewer, schema: { tags, summary: 'List media', params: AccountParams, response: L } },
      async (req) => ({ data: await mgmt.listMedia(await ctxOf(ops, req, req.params.accountId)) }),
    );
    app.post(
      `${base}/media`,
      {
        preHandler: admin,
        bodyLimit: 32 * 1024 * 1024,
        schema: {
          tags,
          summary:
            'Upload media (create, upload the file, wait for READY). Body: the raw file (image/png, image/jpeg, video/mp4, video/quicktime)',
          params: AccountParams,
          headers: IdemHeaders,
          querystring: Type.Object({
            name: Name,
            type: Type.Union([Type.Literal('IMAGE'), Type.Literal('VIDEO')]),
            file_name: Type.String({ pattern: '^[A-Za-z0-9._ -]{1,200}$' }),
          }),
          response: C,
        },
      },
      async (req, reply) => {
        const data = req.body as unknown;
        if (!Buffer.isBuffer(data) || data.length === 0)
          throw invalid('Send the file as the request body with a media content type', '/body');
        const max = req.query.type === 'IMAGE' ? 5 * 1024 * 1024 : 32 * 1024 * 1024;
        if (data.length > max) throw invalid(`${req.query.type} files are limited to ${max} bytes`, '/body');
        const ct = String(req.headers['content-type'] ?? 'application/octet-stream').split(';')[0];
        return reply.status(201).send({
          data: await mgmt.uploadMedia(await ctxOf(ops, req, req.params.accountId), {
            ...req.query,
            content_type: ct,
            data,
          }),
        });
      },
    );

    // Creatives
    app.get(
      `${base}/creatives`,
      { preHandler: viewer, schema: { tags, summary: 'List creatives', params: AccountParams, response: L } },
      async (req) => ({ data: await mgmt.listCreatives(await ctxOf(ops, req, req.params.accountId)) }),
    );
    app.post(
      `${base}/creatives`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create a creative from READY media',
          params: AccountParams,
          headers: IdemHeaders,
          body: CreativeBody,
          response: C,
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send({ data: await mgmt.createCreative(await ctxOf(ops, req, req.params.accountId), req.body) }),
    );

    // Ads
    app.get(
      `${base}/ads`,
      {
        preHandler: viewer,
        schema: { tags, summary: 'List ads (review_status, delivery_status)', params: AccountParams, response: L },
      },
      async (req) => ({ data: await mgmt.listAds(await ctxOf(ops, req, req.params.accountId)) }),
    );
    app.post(
      `${base}/ads`,
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create an ad bound to an existing creative (POST /adsquads/{id}/ads)',
          params: AccountParams,
          headers: IdemHeaders,
          body: AdBody,
          response: C,
        },
      },
      async (req, reply) =>
        reply.status(201).send({ data: await mgmt.createAd(await ctxOf(ops, req, req.params.accountId), req.body) }),
    );
    for (const [action, status] of [
      ['pause', 'PAUSED'],
      ['resume', 'ACTIVE'],
    ] as const) {
      app.post(
        `${base}/ads/:id/${action}`,
        {
          preHandler: admin,
          schema: { tags, summary: `${action} an ad`, params: EntityParams, headers: IdemHeaders, response: W },
        },
        async (req) => ({
          data: await mgmt.setAdStatus(await ctxOf(ops, req, req.params.accountId), req.params.id, status),
        }),
      );
    }
  };
