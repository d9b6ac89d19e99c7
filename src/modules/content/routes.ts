import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OPERATORS } from '@mobile-sdk-backend/sdk/rules';
import { Type, type TProperties } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { errors, PageMeta, PageQuery, page, Uuid } from '../../http/schemas.js';
import type { ContentService, ItemInput } from './service.js';
import type { ContentKind } from './store.js';
import { KEY_PATTERN, SEMVER_PATTERN } from './validate.js';

// Free-form JSON parts: structure is the customer's; size and depth are bounded in the service (256 KB per item).
const FreeObject = Type.Object({}, { additionalProperties: true, maxProperties: 1000 });
const Free = Type.Unknown();
const SetId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:~-]+$' });
const Step = Type.Object(
  { option_set_id: Type.Optional(SetId) },
  {
    additionalProperties: true,
    maxProperties: 200,
    description: 'Free-form step; option_set_id references an option set',
  },
);
const Name = Type.String({ minLength: 1, maxLength: 200 });
const SdkMin = Type.String({
  pattern: SEMVER_PATTERN,
  maxLength: 20,
  description: 'Minimum SDK version this item needs (x.y.z)',
});

const FIELDS: Record<ContentKind, TProperties> = {
  onboarding_flow: {
    steps: Type.Array(Step, { maxItems: 200 }),
    settings: FreeObject,
  },
  paywall: {
    layout: Free,
    plans: Type.Array(FreeObject, { maxItems: 50 }),
    cta: Free,
    dismiss: Type.Boolean(),
  },
  in_app_message: {
    message_type: Type.String({ minLength: 1, maxLength: 64 }),
    content: FreeObject,
    trigger_rules: FreeObject,
    audience: FreeObject,
    priority: Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 }),
  },
};

const PATHS: [string, ContentKind][] = [
  ['onboarding-flows', 'onboarding_flow'],
  ['paywalls', 'paywall'],
  ['in-app-messages', 'in_app_message'],
];

const Item = (kind: ContentKind) =>
  Type.Object(
    {
      id: Type.String(),
      name: Type.String(),
      status: Type.Union([Type.Literal('draft'), Type.Literal('published')]),
      ...FIELDS[kind],
      sdk_min_version: Type.Union([Type.String(), Type.Null()]),
      published_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      published_by: Type.Union([Type.String(), Type.Null()]),
      created_by: Type.Union([Type.String(), Type.Null()]),
      updated_by: Type.Union([Type.String(), Type.Null()]),
      created_at: Type.String({ format: 'date-time' }),
      updated_at: Type.String({ format: 'date-time' }),
      bundle_version: Type.Optional(Type.Integer({ description: 'The bundle version this change produced' })),
    },
    { additionalProperties: true },
  );
const Changed = (data: ReturnType<typeof Type.Object>) =>
  Type.Object({
    data,
    bundle_version: Type.Optional(
      Type.Integer({ description: 'The bundle version this change produced, when it produced one' }),
    ),
  });

export const contentRoutes =
  ({ auth, content }: { auth: Auth; content: ContentService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    for (const [path, kind] of PATHS) {
      const tags = [path];
      const base = `/api/v1/${path}`;
      const Params = Type.Object({ id: Uuid });
      const Resp = Item(kind);
      const fields = FIELDS[kind];
      const Create = Type.Object({
        name: Name,
        ...Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, Type.Optional(s)])),
        sdk_min_version: Type.Optional(SdkMin),
      });
      const Patch = Type.Object({
        name: Type.Optional(Name),
        ...Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, Type.Optional(s)])),
        sdk_min_version: Type.Optional(Type.Union([SdkMin, Type.Null()])),
      });

      app.post(
        base,
        {
          preHandler: auth.customer('member'),
          schema: {
            tags,
            summary: `Create a draft (member+)`,
            body: Create,
            response: { 201: Type.Object({ data: Resp }), ...errors(400, 401, 403, 409, 413) },
          },
        },
        async (req, reply) => {
          const c = customerOf(req);
          return reply.status(201).send(await content.create(scopeOf(c), c, kind, req.body as ItemInput));
        },
      );

      app.get(
        base,
        {
          preHandler: auth.customer('viewer'),
          schema: {
            tags,
            summary: 'List items, newest first (viewer+)',
            querystring: Type.Composite([
              PageQuery,
              Type.Object({ status: Type.Optional(Type.Union([Type.Literal('draft'), Type.Literal('published')])) }),
            ]),
            response: { 200: Type.Object({ data: Type.Array(Resp), meta: PageMeta }), ...errors(400, 401, 403) },
          },
        },
        async (req) => {
          const q = req.query as { limit?: number; offset?: number; status?: 'draft' | 'published' };
          const limit = q.limit ?? 20;
          const offset = q.offset ?? 0;
          const { data, total } = await content.list(scopeOf(customerOf(req)), kind, {
            status: q.status,
            limit,
            offset,
          });
          return page(data, total, limit, offset);
        },
      );

      app.get(
        `${base}/:id`,
        {
          preHandler: auth.customer('viewer'),
          schema: {
            tags,
            summary: 'Read one item (viewer+)',
            params: Params,
            response: { 200: Type.Object({ data: Resp }), ...errors(400, 401, 403, 404) },
          },
        },
        async (req) => content.get(scopeOf(customerOf(req)), kind, req.params.id),
      );

      app.patch(
        `${base}/:id`,
        {
          preHandler: auth.customer('member'),
          schema: {
            tags,
            summary: 'Edit an item (member+ for drafts; admin+ when published, which makes a new bundle version)',
            params: Params,
            body: Patch,
            response: { 200: Changed(Resp), ...errors(400, 401, 403, 404, 413) },
          },
        },
        async (req) => {
          const c = customerOf(req);
          return content.update(scopeOf(c), c, kind, req.params.id, req.body as ItemInput);
        },
      );

      app.delete(
        `${base}/:id`,
        {
          preHandler: auth.customer('member'),
          schema: {
            tags,
            summary: 'Delete an item (member+ for drafts; admin+ when published, which makes a new bundle version)',
            params: Params,
            response: {
              200: Changed(
                Type.Object({
                  id: Type.String(),
                  deleted: Type.Boolean(),
                  bundle_version: Type.Optional(Type.Integer()),
                }),
              ),
              ...errors(400, 401, 403, 404),
            },
          },
        },
        async (req) => {
          const c = customerOf(req);
          return content.remove(scopeOf(c), c, kind, req.params.id);
        },
      );

      for (const action of ['publish', 'unpublish'] as const) {
        app.post(
          `${base}/:id/${action}`,
          {
            preHandler: auth.customer('admin'),
            schema: {
              tags,
              summary: `${action === 'publish' ? 'Publish' : 'Unpublish'} (admin+); answers with the new bundle_version`,
              params: Params,
              response: { 200: Changed(Resp), ...errors(400, 401, 403, 404, 409) },
            },
          },
          async (req) => {
            const c = customerOf(req);
            return content.setStatus(scopeOf(c), c, kind, req.params.id, action === 'publish' ? 'published' : 'draft');
          },
        );
      }
    }

    const RemoteConfig = Type.Object({
      values: Type.Record(Type.String(), Type.Unknown()),
      updated_by: Type.Union([Type.String(), Type.Null()]),
      updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      bundle_version: Type.Optional(Type.Integer()),
    });
    app.get(
      '/api/v1/remote-config',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags: ['remote-config'],
          summary: 'Current remote config values (viewer+)',
          response: { 200: Type.Object({ data: RemoteConfig }), ...errors(401, 403) },
        },
      },
      async (req) => content.getRemoteConfig(scopeOf(customerOf(req))),
    );

    app.put(
      '/api/v1/remote-config',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags: ['remote-config'],
          summary: 'Replace all remote config values; goes live in a new bundle version (admin+)',
          body: Type.Object({
            values: Type.Record(Type.String(), Type.Unknown(), {
              maxProperties: 1000,
              propertyNames: { pattern: KEY_PATTERN },
            }),
          }),
          response: { 200: Changed(RemoteConfig), ...errors(400, 401, 403, 413) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return content.putRemoteConfig(scopeOf(c), c, req.body.values);
      },
    );

    const Flag = Type.Object({
      key: Type.String(),
      enabled: Type.Boolean(),
      rules: Type.Array(Type.Unknown()),
      rollout_pct: Type.Number(),
      description: Type.Union([Type.String(), Type.Null()]),
      sdk_min_version: Type.Union([Type.String(), Type.Null()]),
      created_by: Type.Union([Type.String(), Type.Null()]),
      updated_by: Type.Union([Type.String(), Type.Null()]),
      created_at: Type.String({ format: 'date-time' }),
      updated_at: Type.String({ format: 'date-time' }),
      bundle_version: Type.Optional(Type.Integer()),
    });
    const FlagKey = Type.Object({ key: Type.String({ pattern: KEY_PATTERN, maxLength: 128 }) });
    const ftags = ['feature-flags'];

    app.get(
      '/api/v1/feature-flags',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags: ftags,
          summary: 'List feature flags by key (viewer+)',
          querystring: PageQuery,
          response: { 200: Type.Object({ data: Type.Array(Flag), meta: PageMeta }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 20;
        const offset = req.query.offset ?? 0;
        const { data, total } = await content.listFlags(scopeOf(customerOf(req)), { limit, offset });
        return page(data, total, limit, offset);
      },
    );

    app.get(
      '/api/v1/feature-flags/:key',
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags: ftags,
          summary: 'Read one flag (viewer+)',
          params: FlagKey,
          response: { 200: Type.Object({ data: Flag }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => content.getFlag(scopeOf(customerOf(req)), req.params.key),
    );

    app.put(
      '/api/v1/feature-flags/:key',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags: ftags,
          summary: 'Create or replace a flag; goes live in a new bundle version (admin+)',
          params: FlagKey,
          body: Type.Object({
            enabled: Type.Boolean(),
            rules: Type.Optional(
              Type.Array(FreeObject, {
                maxItems: 100,
                description: `Targeting rules, all must match: { attribute, op, value } or { attribute, op: in | not_in, values }; op one of ${OPERATORS.join(', ')} (the SDK rule language, packages/sdk README)`,
              }),
            ),
            rollout_pct: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
            description: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
            sdk_min_version: Type.Optional(Type.Union([SdkMin, Type.Null()])),
          }),
          response: { 200: Changed(Flag), ...errors(400, 401, 403, 409, 413) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return content.putFlag(scopeOf(c), c, req.params.key, req.body);
      },
    );

    app.delete(
      '/api/v1/feature-flags/:key',
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags: ftags,
          summary: 'Delete a flag; makes a new bundle version (admin+)',
          params: FlagKey,
          response: {
            200: Changed(
              Type.Object({
                key: Type.String(),
                deleted: Type.Boolean(),
                bundle_version: Type.Optional(Type.Integer()),
              }),
            ),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return content.removeFlag(scopeOf(c), c, req.params.key);
      },
    );
  };
