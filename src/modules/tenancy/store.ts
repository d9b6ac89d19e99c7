import type { Queryable, Tx } from '../../db/pool.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { newWebhookSecret } from '../../outbound/signer.js';

export type Role = 'owner' | 'admin' | 'member' | 'viewer';

export interface RuntimeLock {
  reason: 'billing_lapsed' | 'account_locked';
  locked_at: string;
  message: string;
}

export interface MembershipRow {
  tenant_id: string;
  org_name: string;
  role: Role;
}

export function createTenancyStore(db: Queryable, box: SecretBox) {
  return {
    async insertOrganization(name: string, ownerId: string, tx: Tx) {
      const { rows } = await tx.query<{ id: string; name: string }>(
        'INSERT INTO organizations (name) VALUES ($1) RETURNING id, name',
        [name],
      );
      await tx.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'owner')`, [
        rows[0].id,
        ownerId,
      ]);
      return rows[0];
    },
    async insertApp(tenantId: string, name: string, tx: Tx) {
      const { rows } = await tx.query<{ id: string; name: string }>(
        'INSERT INTO apps (tenant_id, name) VALUES ($1, $2) RETURNING id, name',
        [tenantId, name],
      );
      await tx.query('INSERT INTO app_settings (tenant_id, app_id, callback_signing_secret) VALUES ($1, $2, $3)', [
        tenantId,
        rows[0].id,
        box.seal(newWebhookSecret()),
      ]);
      return rows[0];
    },
    async roleOf(tenantId: string, userId: string): Promise<Role | null> {
      const { rows } = await db.query<{ role: Role }>(
        'SELECT role FROM memberships WHERE tenant_id = $1 AND user_id = $2',
        [tenantId, userId],
      );
      return rows[0]?.role ?? null;
    },
    /** The caller's role for an app of an org, null when not a member or the app is not the org's. */
    async roleForApp(tenantId: string, appId: string, userId: string): Promise<Role | null> {
      const { rows } = await db.query<{ role: Role }>(
        'SELECT m.role FROM memberships m JOIN apps a ON a.tenant_id = m.tenant_id WHERE m.tenant_id = $1 AND a.id = $2 AND m.user_id = $3',
        [tenantId, appId, userId],
      );
      return rows[0]?.role ?? null;
    },
    async appBelongsTo(tenantId: string, appId: string): Promise<boolean> {
      const { rowCount } = await db.query('SELECT 1 FROM apps WHERE tenant_id = $1 AND id = $2', [tenantId, appId]);
      return rowCount === 1;
    },
    async organizationExists(tenantId: string): Promise<boolean> {
      const { rowCount } = await db.query('SELECT 1 FROM organizations WHERE id = $1', [tenantId]);
      return rowCount === 1;
    },
    /** Adds the member or changes the role of an existing one. */
    async upsertMember(tenantId: string, userId: string, role: Role) {
      await db.query(
        `INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
        [tenantId, userId, role],
      );
    },
    async membersOf(tenantId: string) {
      const { rows } = await db.query<{ user_id: string; email: string; name: string | null; role: Role }>(
        `SELECT u.id AS user_id, u.email, u.name, m.role FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.tenant_id = $1 ORDER BY lower(u.email)`,
        [tenantId],
      );
      return rows;
    },
    /** Removes a membership unless it is the organization's last owner; false when nothing was removed. */
    async removeMember(tenantId: string, userId: string): Promise<boolean> {
      const { rowCount } = await db.query(
        `DELETE FROM memberships m WHERE m.tenant_id = $1 AND m.user_id = $2
            AND (m.role <> 'owner' OR EXISTS (SELECT 1 FROM memberships o WHERE o.tenant_id = $1 AND o.role = 'owner' AND o.user_id <> $2))`,
        [tenantId, userId],
      );
      return rowCount === 1;
    },
    async membershipsOf(userId: string) {
      const { rows } = await db.query<{ id: string; name: string; role: Role; apps: { id: string; name: string }[] }>(
        `SELECT o.id, o.name, m.role,
                coalesce((SELECT json_agg(json_build_object('id', a.id, 'name', a.name) ORDER BY a.created_at)
                          FROM apps a WHERE a.tenant_id = o.id), '[]') AS apps
           FROM memberships m JOIN organizations o ON o.id = m.tenant_id
          WHERE m.user_id = $1 ORDER BY o.created_at`,
        [userId],
      );
      return rows;
    },
    async runtimeLockOf(tenantId: string): Promise<RuntimeLock | null> {
      const { rows } = await db.query<{ runtime_lock: RuntimeLock | null }>(
        'SELECT runtime_lock FROM organizations WHERE id = $1',
        [tenantId],
      );
      return rows[0]?.runtime_lock ?? null;
    },
    async setRuntimeLock(tenantId: string, lock: RuntimeLock | null): Promise<boolean> {
      const { rowCount } = await db.query('UPDATE organizations SET runtime_lock = $2 WHERE id = $1', [tenantId, lock]);
      return rowCount === 1;
    },
  };
}

export type TenancyStore = ReturnType<typeof createTenancyStore>;
