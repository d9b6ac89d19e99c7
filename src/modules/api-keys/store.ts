import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  app_id: string;
  name: string | null;
  public_key: string;
  secret_hash: string;
  environment: 'production' | 'sandbox';
  permissions: string[];
  created_at: Date;
  revoked_at: Date | null;
  replaced_by: string | null;
}

const COLS =
  'id, tenant_id, app_id, name, public_key, secret_hash, environment, permissions, created_at, revoked_at, replaced_by';

export function createApiKeyStore(db: Queryable) {
  return {
    /** Look-up by public key: the one query that runs before the tenant is known (it resolves it). */
    async findByPublicKey(publicKey: string): Promise<ApiKeyRow | null> {
      const { rows } = await db.query<ApiKeyRow>(`SELECT ${COLS} FROM api_keys WHERE public_key = $1`, [publicKey]);
      return rows[0] ?? null;
    },
    async insert(
      scope: Scope,
      k: {
        name: string | null;
        publicKey: string;
        secretHash: string;
        environment: string;
        permissions: string[];
        createdBy: string;
      },
      tx?: Tx,
    ): Promise<ApiKeyRow> {
      const { rows } = await (tx ?? db).query<ApiKeyRow>(
        `INSERT INTO api_keys (tenant_id, app_id, name, public_key, secret_hash, environment, permissions, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLS}`,
        [scope.tenantId, scope.appId, k.name, k.publicKey, k.secretHash, k.environment, k.permissions, k.createdBy],
      );
      return rows[0];
    },
    async list(scope: Scope): Promise<ApiKeyRow[]> {
      const { rows } = await db.query<ApiKeyRow>(
        `SELECT ${COLS} FROM api_keys WHERE tenant_id = $1 AND app_id = $2 ORDER BY created_at DESC LIMIT 1000`,
        [scope.tenantId, scope.appId],
      );
      return rows;
    },
    async get(scope: Scope, id: string, tx?: Tx): Promise<ApiKeyRow | null> {
      const { rows } = await (tx ?? db).query<ApiKeyRow>(
        `SELECT ${COLS} FROM api_keys WHERE tenant_id = $1 AND app_id = $2 AND id = $3 ${tx ? 'FOR UPDATE' : ''}`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },
    /** Sets the revocation instant, never later than one already set. */
    async revoke(scope: Scope, id: string, at: Date, replacedBy: string | null, tx?: Tx): Promise<void> {
      await (tx ?? db).query(
        `UPDATE api_keys SET revoked_at = LEAST(coalesce(revoked_at, 'infinity'), $4), replaced_by = coalesce($5, replaced_by)
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [scope.tenantId, scope.appId, id, at, replacedBy],
      );
    },
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;
