import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { errors, page, PageMeta, PageQuery, Uuid } from '../../http/schemas.js';
import type { PrivacyService } from './service.js';

/** Most subjects in one request. */
export const MAX_SUBJECTS = 1000;

const tags = ['privacy'];
const DateTime = { format: 'date-time' };
const Nullable = (s: ReturnType<typeof Type.String>) => Type.Union([s, Type.Null()]);
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$', description: "The subject's keyed hash (HMAC-SHA256, hex)" });
const Subject = Type.Union([
  Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
  Type.Object({ anon_id: Type.String({ format: 'uuid', maxLength: 36 }) }, { additionalProperties: false }),
]);
const StoreReceipt = Type.Object({
  deleted: Type.Integer({
    description:
      'Rows removed (analytics: device, session, purchase and funnel-step rows taken out of the rollups; exports: exports expired)',
  }),
  finished_at: Type.String(DateTime),
  remaining: Type.Integer({
    description: 'What a search for the subjects finds afterwards; 0 when verified, -1 before',
  }),
});
const Deletion = Type.Object({
  id: Type.String(),
  status: Type.Union(['pending', 'running', 'done', 'failed', 'cancelled'].map((s) => Type.Literal(s))),
  subjects: Type.Array(Type.Object({ kind: Type.String(), hash: Type.String() }), {
    description: 'The subjects, as keyed hashes only',
  }),
  suppress: Type.Boolean(),
  requested_by: Nullable(Type.String()),
  created_at: Type.String(DateTime),
  started_at: Nullable(Type.String(DateTime)),
  completed_at: Nullable(Type.String(DateTime)),
  error: Nullable(Type.String()),
  receipt: Type.Union([
    Type.Object({
      stores: Type.Record(Type.String(), StoreReceipt, {
        description: 'events, option_locks, identity, webhooks, exports, analytics, experiments',
      }),
      verified: Type.Boolean(),
    }),
    Type.Null(),
  ]),
});
const Suppression = Type.Object({
  hash: Type.String(),
  kind: Type.String(),
  deletion_id: Nullable(Type.String()),
  created_by: Nullable(Type.String()),
  created_at: Type.String(DateTime),
});

/** Deletion requests and suppressions (admin+; docs/privacy.md). */
export const privacyRoutes =
  ({ auth, privacy }: { auth: Auth; privacy: PrivacyService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const admin = auth.customer('admin');
    app.post(
      '/api/v1/privacy/deletions',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Erase people from every store (admin+); their later data is suppressed unless suppress is false',
          description:
            'Answers 202 once the request, its suppressions and its job are committed. A user_id also erases every ' +
            'anon_id it was ever linked to, in both environments. Follow it with GET .../deletions/{id}.',
          body: Type.Object({
            subjects: Type.Array(Subject, { minItems: 1, maxItems: MAX_SUBJECTS }),
            suppress: Type.Optional(Type.Boolean({ default: true })),
          }),
          response: { 202: Type.Object({ data: Deletion }), ...errors(400, 401, 403) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply.status(202).send({ data: await privacy.request(scopeOf(c), c.userId, req.body) });
      },
    );

    app.get(
      '/api/v1/privacy/deletions',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Deletion requests, newest first, with their receipts (admin+)',
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(Deletion), meta: PageMeta }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 20;
        const offset = req.query.offset ?? 0;
        const { data, total } = await privacy.list(scopeOf(customerOf(req)), limit, offset);
        return page(data, total, limit, offset);
      },
    );

    app.get(
      '/api/v1/privacy/deletions/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'A deletion request and its receipt (admin+)',
          params: Type.Object({ id: Uuid }),
          response: { 200: Type.Object({ data: Deletion }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({ data: await privacy.get(scopeOf(customerOf(req)), req.params.id) }),
    );

    app.delete(
      '/api/v1/privacy/deletions/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Cancel a pending deletion request (admin+); 409 once it runs',
          params: Type.Object({ id: Uuid }),
          response: { 200: Type.Object({ data: Deletion }), ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await privacy.cancel(scopeOf(c), c.userId, req.params.id) };
      },
    );

    app.get(
      '/api/v1/privacy/suppressions',
      {
        preHandler: admin,
        schema: {
          tags,
          summary:
            'Suppressed subjects (keyed hashes): their events and identify calls are dropped at ingestion (admin+)',
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(Suppression), meta: PageMeta }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 20;
        const offset = req.query.offset ?? 0;
        const { data, total } = await privacy.suppressions(scopeOf(customerOf(req)), limit, offset);
        return page(data, total, limit, offset);
      },
    );

    app.get(
      '/api/v1/privacy/suppressions/:hash',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'One suppression (admin+)',
          params: Type.Object({ hash: Hash }),
          response: { 200: Type.Object({ data: Suppression }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({ data: await privacy.suppression(scopeOf(customerOf(req)), req.params.hash) }),
    );

    app.delete(
      '/api/v1/privacy/suppressions/:hash',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: "Lift a suppression: that subject's new data is accepted again (admin+)",
          params: Type.Object({ hash: Hash }),
          response: { 204: Type.Null(), ...errors(400, 401, 403, 404) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        await privacy.lift(scopeOf(c), c.userId, req.params.hash);
        return reply.status(204).send(null);
      },
    );
  };
