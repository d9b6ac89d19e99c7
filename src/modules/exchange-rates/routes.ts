import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Auth } from '../../http/auth.js';
import { errors } from '../../http/schemas.js';
import type { ExchangeRateService } from './service.js';

const Rate = Type.Object({
  currency: Type.String({ pattern: '^[A-Za-z]{3}$' }),
  day: Type.String({ format: 'date' }),
  usd_per_unit: Type.Number({ exclusiveMinimum: 0, maximum: 1e6 }),
});

export const exchangeRateRoutes =
  ({ auth, rates }: { auth: Auth; rates: ExchangeRateService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['admin'];
    app.get(
      '/api/v1/admin/exchange-rates',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags,
          summary: 'USD exchange-rate table used for revenue and ad spend',
          querystring: Type.Object({ currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$' })) }),
          response: { 200: Type.Object({ data: Type.Array(Rate) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await rates.list(req.query.currency) }),
    );

    app.put(
      '/api/v1/admin/exchange-rates',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags,
          summary: 'Add or correct rates (USD per unit of currency, per day)',
          body: Type.Object({ rates: Type.Array(Rate, { minItems: 1, maxItems: 10_000 }) }),
          response: { 200: Type.Object({ data: Type.Object({ upserted: Type.Integer() }) }), ...errors(400, 401, 403) },
        },
      },
      async (req) => ({ data: { upserted: await rates.upsert(req.body.rates) } }),
    );
  };
