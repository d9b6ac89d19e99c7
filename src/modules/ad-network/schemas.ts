import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { customerOf, scopeOf } from '../../http/auth.js';
import type { NetworkOps, Ctx } from './service.js';

/** Network ids are UUIDs; dry-run answers use "dryrun-<uuid>". */
export const NetId = Type.String({ pattern: '^[A-Za-z0-9-]{1,80}$', maxLength: 80 });
export const AccountParams = Type.Object({ accountId: NetId });
export const EntityParams = Type.Object({ accountId: NetId, id: NetId });
export const Name = Type.String({ minLength: 1, maxLength: 375 });
export const Usd = Type.Number({
  minimum: 0.01,
  maximum: 10_000_000,
  description: 'US dollars; converted to micro-units of the account currency',
});
export const Status = Type.Union([Type.Literal('ACTIVE'), Type.Literal('PAUSED')]);
export const IsoTime = Type.String({ format: 'date-time', maxLength: 40 });
export const Day = Type.String({ format: 'date', maxLength: 10 });

export const IdemHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Reuse on retries: the same key never creates a second object',
    }),
  ),
});

/** An object as the ad network returns it (pass-through). */
export const NetObject = Type.Object({ id: Type.String() }, { additionalProperties: true });

export const Budget = Type.Object({
  usd: Type.Number(),
  currency: Type.String(),
  micro: Type.Integer(),
  usd_per_unit: Type.Number(),
  rate_day: Type.Union([Type.String(), Type.Null()]),
});

export const WriteAnswer = Type.Object({
  data: Type.Object({
    dry_run: Type.Boolean({ description: 'true: recorded only; live writes are off for this ad account' }),
    replayed: Type.Boolean({ description: 'true: an earlier request with this Idempotency-Key answered' }),
    write_id: Type.String(),
    idempotency_key: Type.String(),
    object: NetObject,
    budget: Type.Optional(Budget),
  }),
});

export const ListAnswer = Type.Object({ data: Type.Array(NetObject) });

export const AccountView = Type.Object({
  id: Type.String(),
  organization_id: Type.String(),
  name: Type.String(),
  currency: Type.String(),
  timezone: Type.String(),
  status: Type.String(),
  live_writes: Type.Boolean(),
});

/** Request context of a management call: scope, the (owned) ad account, the actor and the Idempotency-Key. */
export async function ctxOf(ops: NetworkOps, req: FastifyRequest, accountId: string): Promise<Ctx> {
  const c = customerOf(req);
  const scope = scopeOf(c);
  const key = req.headers['idempotency-key'];
  return {
    scope,
    acct: await ops.account(scope, accountId),
    actor: c.userId,
    key: typeof key === 'string' ? key : undefined,
  };
}
