import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { notFound } from '../../http/errors.js';
import { errors } from '../../http/schemas.js';
import { LOCKED_LIMIT, OVERVIEW_LIMIT, type OptionSetReadModel } from './read-model.js';

const SetParams = Type.Object({ setId: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:~-]+$' }) });
const DateTime = Type.String({ format: 'date-time' });

/** Signed-in (console) reads of option sets; the items themselves are read through the SDK endpoint. */
export const optionSetConsoleRoutes =
  ({ auth, read }: { auth: Auth; read: OptionSetReadModel }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['option-sets'];
    app.get(
      '/api/v1/option-sets',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: "The app's option sets with their version and counts of visible and archived items (viewer+)",
          response: {
            200: Type.Object({
              data: Type.Array(
                Type.Object({
                  set_id: Type.String(),
                  version: Type.Integer(),
                  updated_at: DateTime,
                  item_count: Type.Integer(),
                  archived_count: Type.Integer(),
                }),
              ),
            }),
            ...errors(401, 403),
          },
        },
      },
      async (req) => ({ data: await read.sets(scopeOf(customerOf(req))) }),
    );

    app.get(
      '/api/v1/option-sets/:setId',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: `One set: archived items (first ${OVERVIEW_LIMIT}), locked values (first ${LOCKED_LIMIT}), the latest ${OVERVIEW_LIMIT} syncs (viewer+)`,
          params: SetParams,
          response: {
            200: Type.Object({
              data: Type.Object({
                set_id: Type.String(),
                version: Type.Integer(),
                archived: Type.Array(
                  Type.Object({
                    id: Type.Union([Type.String(), Type.Null()]),
                    value: Type.String(),
                    label: Type.String(),
                  }),
                ),
                locked_values: Type.Array(Type.String(), {
                  description: 'Values recorded by an answer: a sync cannot change them',
                }),
                syncs: Type.Array(Type.Object({ at: DateTime, description: Type.String() })),
              }),
            }),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req) => {
        const data = await read.overview(scopeOf(customerOf(req)), req.params.setId);
        if (!data) throw notFound('Option set');
        return { data };
      },
    );
  };
