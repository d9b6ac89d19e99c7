import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { keyOf, scopeOf, type Auth } from '../../http/auth.js';
import { enforceRate, type RateLimiter } from '../../http/rate-limit.js';
import { errors } from '../../http/schemas.js';
import { MAX_PAGE_SIZE, PAGE_SIZE, type OptionSetService } from './service.js';

export const SYNC_PER_MINUTE = 20;
export const MAX_SYNC_ITEMS = 5000;
// 5,000 rows with long labels and option_data fit; anything larger is refused with 413.
const SYNC_BODY_LIMIT = 12 * 1024 * 1024;

const SetParams = Type.Object({
  setId: Type.String({
    minLength: 1,
    maxLength: 128,
    pattern: '^[A-Za-z0-9._:~-]+$',
    description: 'The set id (letters, digits, . _ : ~ -)',
  }),
});

const OptionData = Type.Record(Type.String({ maxLength: 128 }), Type.Unknown(), {
  maxProperties: 50,
  description: 'Free-form presentation data (e.g. a subtitle), at most 4 KB as JSON',
});

const SyncItem = Type.Object({
  id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'Stable external key; without it, value identifies the item',
    }),
  ),
  value: Type.String({
    minLength: 1,
    maxLength: 512,
    description: 'The analytics key; locked once an answer records it',
  }),
  label: Type.String({ minLength: 1, maxLength: 1000 }),
  sort_order: Type.Optional(
    Type.Number({
      minimum: -1e12,
      maximum: 1e12,
      description: 'Default 0 for a new item; omitted keeps the stored one',
    }),
  ),
  option_data: Type.Optional(
    Type.Union([OptionData, Type.Null()], { description: 'Omitted keeps the stored data; null clears it' }),
  ),
});

const Rejected = Type.Object({
  index: Type.Integer(),
  value: Type.String(),
  id: Type.Optional(Type.String()),
  reason: Type.String({ description: 'value_locked | value_in_use | duplicate_row' }),
  message: Type.String(),
});

const SyncAnswer = Type.Object({
  data: Type.Object({
    set_id: Type.String(),
    mode: Type.Union([Type.Literal('merge'), Type.Literal('replace')]),
    version: Type.Integer(),
    created: Type.Integer(),
    updated: Type.Integer(),
    archived: Type.Integer(),
    rejected: Type.Array(Rejected),
    item_count: Type.Integer({ description: 'Visible items after this sync' }),
  }),
});

const Item = Type.Object({
  id: Type.Union([Type.String(), Type.Null()]),
  value: Type.String(),
  label: Type.String(),
  sort_order: Type.Number(),
  option_data: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
});

export const OptionPage = Type.Object({
  set_id: Type.String(),
  version: Type.Integer(),
  items: Type.Array(Item),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Opaque; null on the last page. Pins the version paging started on.',
  }),
});

export const optionSetRoutes =
  ({
    auth,
    optionSets,
    limiter,
  }: {
    auth: Auth;
    optionSets: OptionSetService;
    limiter: RateLimiter;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/api/v1/sdk/option-sets/:setId/sync',
      {
        preHandler: auth.keyPair,
        bodyLimit: SYNC_BODY_LIMIT,
        schema: {
          tags: ['option-sets'],
          summary: 'Push list contents (merge or replace, at most 5,000 items, 20 per minute per key)',
          description:
            'Version +1 on every sync. Nothing is deleted: replace archives items not sent; sending an archived item revives it. ' +
            'Rows that would change a locked value (or clash with another item) are listed in rejected; the rest applies atomically.',
          params: SetParams,
          body: Type.Object({
            mode: Type.Optional(Type.Union([Type.Literal('merge'), Type.Literal('replace')], { default: 'merge' })),
            items: Type.Array(SyncItem, { maxItems: MAX_SYNC_ITEMS }),
            since_version: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: 2_147_483_647,
                description:
                  'replace only: items sent by any sync with this version or later also count as sent (sets over 5,000 items: pass the version of the run’s first merge)',
              }),
            ),
          }),
          response: { 200: SyncAnswer, ...errors(400, 401, 413, 429) },
        },
      },
      async (req, reply) => {
        const key = keyOf(req);
        await enforceRate(limiter, reply, `option-sync:${key.keyId}`, 1, SYNC_PER_MINUTE, 'sync requests');
        const data = await optionSets.sync(
          scopeOf(key),
          req.params.setId,
          { mode: req.body.mode ?? 'merge', items: req.body.items, since_version: req.body.since_version },
          key,
        );
        return { data };
      },
    );

    app.get(
      '/api/v1/sdk/option-sets/:setId',
      {
        preHandler: auth.sdkKey,
        schema: {
          tags: ['option-sets'],
          summary: 'Visible items by sort_order then value, cursor-paged, with accent- and case-insensitive search (q)',
          params: SetParams,
          querystring: Type.Object({
            cursor: Type.Optional(Type.String({ maxLength: 2048 })),
            q: Type.Optional(
              Type.String({
                maxLength: 200,
                description: 'Every word must occur in value or label, ignoring accents and case',
              }),
            ),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: PAGE_SIZE })),
          }),
          response: { 200: Type.Object({ data: OptionPage }), ...errors(400, 401, 404) },
        },
      },
      async (req, reply) => {
        // The service answers ready JSON in this schema's shape (cached pages and precomputed item
        // bytes): a string with a JSON content type goes out as it is, without a second serialization.
        const json = await optionSets.answer(scopeOf(keyOf(req)), req.params.setId, req.query);
        // (The typed reply only knows the object form; the bytes are that object serialized.)
        return reply.type('application/json; charset=utf-8').send(json as never);
      },
    );
  };
