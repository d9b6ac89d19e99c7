import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { errors, page, PageMeta, PageQuery, Uuid } from '../../http/schemas.js';
import { WEBHOOK_EVENT_TYPES, type WebhookService } from './service.js';

const NullableString = (opts: object = {}) => Type.Union([Type.String(opts), Type.Null()]);
const DateTime = { format: 'date-time' };
// Free strings here so the service can answer ad_network.* with its own code.
const EventTypes = Type.Array(
  Type.String({ minLength: 1, maxLength: 100, description: WEBHOOK_EVENT_TYPES.join(' | ') }),
  { minItems: 1, maxItems: 20 },
);
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'http(s) URL; private and internal addresses are refused',
});

const Endpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: NullableString(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: NullableString({
    description: 'Why the service disabled it (410 Gone, 5 days of failures), or null',
  }),
  disabled_at: NullableString(DateTime),
  failing_since: NullableString({ ...DateTime, description: 'Start of the current run of failed attempts' }),
  previous_secret_expires_at: NullableString({
    ...DateTime,
    description: 'Until then the previous secret signs too (rotation overlap)',
  }),
  created_at: Type.String(DateTime),
  updated_at: Type.String(DateTime),
});
const EndpointWithSecret = Type.Composite([
  Endpoint,
  Type.Object({ secret: Type.String({ description: 'Shown once (whsec_...)' }) }),
]);

const Attempt = Type.Object({
  attempt: Type.Integer(),
  at: Type.String(DateTime),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  duration_ms: Type.Integer(),
  error: NullableString(),
});
const Delivery = Type.Object({
  id: Type.String({ description: 'Also the webhook-id header: stable across retries, dedupe on it' }),
  event_type: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Type.String(DateTime),
  last_attempt_at: NullableString(DateTime),
  next_attempt_at: NullableString(DateTime),
  succeeded_at: NullableString(DateTime),
  last_error: NullableString(),
  last_duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  environment: NullableString(),
  attempt_log: Type.Array(Attempt),
});
const DeliveryWithBody = Type.Composite([
  Delivery,
  Type.Object({ body: Type.String({ description: 'The exact signed body' }) }),
]);

const IdParams = Type.Object({ id: Uuid });
const DeliveryParams = Type.Object({ id: Uuid, deliveryId: Uuid });

export const webhookRoutes =
  ({ auth, webhooks }: { auth: Auth; webhooks: WebhookService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const admin = auth.customer('admin');
    const tags = ['webhooks'];

    app.post(
      '/api/v1/webhooks',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Create a webhook endpoint (admin+); the signing secret is shown once',
          body: Type.Object({
            url: Url,
            events: EventTypes,
            description: Type.Optional(Type.String({ maxLength: 500 })),
            enabled: Type.Optional(Type.Boolean({ default: true })),
          }),
          response: { 201: Type.Object({ data: EndpointWithSecret }), ...errors(400, 401, 403, 409) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply.status(201).send({ data: await webhooks.create(scopeOf(c), c.userId, req.body) });
      },
    );

    app.get(
      '/api/v1/webhooks',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'List the app webhook endpoints (admin+)',
          response: { 200: Type.Object({ data: Type.Array(Endpoint) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await webhooks.list(scopeOf(customerOf(req))) }),
    );

    app.get(
      '/api/v1/webhooks/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Read a webhook endpoint (admin+)',
          params: IdParams,
          response: { 200: Type.Object({ data: Endpoint }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({ data: await webhooks.get(scopeOf(customerOf(req)), req.params.id) }),
    );

    app.patch(
      '/api/v1/webhooks/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Change url, events, enabled or description (admin+); enabling clears an automatic disable',
          params: IdParams,
          body: Type.Object({
            url: Type.Optional(Url),
            events: Type.Optional(EventTypes),
            enabled: Type.Optional(Type.Boolean()),
            description: Type.Optional(NullableString({ maxLength: 500 })),
          }),
          response: { 200: Type.Object({ data: Endpoint }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await webhooks.update(scopeOf(c), c.userId, req.params.id, req.body) };
      },
    );

    app.delete(
      '/api/v1/webhooks/:id',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Delete a webhook endpoint and its delivery log (admin+)',
          params: IdParams,
          response: { 204: Type.Null(), ...errors(400, 401, 403, 404) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        await webhooks.remove(scopeOf(c), c.userId, req.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/api/v1/webhooks/:id/rotate-secret',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'New signing secret (shown once); the old one keeps signing alongside for 24 h (admin+)',
          params: IdParams,
          response: { 200: Type.Object({ data: EndpointWithSecret }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return { data: await webhooks.rotateSecret(scopeOf(c), c.userId, req.params.id) };
      },
    );

    app.get(
      '/api/v1/webhooks/:id/deliveries',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Delivery log of an endpoint, newest first, kept 30 days (admin+)',
          params: IdParams,
          querystring: Type.Composite([
            PageQuery,
            Type.Object({
              status: Type.Optional(
                Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
              ),
            }),
          ]),
          response: { 200: Type.Object({ data: Type.Array(Delivery), meta: PageMeta }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 20;
        const offset = req.query.offset ?? 0;
        const { rows, total } = await webhooks.deliveries(scopeOf(customerOf(req)), req.params.id, {
          limit,
          offset,
          status: req.query.status,
        });
        return page(rows, total, limit, offset);
      },
    );

    app.get(
      '/api/v1/webhooks/:id/deliveries/:deliveryId',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'One delivery with its signed body and attempt history (admin+)',
          params: DeliveryParams,
          response: { 200: Type.Object({ data: DeliveryWithBody }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({
        data: await webhooks.delivery(scopeOf(customerOf(req)), req.params.id, req.params.deliveryId),
      }),
    );

    app.post(
      '/api/v1/webhooks/:id/test',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Send a webhook.test event to this endpoint now (admin+); it appears in the delivery log',
          params: IdParams,
          response: { 202: Type.Object({ data: Delivery }), ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply.status(202).send({ data: await webhooks.sendTest(scopeOf(c), c.userId, req.params.id) });
      },
    );

    app.post(
      '/api/v1/webhooks/:id/deliveries/:deliveryId/retry',
      {
        preHandler: admin,
        schema: {
          tags,
          summary: 'Send a delivery again now, same webhook-id (admin+); a finished delivery gets one more attempt',
          params: DeliveryParams,
          response: { 202: Type.Object({ data: Delivery }), ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply
          .status(202)
          .send({ data: await webhooks.retry(scopeOf(c), c.userId, req.params.id, req.params.deliveryId) });
      },
    );
  };
