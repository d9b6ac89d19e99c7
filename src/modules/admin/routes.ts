import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Auth } from '../../http/auth.js';
import { notFound } from '../../http/errors.js';
import { errors, Uuid } from '../../http/schemas.js';
import type { IdentityService } from '../identity/service.js';
import type { TenancyStore } from '../tenancy/store.js';

const LockReason = Type.Union([Type.Literal('billing_lapsed'), Type.Literal('account_locked')]);

/** Platform-operator endpoints (Super Admin claim only). */
export const adminRoutes =
  ({
    auth,
    identity,
    tenancy,
  }: {
    auth: Auth;
    identity: IdentityService;
    tenancy: TenancyStore;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const tags = ['admin'];
    app.put(
      '/api/v1/admin/organizations/:orgId/runtime-lock',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags,
          summary: 'Lock a tenant: SDK bootstrap then carries runtime_lock and SDKs enter read-only safe mode',
          params: Type.Object({ orgId: Uuid }),
          body: Type.Object({ reason: LockReason, message: Type.Optional(Type.String({ maxLength: 500 })) }),
          response: {
            200: Type.Object({
              data: Type.Object({ reason: LockReason, locked_at: Type.String(), message: Type.String() }),
            }),
            ...errors(400, 401, 403, 404),
          },
        },
      },
      async (req) => {
        const lock = {
          reason: req.body.reason,
          locked_at: new Date().toISOString(),
          message:
            req.body.message ??
            (req.body.reason === 'billing_lapsed'
              ? 'Billing has lapsed; the app runs in read-only mode.'
              : 'This account is locked; the app runs in read-only mode.'),
        };
        if (!(await tenancy.setRuntimeLock(req.params.orgId, lock))) throw notFound('Organization');
        return { data: lock };
      },
    );

    app.delete(
      '/api/v1/admin/organizations/:orgId/runtime-lock',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags,
          summary: 'Clear a tenant runtime lock',
          params: Type.Object({ orgId: Uuid }),
          response: { 204: Type.Null(), ...errors(401, 403, 404) },
        },
      },
      async (req, reply) => {
        if (!(await tenancy.setRuntimeLock(req.params.orgId, null))) throw notFound('Organization');
        return reply.status(204).send(null);
      },
    );

    app.put(
      '/api/v1/admin/signup-enabled',
      {
        preHandler: auth.superAdmin,
        schema: {
          tags,
          summary: 'Open or close self-service signup',
          body: Type.Object({ enabled: Type.Boolean() }),
          response: { 200: Type.Object({ enabled: Type.Boolean() }), ...errors(400, 401, 403) },
        },
      },
      async (req) => {
        await identity.setSignupEnabled(req.body.enabled);
        return { enabled: req.body.enabled };
      },
    );
  };
