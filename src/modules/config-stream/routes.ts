import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { keyOf, type Auth } from '../../http/auth.js';
import { errors } from '../../http/schemas.js';
import type { ConfigStreamService } from './service.js';

/** The stream's path; bootstrap's `storePath` names it (relative to the base URL). */
export const STREAM_PATH = '/api/v1/sdk/config-stream';

const SEQ = /^\d{1,15}$/;

const EventStream = {
  type: 'string',
  description:
    'text/event-stream. First `retry:` then `snapshot` (or, resuming, the missed `change` events, or one `resync`); ' +
    'then a `change` per bundle generation, rollback or option-set sync; heartbeat comments; `reconnect` before a server closes it.',
} as never;

export const configStreamRoutes =
  ({ auth, streams }: { auth: Auth; streams: ConfigStreamService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      STREAM_PATH,
      {
        preHandler: auth.sdkKey,
        schema: {
          tags: ['sdk'],
          summary: "Server-sent events: the app's config versions now and on every change (resumable on any instance)",
          headers: Type.Object({
            'last-event-id': Type.Optional(
              Type.String({ maxLength: 64, description: 'The id of the last event received' }),
            ),
          }),
          querystring: Type.Object({
            last_event_id: Type.Optional(
              Type.String({ maxLength: 64, description: 'Same as Last-Event-ID, for clients that cannot set it' }),
            ),
          }),
          response: { 200: EventStream, ...errors(401, 429, 503) },
        },
      },
      async (req, reply) => {
        // An id this service did not issue is treated as none: the client gets a fresh snapshot.
        const given = req.headers['last-event-id'] ?? req.query.last_event_id;
        const lastEventId = given !== undefined && SEQ.test(given) ? Number(given) : undefined;
        const stream = await streams.open(keyOf(req), lastEventId);
        reply.hijack();
        stream.attach(reply.raw, reply.getHeaders());
      },
    );

    // Before the server waits for open requests: streams never finish on their own.
    app.addHook('preClose', async () => streams.close());
  };
