import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { FunnelStore } from './funnel-store.js';
import { FUNNELS, funnelCounts, resolveSteps, withAdSteps, type FunnelStep } from './funnels.js';
import type { AnalyticsReadModel, Env } from './read-model.js';

/**
 * Funnel answers are materialized: computing one reads every entering user's step rows (0.5-2 s
 * at 10M events), too slow for a request. The worker recomputes the named funnels of each app
 * environment whose data version moved, at most every `refreshS` seconds, right after a fold.
 * A request serves the stored answer when it matches the current definition and is exact (same
 * data version) or younger than 2 x `refreshS`; otherwise it computes live and stores the result.
 * Ad-stats steps are always read live (they change without events).
 */
export function createFunnelAnswers({
  db,
  read,
  store,
  refreshS,
}: {
  db: Queryable;
  read: AnalyticsReadModel;
  store: FunnelStore;
  refreshS: number;
}) {
  const hash = (steps: FunnelStep[]) =>
    createHash('sha256').update(JSON.stringify(steps)).digest('base64url').slice(0, 22);
  let lastRefresh = 0;
  // Set by the service's stop: a refresh ends after the answer it is computing.
  let stopped = false;

  async function compute(
    scope: Scope,
    env: Env,
    name: string,
    steps: FunnelStep[],
    version: number,
    timezone: string,
    today: string,
  ) {
    const date = (await read.latestDay(scope, env)) ?? today;
    const users = await funnelCounts(db, scope, env, timezone, date, steps);
    const r = { def_hash: hash(steps), version, date, users };
    return { ...r, computed_at: await store.save(scope, env, name, r) };
  }

  return {
    async answer(scope: Scope, env: Env, name: string, ctx: { timezone: string; today: string }) {
      const steps = resolveSteps(name, await read.funnelExtra(scope));
      const [stored, version] = await Promise.all([store.get(scope, env, name), store.version(scope, env)]);
      const fresh =
        stored &&
        stored.def_hash === hash(steps) &&
        (stored.version >= version || Date.now() - stored.computed_at.getTime() < 2 * refreshS * 1000);
      const r = fresh ? stored : await compute(scope, env, name, steps, version, ctx.timezone, ctx.today);
      return {
        steps,
        date: r.date,
        users: await withAdSteps(db, scope, env, r.date, steps, r.users),
        computed_at: r.computed_at,
      };
    },

    /**
     * Recomputes stale answers (all named funnels of each changed app environment, oldest first).
     * Runs between folds, so it stops after `budgetMs` and leaves the rest to the next run rather
     * than delaying the fold. `force` (the admin endpoint) skips the pacing and the budget.
     */
    async refresh(force = false, budgetMs = 10_000): Promise<number> {
      if (stopped || (!force && Date.now() - lastRefresh < refreshS * 1000)) return 0;
      const started = (lastRefresh = Date.now());
      let n = 0;
      for (const app of await store.stale(Object.keys(FUNNELS).length, 1000)) {
        if (!force && Date.now() - started > budgetMs) break;
        const ctx = await read.context(app);
        if (!ctx) continue;
        const extra = await read.funnelExtra(app);
        for (const name of Object.keys(FUNNELS)) {
          if (stopped) return n;
          await compute(app, app.env, name, resolveSteps(name, extra), app.version, ctx.timezone, ctx.today);
          n++;
        }
      }
      return n;
    },

    /** No refresh starts from now on, and one running ends after its current answer. */
    stop(): void {
      stopped = true;
    },
  };
}

export type FunnelAnswers = ReturnType<typeof createFunnelAnswers>;
