import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, invalid } from '../../http/errors.js';
import type { Ctx, NetworkOps } from './service.js';

export interface CampaignInput {
  name: string;
  status?: 'ACTIVE' | 'PAUSED';
  start_time?: string;
  end_time?: string;
  daily_budget_usd?: number;
  lifetime_spend_cap_usd?: number;
  objective?: string;
}

export interface SquadInput {
  campaign_id: string;
  name: string;
  status?: 'ACTIVE' | 'PAUSED';
  daily_budget_usd: number;
  bid_usd?: number;
  optimization_goal?: string;
  countries?: string[];
  start_time?: string;
}

export interface CreativeInput {
  name: string;
  type?: string;
  headline: string;
  brand_name: string;
  media_id: string;
  profile_id: string;
  call_to_action?: string;
  web_view_url?: string;
  shareable?: boolean;
}

export interface AdInput {
  ad_squad_id: string;
  creative_id: string;
  name: string;
  status?: 'ACTIVE' | 'PAUSED';
}

const AD_TYPE_FOR_CREATIVE: Record<string, string> = {
  SNAP_AD: 'SNAP_AD',
  WEB_VIEW: 'REMOTE_WEBPAGE',
  APP_INSTALL: 'APP_INSTALL',
  DEEP_LINK: 'DEEP_LINK',
  COMPOSITE: 'STORY',
};
const enc = encodeURIComponent;

/** Campaigns, ad squads, media, creatives and ads in the network's documented paths. */
export function createManagement({ ops }: { ops: NetworkOps }) {
  /** A parent referenced by id must exist in this ad account (dry-run ids only while writes are dry runs). */
  async function parent(
    ctx: Ctx,
    kind: 'campaign' | 'adsquad' | 'creative' | 'media',
    id: string,
    field: string,
    missing: string,
  ) {
    if (id.startsWith('dryrun-') && ctx.acct.live_writes) {
      throw invalid(
        `${field} names a dry-run object that was never sent; create it again now that live writes are enabled`,
        `/body/${field}`,
      );
    }
    try {
      return await ops.current(ctx, kind, id);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw invalid(missing, `/body/${field}`);
      throw err;
    }
  }

  return {
    async createCampaign(ctx: Ctx, b: CampaignInput) {
      const req: Record<string, unknown> = {
        name: b.name,
        ad_account_id: ctx.acct.id,
        status: b.status ?? 'PAUSED',
        start_time: b.start_time ?? new Date().toISOString(),
      };
      if (b.end_time) req.end_time = b.end_time;
      if (b.objective) req.objective_v2_properties = { objective_v2_type: b.objective };
      const budget = b.daily_budget_usd !== undefined ? await ops.toMicro(ctx.acct, b.daily_budget_usd) : undefined;
      if (budget) req.daily_budget_micro = budget.micro;
      const cap =
        b.lifetime_spend_cap_usd !== undefined ? await ops.toMicro(ctx.acct, b.lifetime_spend_cap_usd) : undefined;
      if (cap) req.lifetime_spend_cap_micro = cap.micro;
      const r = await ops.create(
        ctx,
        'campaign',
        `/adaccounts/${enc(ctx.acct.id)}/campaigns`,
        `/adaccounts/${enc(ctx.acct.id)}/campaigns`,
        req,
      );
      return { ...r, budget };
    },
    async updateCampaign(
      ctx: Ctx,
      id: string,
      b: Partial<Omit<CampaignInput, 'status'>>,
      op: 'update' | 'pause' | 'resume' = 'update',
      status?: 'ACTIVE' | 'PAUSED',
    ) {
      const patch: Record<string, unknown> = {};
      if (b.name !== undefined) patch.name = b.name;
      if (b.start_time !== undefined) patch.start_time = b.start_time;
      if (b.end_time !== undefined) patch.end_time = b.end_time;
      const budget = b.daily_budget_usd !== undefined ? await ops.toMicro(ctx.acct, b.daily_budget_usd) : undefined;
      if (budget) patch.daily_budget_micro = budget.micro;
      if (status) patch.status = status;
      const r = await ops.update(ctx, 'campaign', op, `/adaccounts/${enc(ctx.acct.id)}/campaigns`, id, patch);
      return { ...r, budget };
    },
    deleteCampaign: (ctx: Ctx, id: string) => ops.remove(ctx, 'campaign', id),
    listCampaigns: (ctx: Ctx) => ops.list(ctx, `/adaccounts/${enc(ctx.acct.id)}/campaigns`, 'campaign'),

    async createSquad(ctx: Ctx, b: SquadInput) {
      await parent(
        ctx,
        'campaign',
        b.campaign_id,
        'campaign_id',
        'campaign_id does not name a campaign of this ad account',
      );
      const budget = await ops.toMicro(ctx.acct, b.daily_budget_usd);
      const req: Record<string, unknown> = {
        campaign_id: b.campaign_id,
        name: b.name,
        type: 'SNAP_ADS',
        status: b.status ?? 'PAUSED',
        targeting: { geos: (b.countries ?? ['us']).map((c) => ({ country_code: c.toLowerCase() })) },
        placement_v2: { config: 'AUTOMATIC' },
        billing_event: 'IMPRESSION',
        optimization_goal: b.optimization_goal ?? 'SWIPES',
        daily_budget_micro: budget.micro,
        delivery_constraint: 'DAILY_BUDGET',
        start_time: b.start_time ?? new Date().toISOString(),
      };
      if (b.bid_usd !== undefined)
        Object.assign(req, {
          bid_strategy: 'LOWEST_COST_WITH_MAX_BID',
          bid_micro: (await ops.toMicro(ctx.acct, b.bid_usd)).micro,
        });
      else req.bid_strategy = 'AUTO_BID';
      const path = `/campaigns/${enc(b.campaign_id)}/adsquads`;
      const r = await ops.create(ctx, 'adsquad', path, path, req);
      return { ...r, budget };
    },
    async updateSquad(
      ctx: Ctx,
      id: string,
      b: { name?: string; daily_budget_usd?: number },
      op: 'update' | 'pause' | 'resume' = 'update',
      status?: 'ACTIVE' | 'PAUSED',
    ) {
      const cur = await ops.current(ctx, 'adsquad', id);
      const patch: Record<string, unknown> = {};
      if (b.name !== undefined) patch.name = b.name;
      const budget = b.daily_budget_usd !== undefined ? await ops.toMicro(ctx.acct, b.daily_budget_usd) : undefined;
      if (budget) patch.daily_budget_micro = budget.micro;
      if (status) patch.status = status;
      const r = await ops.update(ctx, 'adsquad', op, `/campaigns/${enc(cur.campaign_id)}/adsquads`, id, patch, cur);
      return { ...r, budget };
    },
    deleteSquad: (ctx: Ctx, id: string) => ops.remove(ctx, 'adsquad', id),
    async listSquads(ctx: Ctx, campaignId?: string) {
      if (!campaignId) return ops.list(ctx, `/adaccounts/${enc(ctx.acct.id)}/adsquads`, 'adsquad');
      await ops.current(ctx, 'campaign', campaignId); // another account's campaign answers 404
      return ops.list(ctx, `/campaigns/${enc(campaignId)}/adsquads`, 'adsquad');
    },

    /** Step 1 creates the media entity, step 2 uploads the file, then the media is polled until READY. */
    async uploadMedia(
      ctx: Ctx,
      b: { name: string; type: 'VIDEO' | 'IMAGE'; file_name: string; content_type: string; data: Buffer },
    ) {
      const req = { name: b.name, type: b.type, ad_account_id: ctx.acct.id };
      const r = await ops.create(
        ctx,
        'media',
        `/adaccounts/${enc(ctx.acct.id)}/media`,
        `/adaccounts/${enc(ctx.acct.id)}/media`,
        req,
        {
          dryRun: (id) => ({
            id,
            ...req,
            media_status: 'PENDING_UPLOAD',
            file_name: b.file_name,
            size_bytes: b.data.length,
            dry_run: true,
          }),
        },
      );
      if (r.dry_run || r.object?.media_status === 'READY') return r;
      const id = String(r.object.id);
      // Step 2 is a write of its own, keyed from step 1's key so a retried upload request reuses both.
      await ops.upload({ ...ctx, key: `${r.idempotency_key}:upload` }, id, {
        name: b.file_name,
        type: b.content_type,
        data: b.data,
      });
      for (let i = 0; i < 20; i++) {
        const m = await ops.current(ctx, 'media', id);
        if (m.media_status === 'READY') return { ...r, object: m };
        await sleep(250);
      }
      throw new AppError(
        'upstream_error',
        'The media did not become READY in time; retry with the same Idempotency-Key',
      );
    },
    listMedia: (ctx: Ctx) => ops.list(ctx, `/adaccounts/${enc(ctx.acct.id)}/media`, 'media'),

    async createCreative(ctx: Ctx, b: CreativeInput) {
      const media = await parent(
        ctx,
        'media',
        b.media_id,
        'media_id',
        'media_id does not name media of this ad account: upload the media first',
      );
      if (!media.dry_run && media.media_status !== 'READY')
        throw invalid('The media is not READY yet: finish its upload first', '/body/media_id');
      const type = b.type ?? (b.web_view_url ? 'WEB_VIEW' : 'SNAP_AD');
      const req: Record<string, unknown> = {
        ad_account_id: ctx.acct.id,
        name: b.name,
        type,
        headline: b.headline,
        brand_name: b.brand_name,
        top_snap_media_id: b.media_id,
        profile_properties: { profile_id: b.profile_id },
        shareable: b.shareable ?? true,
      };
      if (b.call_to_action) req.call_to_action = b.call_to_action;
      if (b.web_view_url) req.web_view_properties = { url: b.web_view_url };
      const path = `/adaccounts/${enc(ctx.acct.id)}/creatives`;
      return ops.create(ctx, 'creative', path, path, req);
    },
    listCreatives: (ctx: Ctx) => ops.list(ctx, `/adaccounts/${enc(ctx.acct.id)}/creatives`, 'creative'),

    /** The ad comes last: its creative (and the creative's media) must already exist. */
    async createAd(ctx: Ctx, b: AdInput) {
      const creative = await parent(
        ctx,
        'creative',
        b.creative_id,
        'creative_id',
        'Ad references a missing creative: upload the media, create the creative first, then create the ad with its creative_id',
      );
      await parent(
        ctx,
        'adsquad',
        b.ad_squad_id,
        'ad_squad_id',
        'ad_squad_id does not name an ad squad of this ad account',
      );
      const req = {
        ad_squad_id: b.ad_squad_id,
        creative_id: b.creative_id,
        name: b.name,
        type: AD_TYPE_FOR_CREATIVE[creative.type] ?? 'SNAP_AD',
        status: b.status ?? 'ACTIVE',
      };
      const path = `/adsquads/${enc(b.ad_squad_id)}/ads`;
      return ops.create(ctx, 'ad', path, path, req);
    },
    async setAdStatus(ctx: Ctx, id: string, status: 'ACTIVE' | 'PAUSED') {
      const cur = await ops.current(ctx, 'ad', id);
      return ops.update(
        ctx,
        'ad',
        status === 'PAUSED' ? 'pause' : 'resume',
        `/adsquads/${enc(cur.ad_squad_id)}/ads`,
        id,
        { status },
        cur,
      );
    },
    listAds: (ctx: Ctx) => ops.list(ctx, `/adaccounts/${enc(ctx.acct.id)}/ads`, 'ad'),
  };
}

export type Management = ReturnType<typeof createManagement>;
