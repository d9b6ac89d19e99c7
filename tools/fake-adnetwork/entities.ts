import { randomUUID } from 'node:crypto';
import { localDay, nowIso, type Entity, type Kind, type World } from './state.js';

/** Per-item failure: the batch goes on, this item answers sub_request_status ERROR. */
export class ItemError extends Error {}

const STATUS = ['ACTIVE', 'PAUSED'];
const OPT_GOALS = [
  'IMPRESSIONS',
  'SWIPES',
  'APP_INSTALLS',
  'VIDEO_VIEWS',
  'PIXEL_PURCHASE',
  'APP_PURCHASE',
  'PIXEL_SIGNUP',
  'STORY_OPENS',
];
const CREATIVE_TYPES = [
  'SNAP_AD',
  'WEB_VIEW',
  'APP_INSTALL',
  'DEEP_LINK',
  'COMPOSITE',
  'PREVIEW',
  'COLLECTION',
  'LENS',
  'AD_TO_LENS',
  'AD_TO_CALL',
  'AD_TO_MESSAGE',
  'FILTER',
];
const AD_FOR_CREATIVE: Record<string, string> = {
  SNAP_AD: 'SNAP_AD',
  WEB_VIEW: 'REMOTE_WEBPAGE',
  APP_INSTALL: 'APP_INSTALL',
  DEEP_LINK: 'DEEP_LINK',
  COMPOSITE: 'STORY',
};
export const CAP_HIT_STATUS = 'INVALID_DAILY_BUDGET_EXHAUSTED';

const need = (v: unknown, field: string) => {
  if (v === undefined || v === null || v === '')
    throw new ItemError(`Error code: E2001, message: ${field} is required`);
};
const maxLen = (v: unknown, field: string, n: number) => {
  if (typeof v === 'string' && v.length > n)
    throw new ItemError(`Error code: E2002, message: ${field} must be at most ${n} characters`);
};
const oneOf = (v: unknown, field: string, values: string[]) => {
  if (!values.includes(String(v)))
    throw new ItemError(`Error code: E2003, message: ${field} must be one of ${values.join(', ')}`);
};
const notFoundItem = () =>
  new ItemError('Error code: E3004, message: Entity does not exist or you do not have permission to access it');

export function getLive(w: World, kind: Kind, id: unknown, accountId?: string): Entity {
  const e = typeof id === 'string' ? w.entities.get(id) : undefined;
  if (!e || e.kind !== kind || e.deleted || (accountId && e.ad_account_id !== accountId)) throw notFoundItem();
  return e;
}

/** Validates one item of a create (or the merged view of an update) for its kind. */
export function validate(w: World, kind: Kind, accountId: string, f: Record<string, any>): void {
  const acct = w.accounts.get(accountId);
  if (!acct) throw notFoundItem();
  if (acct.status !== 'ACTIVE') throw new ItemError('Error code: E3002, message: Ad account is not active');
  need(f.name, 'name');
  maxLen(f.name, 'name', 375);
  if (kind === 'campaign') {
    if (f.ad_account_id !== accountId) throw notFoundItem();
    need(f.status, 'status');
    oneOf(f.status, 'status', STATUS);
    need(f.start_time, 'start_time');
    if (Number.isNaN(Date.parse(f.start_time)))
      throw new ItemError('Error code: E2004, message: start_time must be ISO-8601');
    if (
      f.daily_budget_micro !== undefined &&
      (!Number.isInteger(f.daily_budget_micro) || f.daily_budget_micro < 20_000_000)
    ) {
      throw new ItemError('Error code: E2005, message: daily_budget_micro must be at least 20000000');
    }
  } else if (kind === 'adsquad') {
    need(f.campaign_id, 'campaign_id');
    getLive(w, 'campaign', f.campaign_id, accountId);
    need(f.status, 'status');
    oneOf(f.status, 'status', STATUS);
    need(f.billing_event, 'billing_event');
    oneOf(f.billing_event, 'billing_event', ['IMPRESSION']);
    need(f.optimization_goal, 'optimization_goal');
    oneOf(f.optimization_goal, 'optimization_goal', OPT_GOALS);
    if (!f.placement_v2 && !f.placement) throw new ItemError('Error code: E2001, message: placement_v2 is required');
    oneOf(f.type ?? 'SNAP_ADS', 'type', ['SNAP_ADS', 'LENS', 'FILTER']);
    const budget = f.daily_budget_micro ?? f.lifetime_budget_micro;
    if (budget === undefined)
      throw new ItemError('Error code: E2001, message: daily_budget_micro or lifetime_budget_micro is required');
    if (!Number.isInteger(budget) || budget < 5_000_000)
      throw new ItemError('Error code: E2005, message: budget must be at least 5000000 micro');
    if (f.bid_micro !== undefined && (!Number.isInteger(f.bid_micro) || f.bid_micro < 10_000))
      throw new ItemError('Error code: E2005, message: bid_micro must be at least 10000');
  } else if (kind === 'media') {
    if (f.ad_account_id !== accountId) throw notFoundItem();
    need(f.type, 'type');
    oneOf(f.type, 'type', ['VIDEO', 'IMAGE', 'LENS_PACKAGE', 'PLAYABLE']);
  } else if (kind === 'creative') {
    need(f.ad_account_id, 'ad_account_id');
    if (f.ad_account_id !== accountId) throw notFoundItem();
    need(f.type, 'type');
    oneOf(f.type, 'type', CREATIVE_TYPES);
    need(f.headline, 'headline');
    maxLen(f.headline, 'headline', 34);
    need(f.brand_name, 'brand_name');
    maxLen(f.brand_name, 'brand_name', 32);
    need(f.top_snap_media_id, 'top_snap_media_id');
    const media = getLive(w, 'media', f.top_snap_media_id, accountId);
    if (media.fields.media_status !== 'READY')
      throw new ItemError('Error code: E2010, message: top_snap_media_id is not READY');
    if (!f.profile_properties?.profile_id)
      throw new ItemError('Error code: E2001, message: profile_properties.profile_id is required');
    if (f.type === 'WEB_VIEW' && !/^https:\/\//.test(f.web_view_properties?.url ?? ''))
      throw new ItemError('Error code: E2001, message: web_view_properties.url (https) is required');
  } else if (kind === 'ad') {
    need(f.ad_squad_id, 'ad_squad_id');
    need(f.creative_id, 'creative_id');
    need(f.status, 'status');
    oneOf(f.status, 'status', STATUS);
    need(f.type, 'type');
    getLive(w, 'adsquad', f.ad_squad_id, accountId);
    const creative = getLive(w, 'creative', f.creative_id, accountId);
    const expected = AD_FOR_CREATIVE[creative.fields.type];
    if (expected && f.type !== expected)
      throw new ItemError(
        `Error code: E2006, message: ad type ${f.type} does not match creative type ${creative.fields.type}`,
      );
  }
}

/**
 * The fields a client may write per kind (§3 of the reference); anything else sent is dropped, never echoed.
 * Objects answer these plus their documented read-only fields, nothing more: an ad squad has campaign_id
 * (no ad_account_id), an ad has ad_squad_id, and only campaigns show created_at / updated_at.
 */
const WRITABLE: Record<Kind, string[]> = {
  campaign: [
    'name',
    'ad_account_id',
    'status',
    'start_time',
    'end_time',
    'daily_budget_micro',
    'lifetime_spend_cap_micro',
    'objective',
    'objective_v2_properties',
    'buy_model',
  ],
  adsquad: [
    'campaign_id',
    'name',
    'type',
    'status',
    'targeting',
    'placement_v2',
    'placement',
    'billing_event',
    'optimization_goal',
    'bid_strategy',
    'bid_micro',
    'daily_budget_micro',
    'lifetime_budget_micro',
    'delivery_constraint',
    'start_time',
    'end_time',
  ],
  media: ['name', 'type', 'ad_account_id'],
  creative: [
    'ad_account_id',
    'name',
    'type',
    'headline',
    'brand_name',
    'top_snap_media_id',
    'profile_properties',
    'shareable',
    'call_to_action',
    'web_view_properties',
  ],
  ad: ['ad_squad_id', 'creative_id', 'name', 'type', 'status'],
};
/** Fields the network sets (kept across a PUT, which replaces the writable ones). */
const SERVER_SET = [
  'media_status',
  'file_name',
  'download_link',
  'review_status',
  'review_status_reasons',
  'packaging_status',
];

const writable = (kind: Kind, input: Record<string, any>) =>
  Object.fromEntries(Object.entries(input).filter(([k]) => WRITABLE[kind].includes(k)));

export function create(w: World, kind: Kind, accountId: string, input: Record<string, any>): Entity {
  const f = writable(kind, input);
  if (kind === 'media') f.ad_account_id ??= accountId;
  validate(w, kind, accountId, f);
  if (kind === 'media') f.media_status = 'PENDING_UPLOAD';
  if (kind === 'creative') Object.assign(f, { review_status: 'PENDING_REVIEW', packaging_status: 'PENDING' });
  if (kind === 'ad') {
    const last = w.lastAdByCreative.get(f.creative_id) ?? 0;
    if (Date.now() - last < 1000)
      throw new ItemError('RATE_LIMIT: ads with the same creative_id within one second; use one bulk request');
    w.lastAdByCreative.set(f.creative_id, Date.now());
    Object.assign(f, { review_status: 'PENDING' });
  }
  const t = nowIso();
  const e: Entity = {
    id: randomUUID(),
    kind,
    ad_account_id: accountId,
    created_at: t,
    updated_at: t,
    fields: f,
    activeDays: new Set(),
  };
  w.entities.set(e.id, e);
  touchActivity(w, e);
  return e;
}

/**
 * PUT replaces the listed entity by id (whether Snap accepts a partial body is undocumented, so the
 * strict choice): the item must carry every required field again; omitted optional fields are cleared.
 */
export function update(w: World, kind: Kind, accountId: string, input: Record<string, any>): Entity {
  const e = getLive(w, kind, input.id, accountId);
  const next: Record<string, any> = writable(kind, input);
  for (const k of SERVER_SET) if (k in e.fields) next[k] = e.fields[k];
  if (kind === 'media') next.ad_account_id ??= accountId;
  if (kind === 'campaign' && next.ad_account_id !== accountId) throw notFoundItem();
  if (kind === 'ad' && next.ad_squad_id !== e.fields.ad_squad_id)
    throw new ItemError('Error code: E2007, message: ad_squad_id cannot change');
  if (kind === 'adsquad' && next.campaign_id !== e.fields.campaign_id)
    throw new ItemError('Error code: E2007, message: campaign_id cannot change');
  validate(w, kind, accountId, next);
  e.fields = next;
  e.updated_at = nowIso();
  touchActivity(w, e);
  return e;
}

function parentsOf(w: World, e: Entity): Entity[] {
  const out: Entity[] = [];
  let cur: Entity | undefined = e;
  while (cur) {
    const pid: string | undefined =
      cur.kind === 'ad' ? cur.fields.ad_squad_id : cur.kind === 'adsquad' ? cur.fields.campaign_id : undefined;
    cur = pid ? w.entities.get(pid) : undefined;
    if (cur) out.push(cur);
  }
  return out;
}

/** delivery_status[] recomputed from the entity, its parents and its account (only visible through GETs). */
export function deliveryStatus(w: World, e: Entity): string[] {
  const acct = w.accounts.get(e.ad_account_id)!;
  const out: string[] = [];
  if (acct.status !== 'ACTIVE') out.push('INVALID_AD_ACCOUNT_NOT_ACTIVE');
  if (acct.test) out.push('TEST_AD_ACCOUNT');
  if (e.fields.status === 'PAUSED') out.push('INVALID_EFFECTIVE_PAUSED');
  else if (parentsOf(w, e).some((p) => p.fields.status === 'PAUSED' || p.deleted))
    out.push('INVALID_NOT_EFFECTIVE_ACTIVE');
  if (e.kind === 'adsquad' && e.capHit) out.push(CAP_HIT_STATUS);
  if (e.kind === 'ad' && e.fields.review_status === 'REJECTED') out.push('INVALID_REJECTED');
  if (!out.length) out.push('VALID');
  return out;
}

export const effectivelyActive = (w: World, e: Entity) =>
  !e.deleted && deliveryStatus(w, e).every((s) => s === 'VALID' || s === CAP_HIT_STATUS);

/** Marks today (account-local) as a delivering day for the entity and its children. */
export function touchActivity(w: World, e: Entity): void {
  const tz = w.accounts.get(e.ad_account_id)?.timezone ?? 'UTC';
  const day = localDay(Date.now(), tz);
  for (const x of w.entities.values()) {
    if (x.ad_account_id !== e.ad_account_id || x.kind !== 'ad') continue;
    if (effectivelyActive(w, x)) x.activeDays!.add(day);
  }
}

/**
 * Review moves forward on a later read: creatives PENDING_REVIEW -> APPROVED, ads PENDING -> APPROVED
 * (unless rejected by the operator). The answer to the create itself shows the pending state.
 */
export function view(w: World, e: Entity, advance = true): Record<string, any> {
  if (!advance) return shown(w, e);
  if (e.kind === 'creative' && e.fields.review_status === 'PENDING_REVIEW')
    Object.assign(e.fields, { review_status: 'APPROVED', packaging_status: 'SUCCESS' });
  if (e.kind === 'ad' && e.fields.review_status === 'PENDING') e.fields.review_status = 'APPROVED';
  return shown(w, e);
}

function shown(w: World, e: Entity): Record<string, any> {
  const times = e.kind === 'campaign' ? { created_at: e.created_at, updated_at: e.updated_at } : {};
  const base = { id: e.id, ...times, ...e.fields, ...(e.deleted ? { deleted: true } : {}) };
  if (e.kind === 'campaign' || e.kind === 'adsquad' || e.kind === 'ad')
    return { ...base, delivery_status: deliveryStatus(w, e) };
  return base;
}
