import type { Scope } from '../../types/domain.js';
import { AppError } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { ConnectionService } from './connection.js';
import type { StatsService } from './stats.js';
import type { AdNetworkStore } from './store.js';
import { addDays, localDay } from '../../lib/time.js';

export interface SyncSummary {
  accounts: number;
  campaigns: number;
  stat_rows: number;
  changes: { kind: string; id: string; action: string }[];
  errors: string[];
}

const CAP_HIT = /BUDGET/; // e.g. INVALID_DAILY_BUDGET_EXHAUSTED; exact Snap values are not documented

/**
 * The hourly metrics sync. The network has no webhooks, so review, delivery and account changes
 * are found by polling and recorded once as activity entries; then yesterday's and today's DAY stats are pulled.
 */
export function createSync({
  store,
  conn,
  stats,
  activity,
}: {
  store: AdNetworkStore;
  conn: ConnectionService;
  stats: StatsService;
  activity: ActivityStore;
}) {
  async function change(
    scope: Scope,
    s: SyncSummary,
    kind: string,
    id: string,
    state: string,
    bad: (st: string) => boolean,
    action: string,
    describe: () => string,
  ) {
    const prev = await store.swapState(scope, kind, id, state);
    if (prev === state || !bad(state)) return;
    s.changes.push({ kind, id, action });
    await activity.record(scope, { entityType: `ad_network_${kind}`, entityId: id, action, description: describe() });
  }

  async function syncApp(scope: Scope): Promise<SyncSummary> {
    const s: SyncSummary = { accounts: 0, campaigns: 0, stat_rows: 0, changes: [], errors: [] };
    const accounts = await store.accounts(scope);
    // Account state is documented only in the organization's account list (there is no GET /adaccounts/{id}).
    const listed = new Map<string, any>();
    for (const org of new Set(accounts.map((a) => a.organization_id))) {
      try {
        for (const a of await conn.all(
          scope,
          `/organizations/${encodeURIComponent(org)}/adaccounts`,
          'adaccounts',
          'adaccount',
        ))
          listed.set(String(a.id), a);
      } catch (err) {
        if (err instanceof AppError && err.code === 'ad_network_reauth_required')
          return { ...s, errors: [err.message] };
        s.errors.push(`organization ${org}: ${(err as Error).message}`);
      }
    }
    for (const acct of accounts) {
      s.accounts++;
      const enc = encodeURIComponent(acct.id);
      try {
        const status = String(listed.get(acct.id)?.status ?? acct.status);
        if (status !== acct.status) await store.setAccountStatus(scope, acct.id, status);
        await change(
          scope,
          s,
          'adaccount',
          acct.id,
          status,
          (st) => st !== 'ACTIVE',
          'account_suspended',
          () => `Ad account ${acct.name} is ${status} on the ad network`,
        );
        if (status === 'ACTIVE' && acct.status !== 'ACTIVE') {
          await activity.record(scope, {
            entityType: 'ad_network_adaccount',
            entityId: acct.id,
            action: 'account_reactivated',
            description: `Ad account ${acct.name} is active again`,
          });
        }
        for (const ad of await conn.all(scope, `/adaccounts/${enc}/ads`, 'ads', 'ad', acct.id)) {
          const review = String(ad.review_status ?? 'PENDING');
          await change(
            scope,
            s,
            'ad',
            ad.id,
            review,
            (st) => st === 'REJECTED',
            'ad_disapproved',
            () =>
              `Ad "${ad.name}" was disapproved: ${(ad.review_status_reasons ?? []).join('; ') || 'no reason given'}`,
          );
        }
        for (const sq of await conn.all(scope, `/adaccounts/${enc}/adsquads`, 'adsquads', 'adsquad', acct.id)) {
          const capped = (sq.delivery_status ?? []).some((d: string) => CAP_HIT.test(d));
          await change(
            scope,
            s,
            'adsquad',
            sq.id,
            capped ? 'cap_hit' : 'ok',
            (st) => st === 'cap_hit',
            'daily_cap_hit',
            () => `Ad squad "${sq.name}" reached its daily budget`,
          );
        }
        const today = localDay(Date.now(), acct.timezone);
        const r = await stats.pullAccount(scope, acct, { from: addDays(today, -1), to: today });
        s.campaigns += r.campaigns;
        s.stat_rows += r.rows;
      } catch (err) {
        if (err instanceof AppError && err.code === 'ad_network_reauth_required') {
          s.errors.push(err.message);
          break; // the whole connection is gone; recorded as activity by the connection service
        }
        s.errors.push(`${acct.id}: ${(err as Error).message}`);
      }
    }
    return s;
  }

  return {
    syncApp,
    /** Job handler: every connected app, one at a time; one app's failure does not stop the others. */
    async runAll(log: (msg: string, err?: unknown) => void = () => undefined, stopping = () => false) {
      for (const scope of await store.connectedApps()) {
        // The service is stopping: the apps not yet synced wait for the next run.
        if (stopping()) return;
        try {
          const r = await syncApp(scope);
          if (r.errors.length) log(`ad-network sync ${scope.appId}: ${r.errors.join(' | ')}`);
        } catch (err) {
          log(`ad-network sync ${scope.appId} failed`, err);
        }
      }
    },
  };
}

export type Sync = ReturnType<typeof createSync>;
