import { randomUUID } from 'node:crypto';
import { AppError, invalid, notFound } from '../../http/errors.js';
import type { ExperimentRow, ExperimentStore, VariantRow } from './experiment-store.js';
import type { Management } from './management.js';
import type { Ctx } from './service.js';
import type { AdNetworkStore } from './store.js';
import type { StatsService } from './stats.js';
import type { StatRow } from './stats-store.js';

export interface ExperimentInput {
  name: string;
  campaign_id: string;
  daily_budget_usd: number;
  optimization_goal?: string;
  countries?: string[];
  /** The first variant is the control; the others are treatments. */
  variants: { name: string; creative_id: string }[];
}

const view = (e: ExperimentRow) => ({
  id: e.id,
  ad_account_id: e.ad_account_id,
  campaign_id: e.campaign_id,
  name: e.name,
  status: e.status,
  dry_run: e.dry_run,
  created_at: e.created_at.toISOString(),
  variants: e.variants.map((v) => ({
    id: v.id,
    name: v.name,
    role: v.role,
    creative_id: v.creative_id,
    adsquad_id: v.adsquad_id,
    ad_id: v.ad_id,
    status: v.status,
  })),
});

function totals(rows: StatRow[]) {
  const t = {
    impressions: 0,
    swipes: 0,
    view_completion: 0,
    conversion_purchases: 0,
    spend_local_micro: 0,
    spend_usd: 0 as number | null,
  };
  for (const r of rows) {
    t.impressions += r.impressions;
    t.swipes += r.swipes;
    t.view_completion += r.view_completion;
    t.conversion_purchases += r.conversion_purchases;
    t.spend_local_micro += r.spend_local_micro;
    t.spend_usd = t.spend_usd === null || r.spend_usd === null ? null : t.spend_usd + r.spend_usd;
  }
  return { ...t, spend_usd: t.spend_usd === null ? null : Math.round(t.spend_usd * 1e6) / 1e6 };
}

/** An ad squad a start created, with the journal keys undone with it (its create, its ad's, the control's resume). */
interface Made {
  squadId: string;
  keys: string[];
}

/**
 * Multi-ad-squad creative experiment: one ad squad per variant in one campaign, each carrying one ad
 * with the variant's creative. Start leaves the control ACTIVE and treatments PAUSED; the runner
 * toggles squads; per-variant stats come from the campaign stats broken down by ad squad.
 */
export function createExperiments({
  store,
  writes,
  mgmt,
  stats,
}: {
  store: ExperimentStore;
  writes: Pick<AdNetworkStore, 'markUndone'>;
  mgmt: Management;
  stats: StatsService;
}) {
  /**
   * Deletes the ad squads a failed start created, newest first (`DELETE /adsquads/{id}`; the reference
   * documents no delete for ads, and an ad in a deleted squad cannot deliver). A squad that cannot be
   * deleted is paused (they are created PAUSED anyway) and stays in the write journal; returns those.
   */
  async function undo(ctx: Ctx, key: string, made: Made[]): Promise<string[]> {
    const undone: string[] = [];
    const left: string[] = [];
    for (const m of [...made].reverse()) {
      try {
        await mgmt.deleteSquad({ ...ctx, key: `${key}:undo:${m.squadId}` }, m.squadId);
        undone.push(...m.keys);
      } catch {
        left.push(`ad squad ${m.squadId}`);
        await mgmt
          .updateSquad({ ...ctx, key: `${key}:undo-pause:${m.squadId}` }, m.squadId, {}, 'pause', 'PAUSED')
          .catch(() => undefined);
      }
    }
    // A retry with the same key must create these again, not replay the deleted objects.
    await writes.markUndone(ctx.scope, undone, `experiment start ${key} failed midway`);
    return left;
  }

  return {
    /**
     * Every squad is created PAUSED; the control is resumed only once every variant's squad and ad
     * exist, and the experiment is recorded after that. Any failure on the way undoes what was
     * created, so no ad squad outside a recorded experiment is left spending.
     */
    async start(ctx: Ctx, b: ExperimentInput) {
      const key = ctx.key ?? randomUUID();
      const existing = await store.byKey(ctx.scope, key);
      if (existing) return { ...view(existing), replayed: true };
      const variants: Omit<VariantRow, 'id'>[] = [];
      const made: Made[] = [];
      let id: string;
      try {
        // Derived keys make a retried start reuse the squads and ads an earlier attempt created.
        for (const [i, v] of b.variants.entries()) {
          const name = `${b.name} / ${v.name}`;
          const squadKey = `${key}:squad:${i}`;
          const squad = await mgmt.createSquad(
            { ...ctx, key: squadKey },
            {
              campaign_id: b.campaign_id,
              name,
              status: 'PAUSED',
              daily_budget_usd: b.daily_budget_usd,
              optimization_goal: b.optimization_goal,
              countries: b.countries,
            },
          );
          const adKey = `${key}:ad:${i}`;
          made.push({ squadId: String(squad.object.id), keys: [squadKey, adKey] });
          const ad = await mgmt.createAd(
            { ...ctx, key: adKey },
            { ad_squad_id: String(squad.object.id), creative_id: v.creative_id, name, status: 'ACTIVE' },
          );
          variants.push({
            position: i,
            name: v.name,
            role: i === 0 ? 'control' : 'treatment',
            creative_id: v.creative_id,
            adsquad_id: String(squad.object.id),
            ad_id: String(ad.object.id),
            status: i === 0 ? 'ACTIVE' : 'PAUSED',
          });
        }
        const controlKey = `${key}:control`;
        made[0].keys.push(controlKey);
        await mgmt.updateSquad({ ...ctx, key: controlKey }, variants[0].adsquad_id, {}, 'resume', 'ACTIVE');
        id = await store.insert(ctx.scope, {
          ad_account_id: ctx.acct.id,
          campaign_id: b.campaign_id,
          name: b.name,
          dry_run: !ctx.acct.live_writes,
          key,
          actor: ctx.actor,
          variants,
        });
      } catch (err) {
        // Another request with this key is on it (journal conflict) or has recorded the experiment: its objects, not ours to undo.
        if (err instanceof AppError && err.code === 'conflict') throw err;
        const done = await store.byKey(ctx.scope, key).catch(() => undefined);
        if (done) return { ...view(done), replayed: true };
        const left = await undo(ctx, key, made);
        if (left.length && err instanceof AppError) {
          throw new AppError(
            err.code,
            `${err.message} (could not delete, left PAUSED and in the write journal: ${left.join(', ')})`,
            err.errors,
          );
        }
        throw err;
      }
      return { ...view((await store.get(ctx.scope, id))!), replayed: false };
    },

    async get(ctx: Pick<Ctx, 'scope' | 'acct'>, id: string) {
      const e = await store.get(ctx.scope, id);
      if (!e || e.ad_account_id !== ctx.acct.id) throw notFound('Experiment');
      return e;
    },
    view,

    async list(ctx: Pick<Ctx, 'scope' | 'acct'>, limit: number, offset: number) {
      const r = await store.list(ctx.scope, ctx.acct.id, limit, offset);
      return { rows: r.rows.map(view), total: r.total };
    },

    /** The runner's switch: one variant's ad squad to ACTIVE or PAUSED. */
    async setVariant(ctx: Ctx, e: ExperimentRow, variantId: string, status: 'ACTIVE' | 'PAUSED') {
      const v = e.variants.find((x) => x.id === variantId);
      if (!v) throw notFound('Variant');
      if (e.status !== 'running') throw new AppError('conflict', 'The experiment is stopped');
      const r = await mgmt.updateSquad(ctx, v.adsquad_id, {}, status === 'ACTIVE' ? 'resume' : 'pause', status);
      await store.setVariantStatus(ctx.scope, e.id, v.id, status);
      return { variant_id: v.id, adsquad_id: v.adsquad_id, status, dry_run: r.dry_run };
    },

    /** Pauses every variant and marks the experiment stopped. */
    async stop(ctx: Ctx, e: ExperimentRow) {
      for (const v of e.variants) {
        if (v.status === 'ACTIVE') {
          await mgmt.updateSquad(
            { ...ctx, key: ctx.key ? `${ctx.key}:${v.id}` : undefined },
            v.adsquad_id,
            {},
            'pause',
            'PAUSED',
          );
          await store.setVariantStatus(ctx.scope, e.id, v.id, 'PAUSED');
        }
      }
      await store.setStatus(ctx.scope, e.id, 'stopped');
      return view((await store.get(ctx.scope, e.id))!);
    },

    async stats(ctx: Ctx, e: ExperimentRow, from?: string, to?: string) {
      if (e.dry_run)
        throw new AppError('conflict', 'This experiment was a dry run (live writes were off); it has no stats');
      if (from && to && from > to) throw invalid('from must not be after to', '/querystring/from');
      const pulled = await stats.pullCampaign(ctx.scope, ctx.acct, e.campaign_id, from, to);
      const bySquad = new Map(pulled.squads.map((s) => [s.id, s.rows]));
      return {
        experiment_id: e.id,
        from: pulled.start,
        to: pulled.end,
        currency: ctx.acct.currency,
        variants: e.variants.map((v) => {
          const rows = bySquad.get(v.adsquad_id) ?? [];
          return {
            variant_id: v.id,
            name: v.name,
            role: v.role,
            adsquad_id: v.adsquad_id,
            status: v.status,
            totals: totals(rows),
            days: rows.map((r) => ({
              day: r.day,
              impressions: r.impressions,
              swipes: r.swipes,
              view_completion: r.view_completion,
              conversion_purchases: r.conversion_purchases,
              spend_local_micro: r.spend_local_micro,
              spend_usd: r.spend_usd,
            })),
          };
        }),
      };
    },
  };
}

export type Experiments = ReturnType<typeof createExperiments>;
