import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import type { Environment, Scope } from '../../types/domain.js';
import { AppError, notFound } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { ApiKeyRow, ApiKeyStore } from './store.js';

export const PERMISSIONS = ['export_data'] as const;
export type { Environment };

const PREFIX: Record<Environment, string> = { production: 'svc_live_', sandbox: 'svc_test_' };

// Secrets carry 256 bits of entropy, so a fast hash is as safe as a slow one and keeps auth cheap.
const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

export function environmentOfKey(publicKey: string): Environment | null {
  if (publicKey.startsWith(PREFIX.production)) return 'production';
  if (publicKey.startsWith(PREFIX.sandbox)) return 'sandbox';
  return null;
}

export const isKeyActive = (k: Pick<ApiKeyRow, 'revoked_at'>, now = Date.now()) =>
  !k.revoked_at || k.revoked_at.getTime() > now;

function view(k: ApiKeyRow) {
  return {
    id: k.id,
    name: k.name,
    public_key: k.public_key,
    environment: k.environment,
    status: isKeyActive(k) ? ('active' as const) : ('revoked' as const),
    permissions: k.permissions,
    created_at: k.created_at.toISOString(),
    revokes_at: k.revoked_at && isKeyActive(k) ? k.revoked_at.toISOString() : null,
    revoked_at: k.revoked_at && !isKeyActive(k) ? k.revoked_at.toISOString() : null,
  };
}

export function createApiKeyService({
  db,
  store,
  activity,
  cacheTtlMs,
}: {
  db: Db;
  store: ApiKeyStore;
  activity: ActivityStore;
  cacheTtlMs: number;
}) {
  // Brief in-process cache: bounded staleness (cacheTtlMs < 5 s) is what lets a revocation reach every instance in time.
  const cache = new Map<string, { row: ApiKeyRow | null; at: number }>();

  function mint(environment: Environment) {
    return {
      publicKey: PREFIX[environment] + randomBytes(18).toString('base64url'),
      secret: `sk_${randomBytes(32).toString('base64url')}`,
    };
  }

  async function lookup(publicKey: string): Promise<ApiKeyRow | null> {
    const hit = cache.get(publicKey);
    if (hit && Date.now() - hit.at < cacheTtlMs) return hit.row;
    const row = await store.findByPublicKey(publicKey);
    if (cache.size > 50_000) cache.clear();
    cache.set(publicKey, { row, at: Date.now() });
    return row;
  }

  return {
    /** The active key from a fresh cache entry, without waiting; undefined sends the caller to authenticate(). */
    peek(publicKey: string): ApiKeyRow | undefined {
      const hit = cache.get(publicKey);
      return hit?.row && Date.now() - hit.at < cacheTtlMs && isKeyActive(hit.row) ? hit.row : undefined;
    },

    /** Resolves an active key or throws invalid_credentials; with a secret, checks it in constant time. */
    async authenticate(publicKey: string, secret?: string): Promise<ApiKeyRow> {
      const env = environmentOfKey(publicKey);
      const row = env && publicKey.length <= 64 ? await lookup(publicKey) : null;
      if (!row || !isKeyActive(row)) throw new AppError('invalid_credentials', 'API key is unknown or revoked');
      if (secret !== undefined) {
        const a = Buffer.from(hashSecret(secret), 'hex');
        const b = Buffer.from(row.secret_hash, 'hex');
        if (a.length !== b.length || !timingSafeEqual(a, b))
          throw new AppError('invalid_credentials', 'API secret does not match the key');
      }
      return row;
    },

    async create(
      scope: Scope,
      userId: string,
      input: { environment: Environment; permissions?: string[]; name?: string },
    ) {
      const { publicKey, secret } = mint(input.environment);
      const row = await store.insert(scope, {
        name: input.name ?? null,
        publicKey,
        secretHash: hashSecret(secret),
        environment: input.environment,
        permissions: [...new Set(input.permissions ?? [])],
        createdBy: userId,
      });
      await activity.record(scope, {
        entityType: 'api_key',
        entityId: row.id,
        action: 'created',
        description: `API key ${row.public_key.slice(0, 13)}… created (${row.environment})`,
        actorUserId: userId,
      });
      return { ...view(row), secret_key: secret };
    },

    async list(scope: Scope) {
      return (await store.list(scope)).map(view);
    },

    async rotate(scope: Scope, userId: string, id: string, overlapSeconds: number) {
      const { created, old } = await withTx(db, async (tx) => {
        const old = await store.get(scope, id, tx);
        if (!old) throw notFound('API key');
        if (!isKeyActive(old)) throw new AppError('conflict', 'A revoked key cannot be rotated');
        const { publicKey, secret } = mint(old.environment);
        const row = await store.insert(
          scope,
          {
            name: old.name,
            publicKey,
            secretHash: hashSecret(secret),
            environment: old.environment,
            permissions: old.permissions,
            createdBy: userId,
          },
          tx,
        );
        await store.revoke(scope, old.id, new Date(Date.now() + overlapSeconds * 1000), row.id, tx);
        return { created: { ...view(row), secret_key: secret }, old };
      });
      cache.delete(old.public_key);
      await activity.record(scope, {
        entityType: 'api_key',
        entityId: id,
        action: 'rotated',
        description: `API key ${old.public_key.slice(0, 13)}… rotated${overlapSeconds ? ` with ${overlapSeconds}s overlap` : ''}`,
        actorUserId: userId,
      });
      return {
        ...created,
        replaces: old.id,
        previous_key_revokes_at: new Date(Date.now() + overlapSeconds * 1000).toISOString(),
      };
    },

    async revoke(scope: Scope, userId: string, id: string) {
      const old = await store.get(scope, id);
      if (!old) throw notFound('API key');
      await store.revoke(scope, id, new Date(), null);
      cache.delete(old.public_key);
      await activity.record(scope, {
        entityType: 'api_key',
        entityId: id,
        action: 'revoked',
        description: `API key ${old.public_key.slice(0, 13)}… revoked`,
        actorUserId: userId,
      });
      return view((await store.get(scope, id))!);
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
