import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { customerOf, scopeOf, type Auth } from '../../http/auth.js';
import { Environment, errors, PageMeta, PageQuery, page, Uuid } from '../../http/schemas.js';
import type { ExperimentFold } from './jobs.js';
import { Changed, CreateBody, Experiment, PatchBody, Results, ShipBody } from './schemas.js';
import type { ExperimentInput, ExperimentService } from './service.js';
import type { ExperimentStatus } from './store.js';

const tags = ['experiments'];
const base = '/api/v1/experiments';
const Params = Type.Object({ id: Uuid });
const Status = Type.Union(['draft', 'running', 'stopped', 'shipped'].map((s) => Type.Literal(s)));

export const experimentRoutes =
  ({
    auth,
    experiments,
    fold,
  }: {
    auth: Auth;
    experiments: ExperimentService;
    fold: ExperimentFold;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      base,
      {
        preHandler: auth.customer('member'),
        schema: {
          tags,
          summary: 'Create a draft experiment (member+)',
          body: CreateBody,
          response: { 201: Type.Object({ data: Experiment }), ...errors(400, 401, 403, 409, 413) },
        },
      },
      async (req, reply) => {
        const c = customerOf(req);
        return reply.status(201).send(await experiments.create(scopeOf(c), c, req.body as ExperimentInput));
      },
    );

    app.get(
      base,
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'List experiments, newest first (viewer+)',
          querystring: Type.Composite([PageQuery, Type.Object({ status: Type.Optional(Status) })]),
          response: { 200: Type.Object({ data: Type.Array(Experiment), meta: PageMeta }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        const q = req.query as { limit?: number; offset?: number; status?: ExperimentStatus };
        const limit = q.limit ?? 20;
        const offset = q.offset ?? 0;
        const { data, total } = await experiments.list(scopeOf(customerOf(req)), { status: q.status, limit, offset });
        return page(data, total, limit, offset);
      },
    );

    app.get(
      `${base}/:id`,
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'Read one experiment (viewer+)',
          params: Params,
          response: { 200: Type.Object({ data: Experiment }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) => experiments.get(scopeOf(customerOf(req)), req.params.id),
    );

    app.patch(
      `${base}/:id`,
      {
        preHandler: auth.customer('member'),
        schema: {
          tags,
          summary:
            'Edit (member+ for drafts; admin+ once started: name, hypothesis, targeting, sequential_tuning, a growing coverage)',
          params: Params,
          body: PatchBody,
          response: { 200: Changed, ...errors(400, 401, 403, 404, 409, 413) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return experiments.update(scopeOf(c), c, req.params.id, req.body as ExperimentInput);
      },
    );

    app.delete(
      `${base}/:id`,
      {
        preHandler: auth.customer('member'),
        schema: {
          tags,
          summary: 'Delete (member+ for drafts; admin+ once started, which makes a new bundle version)',
          params: Params,
          response: {
            200: Type.Object({
              data: Type.Object({
                id: Type.String(),
                deleted: Type.Boolean(),
                bundle_version: Type.Optional(Type.Integer()),
              }),
              bundle_version: Type.Optional(Type.Integer()),
            }),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return experiments.remove(scopeOf(c), c, req.params.id);
      },
    );

    for (const action of ['start', 'stop'] as const) {
      app.post(
        `${base}/:id/${action}`,
        {
          preHandler: auth.customer('admin'),
          schema: {
            tags,
            summary: `${action === 'start' ? 'Start a draft' : 'Stop a running experiment'} (admin+); answers once the bundle holds it`,
            params: Params,
            response: { 200: Changed, ...errors(400, 401, 403, 404, 409) },
          },
        },
        async (req) => {
          const c = customerOf(req);
          return experiments[action](scopeOf(c), c, req.params.id);
        },
      );
    }

    app.post(
      `${base}/:id/ship`,
      {
        preHandler: auth.customer('admin'),
        schema: {
          tags,
          summary:
            'Ship a variant to everyone (admin+); 409 srm_detected while the production split is off, unless acknowledge_srm',
          params: Params,
          body: ShipBody,
          response: { 200: Changed, ...errors(400, 401, 403, 404, 409) },
        },
      },
      async (req) => {
        const c = customerOf(req);
        return experiments.ship(scopeOf(c), c, req.params.id, req.body);
      },
    );

    app.get(
      `${base}/:id/results`,
      {
        preHandler: auth.customer('viewer'),
        schema: {
          tags,
          summary: 'Results per variant and metric, with health checks (viewer+); reads the folded state',
          params: Params,
          querystring: Type.Object({ environment: Type.Optional(Environment) }),
          response: { 200: Type.Object({ data: Results }), ...errors(400, 401, 403, 404) },
        },
      },
      async (req) =>
        experiments.results(scopeOf(customerOf(req)), req.params.id, req.query.environment ?? 'production'),
    );

    app.post(
      '/api/v1/admin/experiments/fold',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags: ['admin'],
          summary: 'Run one experiment fold now (operators, tests)',
          response: {
            200: Type.Object({ data: Type.Object({ folded: Type.Integer(), watermark: Type.Integer() }) }),
            ...errors(401, 403),
          },
        },
      },
      async () => ({ data: await fold.run() }),
    );
  };
