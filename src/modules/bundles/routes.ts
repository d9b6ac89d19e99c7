import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { customerOf, keyOf, scopeOf, type Auth } from '../../http/auth.js';
import { errors, PageMeta, PageQuery, page } from '../../http/schemas.js';
import { SEMVER_PATTERN } from '../content/validate.js';
import { JSON_UTF8, matches, negotiate, taggedFor, variant, versionAnswer, type Served } from './served.js';
import type { BundleService } from './service.js';
import { VERSION_PATH } from './version-fast-path.js';

const Meta = {
  bundle_version: Type.Integer(),
  sdk_min_version: Type.String(),
  generated_at: Type.String({ format: 'date-time' }),
};
const Bundle = Type.Object({
  ...Meta,
  size_bytes: Type.Integer({ description: 'UTF-8 bytes of the serialized content' }),
  content: Type.Object(
    {
      onboarding_flows: Type.Record(Type.String(), Type.Unknown()),
      paywalls: Type.Record(Type.String(), Type.Unknown()),
      remote_config: Type.Record(Type.String(), Type.Unknown()),
      feature_flags: Type.Record(Type.String(), Type.Unknown()),
      in_app_messages: Type.Record(Type.String(), Type.Unknown()),
    },
    { additionalProperties: true },
  ),
});
const HistoryRow = Type.Object({
  ...Meta,
  size_bytes: Type.Integer(),
  reason: Type.String(),
  rolled_back_from: Type.Union([Type.Integer(), Type.Null()]),
  actor_user_id: Type.Union([Type.String(), Type.Null()]),
  current: Type.Boolean(),
});
const Version = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Floor = Type.Union([Type.String({ pattern: SEMVER_PATTERN, maxLength: 20 }), Type.Null()]);

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** Sends one version's bytes: strong ETag, 304 on a match, compressed when the client asks. */
async function sendBundle(req: FastifyRequest, reply: FastifyReply, s: Served, status = 200): Promise<FastifyReply> {
  reply.header('cache-control', 'no-cache').header('vary', 'accept-encoding');
  const enc = negotiate(header(req, 'accept-encoding'), s.body.length);
  const etag = taggedFor(s.etag, enc);
  if (status === 200 && matches(header(req, 'if-none-match'), s.etag))
    return reply.code(304).header('etag', etag).send();
  reply.code(status).header('etag', etag).type(JSON_UTF8);
  if (enc === 'identity') return reply.send(s.body);
  return reply.header('content-encoding', enc).send(await variant(s, enc));
}

function sendVersion(req: FastifyRequest, reply: FastifyReply, s: Served): FastifyReply {
  const { status, headers } = versionAnswer(s, header(req, 'if-none-match'));
  reply.code(status);
  for (let i = 0; i < headers.length; i += 2) reply.header(headers[i], headers[i + 1]);
  return reply.send(status === 200 ? s.versionBody : undefined);
}

export const bundleRoutes =
  ({ auth, bundles }: { auth: Auth; bundles: BundleService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['config-bundle'];

    app.get(
      '/api/v1/sdk/config-bundle',
      {
        preHandler: auth.sdkKey,
        schema: {
          tags,
          summary:
            'The current config bundle (SDK key; sandbox and production keys read the same bundle). Strong ETag, If-None-Match -> 304, gzip/br on request',
          response: { 200: Type.Object({ data: Bundle }), 304: Type.Null(), ...errors(401) },
        },
      },
      async (req, reply) => {
        const scope = scopeOf(keyOf(req));
        return sendBundle(req, reply, bundles.peek(scope) ?? (await bundles.current(scope)));
      },
    );

    app.get(
      VERSION_PATH,
      {
        preHandler: auth.sdkKey,
        schema: {
          tags,
          summary: 'Version check: { bundle_version, sdk_min_version, generated_at } without content (SDK key)',
          response: { 200: Type.Object({ data: Type.Object(Meta) }), 304: Type.Null(), ...errors(401) },
        },
      },
      (req, reply) => {
        // The hot path: a cached version answers synchronously, with bytes prepared once per version.
        const scope = scopeOf(keyOf(req));
        const hit = bundles.peek(scope);
        if (hit) {
          sendVersion(req, reply as unknown as FastifyReply, hit);
          return;
        }
        return bundles.current(scope).then((s) => {
          sendVersion(req, reply as unknown as FastifyReply, s);
        });
      },
    );

    app.post(
      '/api/v1/sdk/config-bundle/generate',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary: 'Force a new bundle version from the published content (admin+)',
          response: { 201: Type.Object({ data: Bundle }), ...errors(401, 403) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return sendBundle(req, reply, await bundles.regenerate(scopeOf(c), 'generate', c.userId), 201);
      },
    );

    app.get(
      '/api/v1/sdk/config-bundle/history',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'Every generated version, newest first (viewer+)',
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(HistoryRow), meta: PageMeta }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 20;
        const offset = req.query.offset ?? 0;
        const { data, total } = await bundles.history(scopeOf(customerOf(req)), limit, offset);
        return page(data, total, limit, offset);
      },
    );

    app.get(
      '/api/v1/sdk/config-bundle/history/:version',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'One earlier version with its full content, for audit (viewer+)',
          params: Type.Object({ version: Version }),
          response: { 200: Type.Object({ data: Bundle }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req, reply) =>
        (reply as unknown as FastifyReply)
          .type(JSON_UTF8)
          .send(await bundles.version(scopeOf(customerOf(req)), req.params.version)),
    );

    app.post(
      '/api/v1/sdk/config-bundle/rollback',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary: "Make a new, higher version whose content is an earlier version's (admin+)",
          body: Type.Object({ bundle_version: Version }),
          response: { 201: Type.Object({ data: Bundle }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return sendBundle(req, reply, await bundles.rollback(scopeOf(c), req.body.bundle_version, c.userId), 201);
      },
    );

    app.get(
      '/api/v1/sdk/config-bundle/settings',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: "The app's sdk_min_version floor and the current bundle's effective value (viewer+)",
          response: {
            200: Type.Object({
              data: Type.Object({ sdk_min_version: Floor, effective_sdk_min_version: Type.String() }),
            }),
            ...errors(401, 403),
          },
        },
      },
      async (req) => ({ data: await bundles.settings(scopeOf(customerOf(req))) }),
    );

    app.put(
      '/api/v1/sdk/config-bundle/settings',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary:
            'Set the app floor for sdk_min_version (x.y.z or null); a change makes a new bundle version (admin+)',
          body: Type.Object({ sdk_min_version: Floor }),
          response: {
            200: Type.Object({
              data: Type.Object({ sdk_min_version: Floor, bundle_version: Type.Optional(Type.Integer()) }),
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await bundles.setFloor(scopeOf(c), req.body.sdk_min_version, c.userId) };
      },
    );
  };
