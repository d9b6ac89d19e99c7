import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyRow } from '../modules/api-keys/store.js';
import type { ApiKeyService } from '../modules/api-keys/service.js';
import type { Environment, Scope } from '../types/domain.js';
import type { AuthenticatedUser, IdentityService } from '../modules/identity/service.js';
import type { Role, TenancyStore } from '../modules/tenancy/store.js';
import { AppError } from './errors.js';

export type { Scope };

export interface CustomerContext extends Scope {
  userId: string;
  role: Role;
}

export interface KeyContext extends Scope {
  keyId: string;
  publicKey: string;
  environment: Environment;
  permissions: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    user?: AuthenticatedUser;
    customer?: CustomerContext;
    apiKey?: KeyContext;
  }
}

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const roleAtLeast = (role: Role, min: Role) => RANK[role] >= RANK[min];

/** The authentication levels of the spec, by the pre-handler that enforces each. */
export type AuthLevel = 'sdkKey' | 'keyPair' | 'exportKey' | 'bearer' | 'customer' | 'superAdmin';
export interface DeclaredAuth {
  level: AuthLevel;
  /** The least role a customer route needs. */
  role?: Role;
}
// Keyed by the pre-handler function itself, so the API document (src/http/openapi.ts) reads each
// route's security from the pre-handler the route already names: nothing to repeat per route.
const declared = new WeakMap<object, DeclaredAuth>();
function declare<F extends object>(fn: F, level: AuthLevel, role?: Role): F {
  declared.set(fn, role ? { level, role } : { level });
  return fn;
}
/** The level a route hook enforces, when it is one of the pre-handlers below. */
export const declaredAuth = (hook: unknown): DeclaredAuth | undefined =>
  typeof hook === 'function' ? declared.get(hook) : undefined;

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

const keyContext = (k: ApiKeyRow): KeyContext => ({
  tenantId: k.tenant_id,
  appId: k.app_id,
  keyId: k.id,
  publicKey: k.public_key,
  environment: k.environment,
  permissions: k.permissions,
});

/** Pre-handlers for each authentication level of the spec. Routes pick one. */
export function createAuth({
  identity,
  tenancy,
  keys,
}: {
  identity: IdentityService;
  tenancy: TenancyStore;
  keys: ApiKeyService;
}) {
  async function bearer(req: FastifyRequest): Promise<void> {
    const auth = header(req, 'authorization');
    if (!auth) throw new AppError('missing_credentials', 'Authorization: Bearer <token> is required');
    const [scheme, token] = auth.split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || !token || token.length > 8192)
      throw new AppError('invalid_credentials', 'Authorization must be a Bearer token');
    req.user = await identity.authenticate(token);
  }

  function customer(min: Role = 'viewer') {
    return async (req: FastifyRequest): Promise<void> => {
      await bearer(req);
      const tenantId = header(req, 'x-tenant-id');
      const appId = header(req, 'x-app-id');
      if (!tenantId || !appId)
        throw new AppError('missing_credentials', 'x-tenant-id and x-app-id headers are required');
      if (!UUID.test(tenantId) || !UUID.test(appId))
        throw new AppError('forbidden', 'Not a member of this organization or app');
      const role = await tenancy.roleForApp(tenantId, appId, req.user!.id);
      if (!role) throw new AppError('forbidden', 'Not a member of this organization or app');
      if (!roleAtLeast(role, min)) throw new AppError('forbidden', `This action needs the ${min} role or higher`);
      req.customer = { tenantId, appId, userId: req.user!.id, role };
    };
  }

  async function resolveKey(req: FastifyRequest, withSecret: boolean): Promise<void> {
    const publicKey = header(req, 'x-api-key');
    const secret = header(req, 'x-api-secret');
    if (!publicKey || (withSecret && !secret)) {
      throw new AppError(
        'missing_credentials',
        withSecret ? 'x-api-key and x-api-secret headers are required' : 'x-api-key header is required',
      );
    }
    req.apiKey = keyContext(await keys.authenticate(publicKey, withSecret ? secret : undefined));
  }

  /** Callback style and synchronous on a cache hit: the SDK's hottest routes (the version check) pay no promise for auth. */
  function sdkKey(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    const publicKey = header(req, 'x-api-key');
    const row = publicKey === undefined ? undefined : keys.peek(publicKey);
    if (row) {
      req.apiKey = keyContext(row);
      return done();
    }
    resolveKey(req, false).then(() => done(), done);
  }

  return {
    bearer: declare(bearer, 'bearer'),
    customer: (min: Role = 'viewer') => declare(customer(min), 'customer', min),
    sdkKey: declare(sdkKey, 'sdkKey'),
    keyPair: declare((req: FastifyRequest) => resolveKey(req, true), 'keyPair'),
    exportKey: declare(async (req: FastifyRequest) => {
      await resolveKey(req, false);
      if (!req.apiKey!.permissions.includes('export_data'))
        throw new AppError('forbidden', 'This key lacks the export_data permission');
    }, 'exportKey'),
    superAdmin: declare(async (req: FastifyRequest) => {
      await bearer(req);
      if (!req.user!.superAdmin) throw new AppError('forbidden', 'Super Admin only');
    }, 'superAdmin'),
  };
}

export type Auth = ReturnType<typeof createAuth>;

/** Narrowing helpers for handlers behind the matching pre-handler. */
export const customerOf = (req: FastifyRequest): CustomerContext => req.customer!;
export const keyOf = (req: FastifyRequest): KeyContext => req.apiKey!;
export const scopeOf = (ctx: Scope): Scope => ({ tenantId: ctx.tenantId, appId: ctx.appId });
