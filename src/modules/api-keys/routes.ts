import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { Environment, errors, Uuid } from '../../http/schemas.js';
import type { ApiKeyService } from './service.js';

const Nullable = (t: ReturnType<typeof Type.String>) => Type.Union([t, Type.Null()]);

const Key = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  public_key: Type.String(),
  environment: Environment,
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  permissions: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  revokes_at: Nullable(Type.String({ format: 'date-time', description: 'Set while a rotation overlap runs' })),
  revoked_at: Nullable(Type.String({ format: 'date-time' })),
});
const KeyWithSecret = Type.Composite([
  Key,
  Type.Object({
    secret_key: Type.String({ description: 'Shown once; only its hash is stored' }),
    replaces: Type.Optional(Type.String()),
    previous_key_revokes_at: Type.Optional(Type.String({ format: 'date-time' })),
  }),
]);
const Permission = Type.Union([Type.Literal('export_data')]);

export const apiKeyRoutes =
  ({ auth, keys }: { auth: Auth; keys: ApiKeyService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const admin = auth.customer('admin');
    const tags = ['api-keys'];

    app.post(
      '/api/v1/sdk/api-keys',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create an SDK API key (admin+). svc_live_ = production, svc_test_ = sandbox',
          body: Type.Object({
            environment: Environment,
            permissions: Type.Optional(Type.Array(Permission, { maxItems: 10 })),
            name: Type.Optional(Type.String({ maxLength: 200 })),
          }),
          response: { 201: Type.Object({ data: KeyWithSecret }), ...errors(400, 401, 403) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply.status(201).send({ data: await keys.create(scopeOf(c), c.userId, req.body) });
      },
    );

    app.get(
      '/api/v1/sdk/api-keys',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'List the app keys, without secrets (admin+)',
          response: { 200: Type.Object({ data: Type.Array(Key) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await keys.list(scopeOf(customerOf(req))) }),
    );

    app.post(
      '/api/v1/sdk/api-keys/:id/rotate',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Issue a replacement key; the old one is revoked now or after overlap_seconds (admin+)',
          params: Type.Object({ id: Uuid }),
          body: Type.Optional(
            Type.Object({ overlap_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 604_800, default: 0 })) }),
          ),
          response: { 201: Type.Object({ data: KeyWithSecret }), ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply
          .status(201)
          .send({ data: await keys.rotate(scopeOf(c), c.userId, req.params.id, req.body?.overlap_seconds ?? 0) });
      },
    );

    app.delete(
      '/api/v1/sdk/api-keys/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Revoke a key at once (admin+)',
          params: Type.Object({ id: Uuid }),
          response: { 200: Type.Object({ data: Key }), ...errors(401, 403, 404) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await keys.revoke(scopeOf(c), c.userId, req.params.id) };
      },
    );
  };
