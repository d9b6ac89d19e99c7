import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export type ConnectionStatus = 'connected' | 'reauth_required' | 'disconnected';

export interface ConnectionRow {
  tenant_id: string;
  app_id: string;
  status: ConnectionStatus;
  refresh_token_enc: Buffer | null;
  access_token_enc: Buffer | null;
  access_expires_at: Date | null;
  access_lifetime_s: number | null;
  scope: string | null;
  organization_ids: string[];
  connected_by: string | null;
  connected_at: Date | null;
  last_error: string | null;
  updated_at: Date;
}

export interface AccountRow {
  id: string;
  organization_id: string;
  name: string;
  currency: string;
  timezone: string;
  status: string;
  live_writes: boolean;
  live_writes_changed_at: Date | null;
}

export interface WriteRow {
  id: string;
  ad_account_id: string;
  idempotency_key: string;
  kind: string;
  op: string;
  request: any;
  status: 'dry_run' | 'pending' | 'succeeded' | 'failed';
  remote_id: string | null;
  result: any;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** All SQL of the ad-network capability. Every query filters by tenant and app. */
export function createAdNetworkStore(db: Queryable) {
  const q = (tx?: Tx) => tx ?? db;
  return {
    async connection(s: Scope): Promise<ConnectionRow | undefined> {
      const { rows } = await db.query('SELECT * FROM ad_network_connections WHERE tenant_id = $1 AND app_id = $2', [
        s.tenantId,
        s.appId,
      ]);
      return rows[0];
    },
    async saveConnection(
      s: Scope,
      c: {
        refresh: Buffer;
        access: Buffer;
        expiresAt: Date;
        lifetimeS: number;
        scope: string;
        orgIds: string[];
        userId: string;
      },
      tx?: Tx,
    ) {
      await q(tx).query(
        `INSERT INTO ad_network_connections (tenant_id, app_id, status, refresh_token_enc, access_token_enc, access_expires_at, access_lifetime_s, scope, organization_ids, connected_by, connected_at, last_error)
         VALUES ($1, $2, 'connected', $3, $4, $5, $6, $7, $8, $9, now(), NULL)
         ON CONFLICT (tenant_id, app_id) DO UPDATE SET status = 'connected', refresh_token_enc = $3, access_token_enc = $4, access_expires_at = $5,
           access_lifetime_s = $6, scope = $7, organization_ids = $8, connected_by = $9, connected_at = now(), last_error = NULL, updated_at = now()`,
        [s.tenantId, s.appId, c.refresh, c.access, c.expiresAt, c.lifetimeS, c.scope, c.orgIds, c.userId],
      );
    },
    async saveTokens(s: Scope, t: { access: Buffer; expiresAt: Date; lifetimeS: number; refresh?: Buffer }) {
      await db.query(
        `UPDATE ad_network_connections SET access_token_enc = $3, access_expires_at = $4, access_lifetime_s = $5,
           refresh_token_enc = COALESCE($6, refresh_token_enc), updated_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND status = 'connected'`,
        [s.tenantId, s.appId, t.access, t.expiresAt, t.lifetimeS, t.refresh ?? null],
      );
    },
    async setStatus(s: Scope, status: ConnectionStatus, error: string | null, clearTokens = false) {
      const { rowCount } = await db.query(
        `UPDATE ad_network_connections SET status = $3, last_error = $4, updated_at = now()
           ${clearTokens ? ', refresh_token_enc = NULL, access_token_enc = NULL, access_expires_at = NULL' : ''}
         WHERE tenant_id = $1 AND app_id = $2 AND status <> $3`,
        [s.tenantId, s.appId, status, error],
      );
      return (rowCount ?? 0) > 0;
    },
    async connectedApps(): Promise<Scope[]> {
      const { rows } = await db.query(
        `SELECT tenant_id, app_id FROM ad_network_connections WHERE status = 'connected' ORDER BY updated_at LIMIT 10000`,
      );
      return rows.map((r) => ({ tenantId: r.tenant_id, appId: r.app_id }));
    },

    async insertState(s: Scope, r: { hash: string; userId: string; verifier: Buffer; expiresAt: Date }) {
      await db.query(
        'DELETE FROM ad_network_oauth_states WHERE tenant_id = $1 AND app_id = $2 AND expires_at < now()',
        [s.tenantId, s.appId],
      );
      await db.query(
        'INSERT INTO ad_network_oauth_states (state_hash, tenant_id, app_id, user_id, verifier_enc, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [r.hash, s.tenantId, s.appId, r.userId, r.verifier, r.expiresAt],
      );
    },
    /** Single use: marks the state consumed and returns it only if it was fresh, unused and this app's. */
    async takeState(s: Scope, hash: string): Promise<{ verifier_enc: Buffer; user_id: string } | undefined> {
      const { rows } = await db.query(
        `UPDATE ad_network_oauth_states SET used_at = now()
         WHERE state_hash = $1 AND tenant_id = $2 AND app_id = $3 AND used_at IS NULL AND expires_at > now()
         RETURNING verifier_enc, user_id`,
        [hash, s.tenantId, s.appId],
      );
      return rows[0];
    },

    async saveAccounts(s: Scope, accounts: Omit<AccountRow, 'live_writes' | 'live_writes_changed_at'>[], tx?: Tx) {
      for (const a of accounts) {
        await q(tx).query(
          `INSERT INTO ad_network_accounts (tenant_id, app_id, id, organization_id, name, currency, timezone, status)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (tenant_id, app_id, id) DO UPDATE SET organization_id = $4, name = $5, currency = $6, timezone = $7, status = $8, updated_at = now()`,
          [
            s.tenantId,
            s.appId,
            a.id,
            a.organization_id,
            a.name.slice(0, 375),
            a.currency.toUpperCase(),
            a.timezone,
            a.status,
          ],
        );
      }
    },
    async accounts(s: Scope): Promise<AccountRow[]> {
      const { rows } = await db.query(
        `SELECT id, organization_id, name, currency, timezone, status, live_writes, live_writes_changed_at FROM ad_network_accounts
         WHERE tenant_id = $1 AND app_id = $2 ORDER BY name, id`,
        [s.tenantId, s.appId],
      );
      return rows;
    },
    async account(s: Scope, id: string): Promise<AccountRow | undefined> {
      return (await this.accounts(s)).find((a) => a.id === id);
    },
    async setAccountStatus(s: Scope, id: string, status: string) {
      await db.query(
        'UPDATE ad_network_accounts SET status = $4, updated_at = now() WHERE tenant_id = $1 AND app_id = $2 AND id = $3',
        [s.tenantId, s.appId, id, status],
      );
    },
    /** Operator switch; the app id locates the tenant. */
    async setLiveWrites(
      appId: string,
      accountId: string,
      enabled: boolean,
      actor: string,
    ): Promise<(AccountRow & { tenant_id: string }) | undefined> {
      const { rows } = await db.query(
        `UPDATE ad_network_accounts SET live_writes = $3, live_writes_changed_by = $4, live_writes_changed_at = now()
         WHERE app_id = $1 AND id = $2 AND tenant_id = (SELECT tenant_id FROM apps WHERE id = $1)
         RETURNING tenant_id, id, organization_id, name, currency, timezone, status, live_writes, live_writes_changed_at`,
        [appId, accountId, enabled, actor],
      );
      return rows[0];
    },

    async insertWrite(
      s: Scope,
      w: { accountId: string; key: string; kind: string; op: string; request: unknown; actor: string | null },
    ): Promise<{ row: WriteRow; created: boolean }> {
      const ins = await db.query(
        `INSERT INTO ad_network_writes (tenant_id, app_id, ad_account_id, idempotency_key, kind, op, request, status, actor_user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) ON CONFLICT (tenant_id, app_id, idempotency_key) DO NOTHING RETURNING *`,
        [s.tenantId, s.appId, w.accountId, w.key, w.kind, w.op, JSON.stringify(w.request), w.actor],
      );
      if (ins.rows[0]) return { row: ins.rows[0], created: true };
      const { rows } = await db.query(
        'SELECT * FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2 AND idempotency_key = $3',
        [s.tenantId, s.appId, w.key],
      );
      return { row: rows[0], created: false };
    },
    async finishWrite(
      s: Scope,
      id: string,
      f: { status: WriteRow['status']; remoteId?: string | null; result?: unknown; error?: string | null },
    ) {
      await db.query(
        `UPDATE ad_network_writes SET status = $4, remote_id = $5, result = $6, error = $7, completed_at = now()
         WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [
          s.tenantId,
          s.appId,
          id,
          f.status,
          f.remoteId ?? null,
          f.result === undefined ? null : JSON.stringify(f.result),
          f.error ?? null,
        ],
      );
    },
    /** Remote ids already bound to another write (so reconciliation never claims someone else's object). */
    async claimedIds(s: Scope, kind: string, exceptId: string): Promise<Set<string>> {
      const { rows } = await db.query(
        `SELECT remote_id FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id <> $4 AND remote_id IS NOT NULL AND op = 'create'`,
        [s.tenantId, s.appId, kind, exceptId],
      );
      return new Set(rows.map((r) => r.remote_id));
    },
    /** The ad account of an object we created (a succeeded, not undone, create in the journal). */
    async createdIn(s: Scope, kind: string, remoteId: string): Promise<string | undefined> {
      const { rows } = await db.query(
        `SELECT ad_account_id FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND remote_id = $4 AND op = 'create' AND status = 'succeeded' LIMIT 1`,
        [s.tenantId, s.appId, kind, remoteId],
      );
      return rows[0]?.ad_account_id;
    },
    /** Marks creates whose objects were deleted again (an undone multi-step write), so a retry creates them anew. */
    async markUndone(s: Scope, keys: string[], why: string) {
      if (!keys.length) return;
      await db.query(
        `UPDATE ad_network_writes SET status = 'failed', error = $4 WHERE tenant_id = $1 AND app_id = $2 AND idempotency_key = ANY($3) AND status = 'succeeded'`,
        [s.tenantId, s.appId, keys, `undone: ${why}`.slice(0, 500)],
      );
    },
    async dryRunObject(s: Scope, kind: string, remoteId: string): Promise<WriteRow | undefined> {
      const { rows } = await db.query(
        `SELECT * FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND remote_id = $4 AND status = 'dry_run' LIMIT 1`,
        [s.tenantId, s.appId, kind, remoteId],
      );
      return rows[0];
    },
    async recentWrites(s: Scope, limit: number, offset: number): Promise<{ rows: WriteRow[]; total: number }> {
      const [{ rows }, total] = await Promise.all([
        db.query(
          'SELECT * FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2 ORDER BY created_at DESC, id LIMIT $3 OFFSET $4',
          [s.tenantId, s.appId, limit, offset],
        ),
        db.query('SELECT count(*)::int AS n FROM ad_network_writes WHERE tenant_id = $1 AND app_id = $2', [
          s.tenantId,
          s.appId,
        ]),
      ]);
      return { rows, total: total.rows[0].n };
    },

    /** Stores the polled state; returns the previous one (undefined when first seen). */
    async swapState(s: Scope, kind: string, id: string, state: string): Promise<string | undefined> {
      const prev = await db.query(
        'SELECT state FROM ad_network_states WHERE tenant_id = $1 AND app_id = $2 AND kind = $3 AND id = $4',
        [s.tenantId, s.appId, kind, id],
      );
      await db.query(
        `INSERT INTO ad_network_states (tenant_id, app_id, kind, id, state) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, app_id, kind, id) DO UPDATE SET state = $5, updated_at = now()`,
        [s.tenantId, s.appId, kind, id, state],
      );
      return prev.rows[0]?.state;
    },
  };
}

export type AdNetworkStore = ReturnType<typeof createAdNetworkStore>;
