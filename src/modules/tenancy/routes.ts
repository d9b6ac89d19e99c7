import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Auth } from '../../http/auth.js';
import { errors, Uuid } from '../../http/schemas.js';
import type { TenancyService } from './service.js';

const Named = Type.Object({ id: Type.String(), name: Type.String() });
const NameBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) });
const RoleT = Type.Union([
  Type.Literal('owner'),
  Type.Literal('admin'),
  Type.Literal('member'),
  Type.Literal('viewer'),
]);

const Member = Type.Object({
  user_id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: RoleT,
});

const Me = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  super_admin: Type.Boolean(),
  organizations: Type.Array(
    Type.Object({ id: Type.String(), name: Type.String(), role: RoleT, apps: Type.Array(Named) }),
  ),
});

export const tenancyRoutes =
  ({ auth, tenancy }: { auth: Auth; tenancy: TenancyService }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/api/v1/me',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'The signed-in user with organizations, apps and roles',
          response: { 200: Type.Object({ data: Me }), ...errors(401) },
        },
      },
      async (req) => ({ data: await tenancy.me(req.user!) }),
    );

    app.post(
      '/api/v1/organizations',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'Create an organization; the caller becomes owner',
          body: NameBody,
          response: { 201: Type.Object({ data: Named }), ...errors(400, 401) },
        },
      },
      async (req, reply) =>
        reply.status(201).send({ data: await tenancy.createOrganization(req.user!, req.body.name) }),
    );

    app.post(
      '/api/v1/organizations/:orgId/apps',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'Create an app in an organization (owner/admin)',
          params: Type.Object({ orgId: Uuid }),
          body: NameBody,
          response: { 201: Type.Object({ data: Named }), ...errors(400, 401, 403) },
        },
      },
      async (req, reply) =>
        reply.status(201).send({ data: await tenancy.createApp(req.user!, req.params.orgId, req.body.name) }),
    );

    app.post(
      '/api/v1/organizations/:orgId/members',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'Add a member or change a member role (owner/admin; only owners grant owner)',
          params: Type.Object({ orgId: Uuid }),
          body: Type.Object({ email: Type.String({ format: 'email', maxLength: 254 }), role: RoleT }),
          response: {
            201: Type.Object({ data: Type.Object({ user_id: Type.String(), email: Type.String(), role: RoleT }) }),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req, reply) =>
        reply.status(201).send({ data: await tenancy.addMember(req.user!, req.params.orgId, req.body) }),
    );

    app.get(
      '/api/v1/organizations/:orgId/members',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'List the members of an organization with their roles (any member)',
          params: Type.Object({ orgId: Uuid }),
          response: { 200: Type.Object({ data: Type.Array(Member) }), ...errors(401, 403) },
        },
      },
      async (req) => ({ data: await tenancy.members(req.user!, req.params.orgId) }),
    );

    app.delete(
      '/api/v1/organizations/:orgId/members/:userId',
      {
        preHandler: auth.bearer,
        schema: {
          tags: ['identity'],
          summary: 'Remove a member (owner/admin; only owners remove owners; never the last owner)',
          params: Type.Object({ orgId: Uuid, userId: Uuid }),
          response: { 204: Type.Null(), ...errors(401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        await tenancy.removeMember(req.user!, req.params.orgId, req.params.userId);
        return reply.status(204).send(null);
      },
    );
  };
