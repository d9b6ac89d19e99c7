import { createHash } from 'node:crypto';
import { assignVariant, type ExperimentVariant } from '@mobile-sdk-backend/sdk/experiments';
import { CITIES } from './cities.js';
import { PLANS } from './content.js';
import { mulberry32 } from './prng.js';

// Generated history for the demo app: what the SDK would have sent from `devices` installs spread
// over the last `days` days (more of them lately, as a growing app), with drop-off at every step
// (onboarding, paywall, purchase, trial conversion) and retention decaying with the days since
// install. Deterministic for a seed: ids derive from (app, device, n), so a repeated upload of the
// same history is stored once (the service dedupes on event_id).

export interface History {
  appId: string;
  devices: number;
  days: number;
  now: number;
  flowId: string;
  stepIds: string[];
  paywalls: { annual: string; monthly: string };
  experiment: { key: string; variants: ExperimentVariant[] };
  seed?: number;
}

export type Envelope = Record<string, unknown> & { event_name: string; ts_ms: number };

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const COUNTRIES = [
  ['US', 'en_US', 30],
  ['GB', 'en_GB', 12],
  ['DE', 'de_DE', 12],
  ['FR', 'fr_FR', 10],
  ['BR', 'pt_BR', 10],
  ['IN', 'en_IN', 10],
  ['JP', 'ja_JP', 8],
  ['CA', 'en_CA', 8],
] as const;
const APP_VERSIONS = ['3.0.0', '3.1.0', '3.2.0'];

/** A v4-shaped UUID derived from `text` (stable across runs). */
function uuidOf(text: string): string {
  const h = createHash('sha256').update(text).digest('hex');
  const v = ((Number.parseInt(h[16], 16) & 3) | 8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${v}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Every device's events, in time order. */
export function generateHistory(h: History): Envelope[] {
  const all: Envelope[] = [];
  // A generator per device: a device's history depends on its index only, not on how many draws
  // the devices before it took (those vary with the time of day the history ends at).
  for (let d = 0; d < h.devices; d++) all.push(...device(h, d, mulberry32((h.seed ?? 42) * 1_000_003 + d)));
  return all.sort((a, b) => a.ts_ms - b.ts_ms);
}

function pick<T extends readonly [...unknown[], number]>(rnd: () => number, items: readonly T[]): T {
  const total = items.reduce((s, i) => s + (i[i.length - 1] as number), 0);
  let x = rnd() * total;
  for (const i of items) if ((x -= i[i.length - 1] as number) < 0) return i;
  return items[items.length - 1];
}

function device(h: History, d: number, rnd: () => number): Envelope[] {
  const out: Envelope[] = [];
  const anon = uuidOf(`${h.appId}:device:${d}`);
  const [country, locale] = pick(rnd, COUNTRIES);
  const platform = rnd() < 0.6 ? 'ios' : 'android';
  const dev = {
    platform,
    os: platform === 'ios' ? '17.4' : '14',
    app_version: APP_VERSIONS[Math.floor(rnd() * APP_VERSIONS.length)],
    sdk_version: '1.2.0',
    framework: 'react_native',
    locale,
    country,
  };
  // Installs grow over the window: the day since the window's start has density ~ x.
  const installDay = Math.floor(h.days * Math.sqrt(rnd()));
  const dayStart = h.now - (h.days - installDay) * DAY;
  let t = dayStart + (8 + rnd() * 14) * HOUR;
  let seq = 0;
  let session = '';
  const emit = (event_name: string, properties: Record<string, unknown> = {}, gapMs = 2_000 + rnd() * 20_000) => {
    t += gapMs;
    if (t > h.now - MIN) return false; // nothing in the future (or the last minute)
    out.push({
      schema_version: 1,
      event_id: uuidOf(`${h.appId}:event:${d}:${seq}`),
      event_name,
      ts_ms: Math.round(t),
      user: { anon_id: anon },
      device: dev,
      context: { session_id: session, client_seq: seq++ },
      properties,
      privacy: { consent: { analytics: true } },
    });
    return true;
  };
  /** A session: after a launch (`app_open`, `first_open` on the install's first) or a return from the background. */
  const sessionAt = (open: 'install' | 'launch' | 'resume', body: () => void) => {
    session = uuidOf(`${h.appId}:session:${d}:${seq}`);
    const start = t;
    if (open !== 'resume') emit('app_open', { first_open: open === 'install' }, 0);
    emit('session_start', {}, 1);
    body();
    if (rnd() < 0.004) return emit('app_crash', { reason: 'demo' }); // the session ends with the crash
    emit('session_end', { duration_ms: Math.round(t + 1_000 - start) }, 1_000);
  };

  const engagement = 0.4 + rnd() * 1.2;
  const paid = { annualUntil: 0, bought: false };
  sessionAt('install', () => {
    if (rnd() < 0.6) emit('push_permission_granted');
    else emit('push_permission_denied');
    const completed = onboarding(h, rnd, emit);
    if (rnd() < (completed ? 0.9 : 0.25)) paywall(h, anon, rnd, emit, paid, t);
  });
  // A trial converts (a paid purchase_completed, the store's renewal reported on the next launch)
  // when it ends, for about half of them: a session of its own, in time order with the others.
  const renewal = () => {
    const until = paid.annualUntil;
    paid.annualUntil = 0;
    if (rnd() > 0.5 || until <= t) return;
    t = until;
    const { trial_days: _trial, label: _label, ...plan } = PLANS.annual;
    sessionAt('launch', () => {
      emit('purchase_completed', { ...plan, is_trial: false, paywall_id: h.paywalls.annual });
      if (rnd() < 0.05) emit('purchase_refunded', { product_id: plan.product_id, price: plan.price }, 60_000);
    });
  };
  // Return days: chance decays with the days since install; one or two sessions per active day.
  for (let k = 1; installDay + k < h.days + 1; k++) {
    if (paid.annualUntil && paid.annualUntil < dayStart + k * DAY) renewal();
    if (rnd() > Math.min(0.9, 0.45 * engagement * k ** -0.5)) continue;
    t = dayStart + k * DAY + (7 + rnd() * 15) * HOUR;
    if (t > h.now - HOUR) break;
    const sessions = rnd() < 0.3 ? 2 : 1;
    for (let s = 0; s < sessions; s++) {
      sessionAt(s === 0 ? 'launch' : 'resume', () => {
        for (let i = Math.floor(rnd() * 4); i > 0; i--)
          emit('lesson_completed', { lesson: Math.floor(rnd() * 90) }, 60_000 + rnd() * 240_000);
        if (!paid.bought && rnd() < 0.06) paywall(h, anon, rnd, emit, paid, t);
      });
      t += (1 + rnd() * 5) * HOUR;
    }
  }
  if (paid.annualUntil) renewal();
  return out;
}

type Emit = (name: string, props?: Record<string, unknown>, gapMs?: number) => boolean;

/** The onboarding flow with drop-off at each step; true when the flow was completed. */
function onboarding(h: History, rnd: () => number, emit: Emit): boolean {
  if (rnd() > 0.88) return false;
  const total = h.stepIds.length;
  const base = { flow_id: h.flowId, total_steps: total };
  emit('onboarding_flow_started', base);
  const keep = [0.92, 0.8, 0.93];
  for (let i = 0; i < total; i++) {
    const step = { ...base, step_id: h.stepIds[i], step_index: i };
    emit('onboarding_step_viewed', step);
    if (rnd() > (keep[i] ?? 0.9)) {
      if (rnd() < 0.5) emit('onboarding_flow_dismissed', step);
      return false;
    }
    const answer = h.stepIds[i] === 'city' ? { option_set_id: 'cities', option_value: city(rnd) } : {};
    emit('onboarding_step_completed', { ...step, ...answer }, 4_000 + rnd() * 30_000);
  }
  emit('onboarding_flow_completed', base, 500);
  return true;
}

const city = (rnd: () => number) => CITIES[Math.floor(rnd() * CITIES.length)][0];

/** A paywall display: the experiment decides which one (as the SDK's paywall runtime does), maybe a purchase. */
function paywall(
  h: History,
  anon: string,
  rnd: () => number,
  emit: Emit,
  paid: { annualUntil: number; bought: boolean },
  at: number,
) {
  const variant = assignVariant(anon, { key: h.experiment.key, variants: h.experiment.variants });
  const monthlyFirst = variant === 'monthly_first';
  const props = {
    paywall_id: monthlyFirst ? h.paywalls.monthly : h.paywalls.annual,
    ...(variant ? { experiment_id: h.experiment.key, variant } : {}),
  };
  if (variant) emit('experiment_exposure', { experiment_id: h.experiment.key, variant }, 300);
  emit('paywall_view', props, 200);
  if (rnd() < (monthlyFirst ? 0.2 : 0.16)) {
    const annual = monthlyFirst ? rnd() < 0.35 : rnd() < 0.7;
    const { trial_days, label: _label, ...plan } = annual ? PLANS.annual : { ...PLANS.monthly, trial_days: 0 };
    emit('purchase_started', { ...plan, ...props }, 5_000 + rnd() * 20_000);
    const r = rnd();
    if (r < 0.75) {
      emit('purchase_completed', { ...plan, ...props, is_trial: trial_days > 0 }, 3_000 + rnd() * 8_000);
      paid.bought = true;
      if (trial_days > 0) paid.annualUntil = at + trial_days * DAY;
      else if (rnd() < 0.04) emit('purchase_refunded', { product_id: plan.product_id, price: plan.price }, 60_000);
    } else emit(r < 0.9 ? 'purchase_canceled' : 'purchase_failed', { ...plan, ...props }, 2_000 + rnd() * 5_000);
  }
  emit('paywall_close', props, 1_000 + rnd() * 10_000);
}
