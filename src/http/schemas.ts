import { Type, type TSchema } from '@sinclair/typebox';

export const Uuid = Type.String({ format: 'uuid', maxLength: 36 });

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details' },
);

export const ProblemRef = Type.Ref('Problem');

/** Standard error responses, added to each route's response map. */
export function errors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, ProblemRef]));
}

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
});

export const PageMeta = Type.Object({
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  hasMore: Type.Boolean(),
});

export function page<T>(data: T[], total: number, limit: number, offset: number) {
  return { data, meta: { total, limit, offset, hasMore: offset + data.length < total } };
}

export const Environment = Type.Union([Type.Literal('production'), Type.Literal('sandbox')]);
