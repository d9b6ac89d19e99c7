import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { errors, page, PageMeta, PageQuery, Uuid } from '../../http/schemas.js';
import type { ActivityStore } from '../activity/store.js';
import { toAppError } from './client.js';
import { accountView, type ConnectionService } from './connection.js';
import type { Sync } from './jobs.js';
import { AccountView, NetId } from './schemas.js';
import type { AdNetworkStore } from './store.js';

const Connection = Type.Object({
  status: Type.Union([
    Type.Literal('not_connected'),
    Type.Literal('connected'),
    Type.Literal('reauth_required'),
    Type.Literal('disconnected'),
  ]),
  scope: Type.Union([Type.String(), Type.Null()]),
  connected_at: Type.Union([Type.String(), Type.Null()]),
  access_token_expires_at: Type.Union([Type.String(), Type.Null()]),
  organization_ids: Type.Array(Type.String()),
  last_error: Type.Union([Type.String(), Type.Null()]),
  ad_accounts: Type.Array(AccountView),
});

const Write = Type.Object({
  id: Type.String(),
  ad_account_id: Type.String(),
  idempotency_key: Type.String(),
  kind: Type.String(),
  op: Type.String(),
  status: Type.String(),
  remote_id: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  request: Type.Any(),
  created_at: Type.String(),
});

/** Connection (OAuth), organizations and ad accounts, the write journal, manual sync, webhook refusal, and the live-write switch. */
export const adNetworkRoutes =
  ({
    auth,
    conn,
    store,
    sync,
    activity,
  }: {
    auth: Auth;
    conn: ConnectionService;
    store: AdNetworkStore;
    sync: Sync;
    activity: ActivityStore;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['ad-network'];
    const admin = auth.customer('admin');

    app.post(
      '/api/v1/ad-network/connection/start',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Start connecting: authorization URL with state and PKCE (scope snapchat-marketing-api)',
          response: {
            200: Type.Object({
              data: Type.Object({
                authorize_url: Type.String(),
                state: Type.String(),
                scope: Type.String(),
                redirect_uri: Type.String(),
                expires_at: Type.String(),
              }),
            }),
            ...errors(401, 403, 409),
          },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await conn.start(scopeOf(c), c.userId) };
      },
    );

    app.post(
      '/api/v1/ad-network/connection/callback',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Finish connecting: the code and state the network sent to the redirect URI',
          description:
            'Exchanges the code (with the PKCE verifier), probes GET /me/organizations then the ad accounts, and stores the accounts with currency and timezone.',
          body: Type.Object({
            code: Type.String({ minLength: 1, maxLength: 2048 }),
            state: Type.String({ minLength: 1, maxLength: 256 }),
          }),
          response: { 200: Type.Object({ data: Connection }), ...errors(400, 401, 403, 409, 502) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await conn.callback(scopeOf(c), c.userId, req.body.code, req.body.state) };
      },
    );

    app.get(
      '/api/v1/ad-network/connection',
      {
        preHandler: admin,
        schema: {
          tags,
          summary:
            'Connection status; verify=true also makes the identity call (a revoked grant turns it into reauth_required)',
          querystring: Type.Object({ verify: Type.Optional(Type.Boolean({ default: false })) }),
          response: { 200: Type.Object({ data: Connection }), ...errors(401, 403, 429, 502) },
        },
      },
      async (req) => {
        const scope = scopeOf(customerOf(req));
        const c = await store.connection(scope);
        return { data: await conn.status(scope, !!req.query.verify && c?.status === 'connected') };
      },
    );

    app.delete(
      '/api/v1/ad-network/connection',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Disconnect: deletes the stored refresh token',
          response: {
            200: Type.Object({ data: Type.Object({ status: Type.Literal('disconnected'), message: Type.String() }) }),
            ...errors(401, 403),
          },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await conn.disconnect(scopeOf(c), c.userId) };
      },
    );

    app.get(
      '/api/v1/ad-network/organizations',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'Organizations of the connected user, live from the network, with their ad accounts',
          response: {
            200: Type.Object({ data: Type.Array(Type.Object({ id: Type.String() }, { additionalProperties: true })) }),
            ...errors(401, 403, 409, 429, 502),
          },
        },
      },
      async (req) => {
        const scope = scopeOf(customerOf(req));
        try {
          const body = await conn.call(scope, {
            method: 'GET',
            path: '/me/organizations',
            query: { with_ad_accounts: true },
          });
          return { data: (body.organizations ?? []).map((o: any) => o.organization).filter(Boolean) };
        } catch (err) {
          throw toAppError(err);
        }
      },
    );

    app.get(
      '/api/v1/ad-network/accounts',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'Ad accounts stored at connect time (currency, timezone, live-write switch)',
          response: { 200: Type.Object({ data: Type.Array(AccountView) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: (await store.accounts(scopeOf(customerOf(req)))).map(accountView) }),
    );

    app.get(
      '/api/v1/ad-network/writes',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'The write journal: every write sent or recorded as a dry run, newest first',
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(Write), meta: PageMeta }), ...errors(401, 403) },
        },
      },
      async (req) => {
        const { limit = 20, offset = 0 } = req.query;
        const r = await store.recentWrites(scopeOf(customerOf(req)), limit, offset);
        return page(
          r.rows.map((w) => ({ ...w, created_at: w.created_at.toISOString() })),
          r.total,
          limit,
          offset,
        );
      },
    );

    app.post(
      '/api/v1/ad-network/sync',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Run the hourly sync now for this app (state changes -> activity, yesterday and today stats)',
          response: {
            200: Type.Object({
              data: Type.Object({
                accounts: Type.Integer(),
                campaigns: Type.Integer(),
                stat_rows: Type.Integer(),
                changes: Type.Array(Type.Object({ kind: Type.String(), id: Type.String(), action: Type.String() })),
                errors: Type.Array(Type.String()),
              }),
            }),
            ...errors(401, 403, 409),
          },
        },
      },
      async (req) => {
        const scope = scopeOf(customerOf(req));
        const c = await store.connection(scope);
        if (!c || c.status !== 'connected')
          throw new AppError('conflict', 'The ad network is not connected for this app');
        return { data: await sync.syncApp(scope) };
      },
    );

    // The network pushes nothing: registering webhooks for it is refused (state changes come from the hourly sync).
    // The methods a webhook registration could use, not `all` (which adds QUERY, TRACE, PROPFIND... to the API document).
    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: '/api/v1/ad-network/webhooks',
      // Authenticated like the rest of the app's ad-network routes: a refusal is no reason to answer anyone.
      preHandler: auth.customer('viewer'),
      schema: { tags, summary: 'Refused: the ad network has no webhooks', response: errors(400, 401, 403) },
      handler: async () => {
        throw new AppError(
          'webhooks_not_supported',
          'Webhooks are not supported for the ad network; state changes are found by the hourly sync',
        );
      },
    });

    app.put(
      '/api/v1/admin/ad-network/apps/:appId/accounts/:accountId/live-writes',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags: ['admin'],
          summary: 'Enable or disable live writes to the ad network for one ad account of an app (Super Admin)',
          params: Type.Object({ appId: Uuid, accountId: NetId }),
          body: Type.Object({ enabled: Type.Boolean() }),
          response: { 200: Type.Object({ data: AccountView }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const r = await store.setLiveWrites(req.params.appId, req.params.accountId, req.body.enabled, req.user!.id);
        if (!r) throw notFound('Ad account');
        await activity.record(
          { tenantId: r.tenant_id, appId: req.params.appId },
          {
            entityType: 'ad_network_adaccount',
            entityId: r.id,
            action: req.body.enabled ? 'live_writes_enabled' : 'live_writes_disabled',
            description: `Live writes to the ad network ${req.body.enabled ? 'enabled' : 'disabled'} for ad account ${r.name} by a platform operator`,
            actorUserId: req.user!.id,
          },
        );
        return { data: accountView(r) };
      },
    );
  };
