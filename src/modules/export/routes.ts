import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { keyOf, type Auth } from '../../http/auth.js';
import { errors } from '../../http/schemas.js';
import { MAX_EVENT_NAME_LENGTH, MAX_EVENT_NAMES, type ExportService } from './service.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Timestamp = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

const Window = {
  start_date: Timestamp('Full ISO 8601 timestamp, inclusive (event time). A date alone is refused.'),
  end_date: Timestamp('Full ISO 8601 timestamp, exclusive (event time).'),
};
const Filters = {
  ...Window,
  event_names: Type.Optional(
    Type.String({
      maxLength: MAX_EVENT_NAMES * (MAX_EVENT_NAME_LENGTH + 1),
      description: `Comma-separated, at most ${MAX_EVENT_NAMES}; omitted means all`,
    }),
  ),
  user_id: Type.Optional(
    Type.String({
      maxLength: 256,
      description: 'Events carrying this user id, and events of devices identified as this user',
    }),
  ),
};

const EventObject = Type.Record(Type.String(), Type.Unknown(), {
  description: 'The stored envelope as received, plus received_at (ISO 8601)',
});

const ExportRecord = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('processing'), Type.Literal('completed'), Type.Literal('failed')]),
  environment: Type.String(),
  params: Type.Object({ start_date: Type.String(), end_date: Type.String(), event_names: Type.Array(Type.String()) }),
  callback_url: Nullable(Type.String()),
  download_url: Nullable(Type.String()),
  event_count: Nullable(Type.Integer()),
  file_size_bytes: Nullable(Type.Integer()),
  created_at: Type.String({ format: 'date-time' }),
  completed_at: Nullable(Type.String({ format: 'date-time' })),
  expires_at: Nullable(Type.String({ format: 'date-time' })),
  expired: Type.Boolean({ description: 'Completed and past expires_at: the download answers 409' }),
  failure_reason: Nullable(Type.String()),
});

const SchemaEntry = Type.Object({
  event_name: Type.String(),
  count: Type.Integer(),
  first_seen: Type.String({ format: 'date-time' }),
  last_seen: Type.String({ format: 'date-time' }),
  properties: Type.Array(Type.Object({ name: Type.String(), types: Type.Array(Type.String()) })),
});

// Any string is looked up, so an id that is not ours (or not a uuid) is simply unknown: 404.
const ExportId = Type.String({ minLength: 1, maxLength: 100 });

const FileResponse = (description: string) => ({ type: 'string', description }) as never;

export const exportRoutes =
  ({
    auth,
    exports,
    onClose,
  }: {
    auth: Auth;
    exports: ExportService;
    onClose?: () => Promise<void>;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['export'];
    const preHandler = auth.exportKey;
    if (onClose) app.addHook('onClose', async () => onClose());

    app.get(
      '/api/v1/sdk/events/export',
      {
        preHandler,
        schema: {
          tags,
          summary:
            'Paged read of raw events (export_data key; environment follows the key), ordered by event time then event id',
          querystring: Type.Object({
            ...Filters,
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
            offset: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 }),
          }),
          response: {
            200: Type.Object({
              data: Type.Array(EventObject),
              meta: Type.Object({
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
                hasMore: Type.Boolean(),
              }),
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      async (req) => exports.page(keyOf(req), req.query),
    );

    app.get(
      '/api/v1/sdk/events/export/download',
      {
        preHandler,
        schema: {
          tags,
          summary: 'Streams the filtered events as one file: a JSON array or CSV (nested fields flattened with dots)',
          querystring: Type.Object({
            ...Filters,
            format: Type.Union([Type.Literal('json'), Type.Literal('csv')], { default: 'json' }),
          }),
          response: { 200: FileResponse('JSON array or CSV file'), ...errors(400, 401, 403, 429) },
        },
      },
      async (req, reply) => {
        const file = exports.download(keyOf(req), req.query);
        return reply
          .header('content-disposition', `attachment; filename="${file.filename}"`)
          .header('cache-control', 'no-store')
          .type(file.contentType)
          .send(file.stream);
      },
    );

    app.post(
      '/api/v1/sdk/events/export/bulk',
      {
        preHandler,
        schema: {
          tags,
          summary: 'Starts an asynchronous bulk export; optional signed completion callback',
          body: Type.Object({
            ...Window,
            event_names: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: MAX_EVENT_NAME_LENGTH }), {
                maxItems: MAX_EVENT_NAMES,
              }),
            ),
            callback_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
          }),
          response: { 202: Type.Object({ data: ExportRecord }), ...errors(400, 401, 403) },
        },
      },
      async (req, reply) => reply.status(202).send({ data: await exports.createBulk(keyOf(req), req.body) }),
    );

    app.get(
      '/api/v1/sdk/events/export/bulk/:id',
      {
        preHandler,
        schema: {
          tags,
          summary: 'Bulk export status',
          params: Type.Object({ id: ExportId }),
          response: { 200: Type.Object({ data: ExportRecord }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => ({ data: await exports.getBulk(keyOf(req), req.params.id) }),
    );

    app.get(
      '/api/v1/sdk/events/export/bulk/:id/download',
      {
        preHandler,
        schema: {
          tags,
          summary: 'Downloads a completed bulk export (export-<id>.json); 409 before completion or after expires_at',
          params: Type.Object({ id: ExportId }),
          response: { 200: FileResponse('JSON array of event objects'), ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        const file = await exports.openBulkFile(keyOf(req), req.params.id);
        return reply
          .header('content-disposition', `attachment; filename="${file.filename}"`)
          .header('content-length', String(file.sizeBytes))
          .type('application/json; charset=utf-8')
          .send(file.stream);
      },
    );

    app.get(
      '/api/v1/sdk/events/export/schema',
      {
        preHandler,
        schema: {
          tags,
          summary:
            'Event names with counts, first/last seen (event time) and observed property types; refreshed in the background',
          response: { 200: Type.Object({ data: Type.Array(SchemaEntry) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await exports.schema(keyOf(req)) }),
    );
  };
