import type { Config } from '../../config.js';
import { withTx, type Db } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { AppError } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import { NetworkError, toAppError, type Call, type NetworkClient } from './client.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { limitKeys } from './limiter.js';
import { exchangeCode, newAuthorization, OAuthError, refreshGrant, SCOPE, sha256, type TokenSet } from './oauth.js';
import type { AccountRow, AdNetworkStore, ConnectionStatus } from './store.js';

export const REVOCATION_NOTE =
  'The stored refresh token was deleted. To revoke the authorization completely, also remove this app from the connected apps of your ad-network account (Business Manager).';

/** Page size of every paged read (the network accepts 50..1000). */
export const PAGE_LIMIT = 1000;

/** Refresh when less than this share of the token's lifetime remains (and never later than 60 s before expiry). */
const REFRESH_AT_REMAINING = 0.2;

/** OAuth connection of an app and authorized calls to the network on its behalf. */
export function createConnectionService({
  db,
  store,
  config,
  box,
  client,
  activity,
}: {
  db: Db;
  store: AdNetworkStore;
  config: Config;
  /** Tokens and PKCE verifiers are sealed at rest (ENCRYPTION_KEY). */
  box: SecretBox;
  client: NetworkClient;
  activity: ActivityStore;
}) {
  const cfg = config.adNetwork;
  const refreshing = new Map<string, Promise<string>>();

  function assertConfigured() {
    if (!cfg.clientId || !cfg.clientSecret || !cfg.redirectUri) {
      throw new AppError(
        'conflict',
        'The ad-network client is not registered: set AD_NETWORK_CLIENT_ID, AD_NETWORK_CLIENT_SECRET and AD_NETWORK_REDIRECT_URI',
      );
    }
  }

  async function markReauth(scope: Scope, why: string): Promise<never> {
    if (await store.setStatus(scope, 'reauth_required', why)) {
      await activity.record(scope, {
        entityType: 'ad_network_connection',
        action: 'reauth_required',
        description: `Ad-network connection must be redone: ${why}`,
      });
    }
    throw new AppError(
      'ad_network_reauth_required',
      `The ad-network authorization is no longer valid (${why}); connect again.`,
    );
  }

  async function refresh(scope: Scope, refreshEnc: Buffer): Promise<string> {
    let t: TokenSet;
    try {
      t = await refreshGrant(cfg, box.openBytes(refreshEnc));
    } catch (err) {
      if (err instanceof OAuthError && (err.error === 'invalid_grant' || err.error === 'invalid_client'))
        return markReauth(scope, err.error);
      throw new AppError('upstream_error', `Ad-network token refresh failed: ${(err as Error).message}`);
    }
    // Persist any refresh token returned: whether the network rotates them is not documented.
    await store.saveTokens(scope, {
      access: box.sealBytes(t.access_token),
      expiresAt: new Date(Date.now() + t.expires_in * 1000),
      lifetimeS: t.expires_in,
      refresh: t.refresh_token ? box.sealBytes(t.refresh_token) : undefined,
    });
    return t.access_token;
  }

  /** A valid access token, refreshed ahead of expiry (or now, when force). One refresh at a time per app. */
  async function accessToken(scope: Scope, force: boolean): Promise<string> {
    const c = await store.connection(scope);
    if (!c || c.status === 'disconnected' || !c.refresh_token_enc)
      throw new AppError('conflict', 'The ad network is not connected for this app');
    if (c.status === 'reauth_required')
      throw new AppError(
        'ad_network_reauth_required',
        'The ad-network authorization is no longer valid; connect again.',
      );
    const lifetime = (c.access_lifetime_s ?? 1800) * 1000;
    const remaining = (c.access_expires_at?.getTime() ?? 0) - Date.now();
    if (
      !force &&
      c.access_token_enc &&
      remaining > Math.max(lifetime * REFRESH_AT_REMAINING, Math.min(60_000, lifetime / 2))
    ) {
      return box.openBytes(c.access_token_enc);
    }
    const k = `${scope.tenantId}:${scope.appId}`;
    let p = refreshing.get(k);
    if (!p) {
      p = refresh(scope, c.refresh_token_enc).finally(() => refreshing.delete(k));
      refreshing.set(k, p);
    }
    return p;
  }

  /** One authorized call; a 401 refreshes once and retries, a second 401 means the grant is gone. */
  async function call(scope: Scope, c: Call, adAccountId?: string): Promise<any> {
    const keys = limitKeys({ clientId: cfg.clientId, connection: `${scope.tenantId}:${scope.appId}`, adAccountId });
    let token = await accessToken(scope, false);
    try {
      return await client.call(token, keys, c);
    } catch (err) {
      if (!(err instanceof NetworkError) || err.kind !== 'unauthorized') throw err;
    }
    token = await accessToken(scope, true);
    try {
      return await client.call(token, keys, c);
    } catch (err) {
      if (err instanceof NetworkError && err.kind === 'unauthorized')
        return markReauth(scope, 'access token rejected after refresh');
      throw err;
    }
  }

  /** Follows paging.next_link until absent (bounded). */
  async function all(
    scope: Scope,
    path: string,
    collection: string,
    item: string,
    adAccountId?: string,
    max = 5000,
  ): Promise<any[]> {
    const out: any[] = [];
    let next: string | undefined = path;
    let first = true;
    while (next && out.length < max) {
      const body = await call(
        scope,
        { method: 'GET', path: next, query: first ? { limit: PAGE_LIMIT } : undefined },
        adAccountId,
      );
      first = false;
      for (const x of body[collection] ?? []) if (x?.[item]) out.push(x[item]);
      next = body.paging?.next_link || undefined;
    }
    return out;
  }

  async function probe(token: string, scope: Scope) {
    const keys = limitKeys({ clientId: cfg.clientId, connection: `${scope.tenantId}:${scope.appId}` });
    const orgs = ((await client.call(token, keys, { method: 'GET', path: '/me/organizations' })).organizations ?? [])
      .map((o: any) => o.organization)
      .filter(Boolean);
    const accounts: any[] = [];
    for (const org of orgs) {
      let next: string | undefined = `/organizations/${encodeURIComponent(org.id)}/adaccounts`;
      while (next && accounts.length < 2000) {
        const body: any = await client.call(token, keys, { method: 'GET', path: next });
        for (const a of body.adaccounts ?? [])
          if (a?.adaccount) accounts.push({ ...a.adaccount, organization_id: a.adaccount.organization_id ?? org.id });
        next = body.paging?.next_link || undefined;
      }
    }
    return { orgs, accounts };
  }

  return {
    call,
    all,
    async start(scope: Scope, userId: string) {
      assertConfigured();
      const a = newAuthorization(cfg);
      const expiresAt = new Date(Date.now() + 10 * 60_000);
      await store.insertState(scope, { hash: sha256(a.state), userId, verifier: box.sealBytes(a.verifier), expiresAt });
      return {
        authorize_url: a.url,
        state: a.state,
        scope: SCOPE,
        redirect_uri: cfg.redirectUri,
        expires_at: expiresAt.toISOString(),
      };
    },

    /** Code exchange, then the organizations probe and the ad-accounts probe; only then is the connection stored. */
    async callback(scope: Scope, userId: string, code: string, state: string) {
      assertConfigured();
      const pending = await store.takeState(scope, sha256(state));
      if (!pending)
        throw new AppError('validation_failed', 'Unknown, expired or already used state; start the connection again', [
          { path: '/body/state', message: 'does not match a pending authorization' },
        ]);
      let t: TokenSet;
      try {
        t = await exchangeCode(cfg, code, box.openBytes(pending.verifier_enc));
      } catch (err) {
        if (err instanceof OAuthError && err.status >= 400 && err.status < 500) {
          throw new AppError(
            'validation_failed',
            `The ad network refused the authorization code (${err.error}); start the connection again`,
            [{ path: '/body/code', message: err.message }],
          );
        }
        throw new AppError('upstream_error', `Ad-network token endpoint failed: ${(err as Error).message}`);
      }
      if (!t.refresh_token) throw new AppError('upstream_error', 'The ad network returned no refresh token');
      let found;
      try {
        found = await probe(t.access_token, scope);
      } catch (err) {
        if (err instanceof NetworkError && err.kind === 'unauthorized')
          throw new AppError(
            'ad_network_reauth_required',
            'The new authorization was refused by the organizations probe; connect again',
          );
        throw toAppError(err);
      }
      await withTx(db, async (tx) => {
        await store.saveConnection(
          scope,
          {
            refresh: box.sealBytes(t.refresh_token!),
            access: box.sealBytes(t.access_token),
            expiresAt: new Date(Date.now() + t.expires_in * 1000),
            lifetimeS: t.expires_in,
            scope: t.scope ?? SCOPE,
            orgIds: found.orgs.map((o: any) => String(o.id)),
            userId,
          },
          tx,
        );
        await store.saveAccounts(
          scope,
          found.accounts.map((a) => ({
            id: String(a.id),
            organization_id: String(a.organization_id),
            name: String(a.name ?? a.id),
            currency: String(a.currency ?? 'USD'),
            timezone: String(a.timezone ?? 'UTC'),
            status: String(a.status ?? 'ACTIVE'),
          })),
          tx,
        );
        await activity.record(
          scope,
          {
            entityType: 'ad_network_connection',
            action: 'connected',
            description: `Ad network connected (${found.accounts.length} ad accounts)`,
            actorUserId: userId,
          },
          tx,
        );
      });
      return this.status(scope, false);
    },

    async status(scope: Scope, verify: boolean) {
      if (verify) {
        try {
          await call(scope, { method: 'GET', path: '/me/organizations' });
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== 'ad_network_reauth_required') throw toAppError(err);
        }
      }
      const c = await store.connection(scope);
      const accounts = c && c.status !== 'disconnected' ? await store.accounts(scope) : [];
      return {
        status: (c?.status ?? 'not_connected') as ConnectionStatus | 'not_connected',
        scope: c?.scope ?? null,
        connected_at: c?.connected_at?.toISOString() ?? null,
        access_token_expires_at: c?.access_expires_at?.toISOString() ?? null,
        organization_ids: c?.organization_ids ?? [],
        last_error: c?.last_error ?? null,
        ad_accounts: accounts.map(accountView),
      };
    },

    async disconnect(scope: Scope, userId: string) {
      await store.setStatus(scope, 'disconnected', null, true);
      await activity.record(scope, {
        entityType: 'ad_network_connection',
        action: 'disconnected',
        description: 'Ad network disconnected (refresh token deleted)',
        actorUserId: userId,
      });
      return { status: 'disconnected' as const, message: REVOCATION_NOTE };
    },
  };
}

export type ConnectionService = ReturnType<typeof createConnectionService>;

export const accountView = (
  a: Pick<AccountRow, 'id' | 'organization_id' | 'name' | 'currency' | 'timezone' | 'status' | 'live_writes'>,
) => ({
  id: a.id,
  organization_id: a.organization_id,
  name: a.name,
  currency: a.currency,
  timezone: a.timezone,
  status: a.status,
  live_writes: a.live_writes,
});
