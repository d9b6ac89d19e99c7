import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from '@sinclair/typebox';
import { keyOf, type Auth } from '../../http/auth.js';
import { rateHeaders } from '../../http/rate-limit.js';
import { errors } from '../../http/schemas.js';
import { EventEnvelope } from './envelope.js';
import type { IngestService } from './service.js';

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const IngestAnswer = Type.Object({
  accepted: Type.Integer(),
  rejected: Type.Integer(),
  sampled: Type.Integer(),
  consent_declined: Type.Integer(),
  suppressed: Type.Integer({
    description: 'Events of subjects suppressed by a privacy deletion: dropped, never stored (not an error)',
  }),
  errors: Type.Optional(
    Type.Array(
      Type.Object({
        index: Type.Integer(),
        event_id: Type.Optional(Type.String()),
        code: Type.String(),
        path: Type.String({ description: 'JSON pointer of the offending field inside the event' }),
        message: Type.String(),
      }),
    ),
  ),
});

/** The ingest body; its items are checked one by one (checkEvent), and documented as EventEnvelope. */
const batchOf = (item: TSchema) => Type.Object({ batch: Type.Array(item, { minItems: 1, maxItems: 500 }) });

export const ingestRoutes =
  ({ auth, ingest }: { auth: Auth; ingest: IngestService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Documented as a component; events are validated one by one in the service, not by the body schema,
    // so that one bad event does not fail its batch.
    app.addSchema(EventEnvelope);
    app.post(
      '/api/v1/ingest/events',
      {
        preHandler: auth.sdkKey,
        bodyLimit: MAX_BODY_BYTES,
        // Each event passes the JSON bounds on its own (checkEvent): a bad one is rejected alone.
        config: { jsonBounds: 'per-item', documentedBody: batchOf(Type.Ref(EventEnvelope)) },
        schema: {
          tags: ['ingest'],
          summary: 'Ingest a batch of 1 to 500 events; invalid events are rejected alone with their index',
          description:
            'Each item must match EventEnvelope; a 202 means the valid events are committed. Retries are stored once (dedupe on event_id). ' +
            '503 with Retry-After when ingestion is behind: nothing of the batch was stored, retry it later.',
          body: batchOf(Type.Unknown()),
          response: { 202: IngestAnswer, ...errors(400, 401, 413, 429, 503) },
        },
      },
      async (req, reply) => {
        const { result, rate } = await ingest.ingest(keyOf(req), req.body.batch);
        if (rate) reply.headers(rateHeaders(rate));
        return reply.status(202).send(result);
      },
    );

    app.post(
      '/api/v1/ingest/identify',
      {
        preHandler: auth.sdkKey,
        schema: {
          tags: ['ingest'],
          summary: 'Link an anonymous device to a known user (latest link wins, history kept) and store traits',
          body: Type.Object({
            anon_id: Type.String({ pattern: UUID, maxLength: 36 }),
            user_id: Type.String({ minLength: 1, maxLength: 256 }),
            ts_ms: Type.Number({ minimum: 0, maximum: 1e14 }),
            traits: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.Unknown(), { maxProperties: 200 })),
          }),
          response: {
            202: Type.Object({
              linked: Type.Boolean(),
              duplicate: Type.Boolean(),
              suppressed: Type.Boolean({ description: 'The subject is suppressed: nothing was stored' }),
            }),
            ...errors(400, 401),
          },
        },
      },
      async (req, reply) => reply.status(202).send(await ingest.identify(keyOf(req), req.body)),
    );
  };
