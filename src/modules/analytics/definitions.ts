import { createHash } from 'node:crypto';

/**
 * What each analytics figure means, in one place: the per-user flags and the events that set
 * them, how a device's active day and its flags are packed, the retention days, the revenue rules
 * (period end, monthly amount, conversion to USD) and which read-model field each flag feeds.
 * The fold (fold/*.ts), its SQL, the read model and metrics.ts import these; none repeats a number
 * or an order from here. DEFINITIONS_VERSION changes with any of them: the worker then rebuilds
 * every app's rollups in the background (store.ts appsNeedingRebuild), as for a timezone change.
 */

/** A purchase_completed event marked as a trial (a boolean `is_trial` property that is true). */
const IS_TRIAL = `(jsonb_typeof(p.props->'is_trial') = 'boolean' AND p.props->>'is_trial' = 'true')`;

/**
 * The flags of a device's day, in bit order (bit = index; append new ones at the end). `events`:
 * the event names that set it; `when`: an extra SQL condition on the event (`p.props` holds a
 * purchase's properties); `field`: the read-model field counting the users with the flag.
 */
export const FLAGS = [
  { key: 'onbStarted', field: 'onb_s', events: ['onboarding_flow_started'] },
  { key: 'onbCompleted', field: 'onb_c', events: ['onboarding_flow_completed'] },
  { key: 'paywall', field: 'pw', events: ['paywall_view'] },
  { key: 'trial', field: 'trial', events: ['purchase_completed'], when: IS_TRIAL },
  { key: 'paid', field: 'paid', events: ['purchase_completed'], when: `${IS_TRIAL} IS NOT TRUE` },
  { key: 'crash', field: 'crash', events: ['app_crash'] },
] as const satisfies readonly { key: string; field: string; events: readonly string[]; when?: string }[];

export type FlagKey = (typeof FLAGS)[number]['key'];
export type FlagField = (typeof FLAGS)[number]['field'];

/** Flag bit masks by key (FLAG.trial = 1 << 3). */
export const FLAG = Object.fromEntries(FLAGS.map((f, bit) => [f.key, 1 << bit])) as Record<FlagKey, number>;
export const FLAG_COUNT = FLAGS.length;

/**
 * A device's active day packed with its flags in one int4: day (since 2000-01-01) << FLAG_ROOM |
 * flags. FLAG_ROOM bits leave room for that many flags (the fold keeps an event's flags in 8 bits;
 * days up to the year 2179 then fit in 24 bits). Changing it needs a migration repacking
 * an_devices.days (as 025 did from 6 to 8).
 */
export const FLAG_ROOM = 8;
const FLAG_MASK = (1 << FLAG_ROOM) - 1;
if (FLAG_COUNT > FLAG_ROOM) throw new Error(`analytics definitions: ${FLAG_COUNT} flags, room for ${FLAG_ROOM}`);

export const pack = (day: number, flags: number): number => (day << FLAG_ROOM) | flags;
export const dayOf = (packed: number): number => packed >> FLAG_ROOM;
export const flagsOf = (packed: number): number => packed & FLAG_MASK;

/** The flag bits an event sets (SQL over events `e`, purchases' properties `p.props`), as int2. */
export function flagSql(): string {
  const byEvent = new Map<string, string[]>();
  FLAGS.forEach((f, bit) => {
    const when: string | undefined = 'when' in f ? f.when : undefined;
    for (const e of f.events)
      byEvent.set(e, [
        ...(byEvent.get(e) ?? []),
        when ? `CASE WHEN ${when} THEN ${1 << bit} ELSE 0 END` : `${1 << bit}`,
      ]);
  });
  const arms = [...byEvent].map(([e, bits]) => `WHEN '${e}' THEN ${bits.join(' + ')}`).join('\n         ');
  return `(CASE e.event_name\n         ${arms}\n         ELSE 0 END)::int2`;
}

/** Retention days: a device is retained on day N when active on its first day + N (bit = index). */
export const RETENTION_DAYS = [1, 3, 7, 14, 30, 60, 90] as const;
export type RetentionDay = (typeof RETENTION_DAYS)[number];
/** The retention mask bit of day N. */
export const retentionBit = (n: RetentionDay): number => 1 << RETENTION_DAYS.indexOf(n);

/** Gap counted for a device's first active day (or first day with a flag) in the gap histograms. */
export const FIRST_GAP = 100000;

/** A funnel step (funnels.ts validates apps' overrides against the same shape). */
export interface FunnelStepDef {
  name: string;
  event?: string;
  match?: 'any' | 'first_ever' | 'later_day' | 'days_after_first';
  days?: number;
  source?: 'ad_impressions' | 'ad_swipes';
}

/** The funnel-step event of a trial start: a purchase_completed with the trial flag (fold/devices.ts). */
export const TRIAL_STEP_EVENT = '$trial';

const ev = (event: string, name = event): FunnelStepDef => ({ name, event });

/** The default funnels' steps; an app may override each. */
export const FUNNELS: Record<string, FunnelStepDef[]> = {
  onboarding: [ev('onboarding_flow_started'), ev('onboarding_step_completed'), ev('onboarding_flow_completed')],
  monetization: [ev('paywall_view'), ev('purchase_started'), ev('purchase_completed')],
  retention: [
    ev('session_start'),
    { name: 'session_start_later_day', event: 'session_start', match: 'later_day' },
    { name: 'session_start_day_7_plus', event: 'session_start', match: 'days_after_first', days: 7 },
  ],
  icp_usp: [ev('onboarding_flow_completed'), ev('paywall_view'), ev(TRIAL_STEP_EVENT, 'trial_started')],
  aso: [
    { name: 'first_app_open', event: 'app_open', match: 'first_ever' },
    ev('onboarding_flow_started'),
    ev('purchase_completed'),
  ],
  paid_ua: [
    { name: 'ad_impressions', source: 'ad_impressions' },
    { name: 'ad_swipes', source: 'ad_swipes' },
    { name: 'install', event: 'app_open', match: 'first_ever' },
    ev('purchase_completed'),
  ],
  organic_social: [ev('deferred_deep_link_resolved'), ev('app_open'), ev('purchase_completed')],
  web2app: [
    ev('web_entitlement_activated'),
    ev('app_open'),
    { name: 'session_start_later_day', event: 'session_start', match: 'later_day' },
  ],
  feedback_loop: [ev('survey_shown'), ev('survey_completed'), ev('purchase_completed')],
};

/** Event names the default funnels use (an_steps keeps these and those of apps' overrides). */
export const DEFAULT_FUNNEL_EVENTS = [
  ...new Set(Object.values(FUNNELS).flatMap((steps) => steps.flatMap((s) => (s.event ? [s.event] : [])))),
];

/** Funnel step times kept per device-day and event (the earliest distinct ones). */
export const STEP_TIMES_KEPT = 20;

// --- Revenue (SQL over a purchase `v` with day, kind, price, period_n, period_unit) ---

/** USD per unit of `currency` on `day`: the latest rate on or before it (NULL until one exists). */
export const usdRateSql = (currency: string, day: string): string =>
  `CASE WHEN ${currency} = 'USD' THEN 1.0::float8 ELSE (
     SELECT x.usd_per_unit FROM exchange_rates x WHERE x.currency = ${currency} AND x.day <= ${day} ORDER BY x.day DESC LIMIT 1) END`;

/** A subscription period (ISO 8601 PnD, PnW, PnM, PnY, n from 1 to 999): count and unit. */
export const PERIOD_PATTERN = '^P([1-9][0-9]{0,2})([DWMY])$';

/** Per ISO 8601 period unit: the period end (calendar arithmetic: a month from Jan 31 ends Feb 28) and months per unit. */
const PERIODS = {
  D: { end: (d: string, n: string) => `${d} + ${n}`, perMonth: '365.0 / 12.0' },
  W: { end: (d: string, n: string) => `${d} + 7 * ${n}`, perMonth: '52.0 / 12.0' },
  M: { end: (d: string, n: string) => `(${d} + make_interval(months => ${n}))::date`, perMonth: '1.0' },
  Y: { end: (d: string, n: string) => `(${d} + make_interval(years => ${n}))::date`, perMonth: '1.0 / 12.0' },
} as const;

/** A paid subscription's period end (NULL for other kinds). */
export function periodEndSql(v: string): string {
  const arms = Object.entries(PERIODS)
    .map(([u, p]) => `WHEN '${u}' THEN ${p.end(`${v}.day`, `${v}.period_n`)}`)
    .join(' ');
  return `CASE WHEN ${v}.kind = 'paid' THEN CASE ${v}.period_unit ${arms} END END`;
}

/** A paid subscription's monthly amount (MRR) of `usd`, its price in USD (NULL for other kinds). */
export function monthlySql(v: string, usd: string): string {
  const arms = Object.entries(PERIODS)
    .map(([u, p]) => `WHEN '${u}' THEN ${usd} * ${p.perMonth} / ${v}.period_n`)
    .join(' ');
  return `CASE WHEN ${v}.kind = 'paid' THEN CASE ${v}.period_unit ${arms} END END`;
}

/**
 * The version of these definitions: a digest of everything above that shapes stored rollups.
 * an_app_state.defs records the one each app's rollups were built with (migration 025).
 */
export const DEFINITIONS_VERSION = createHash('sha256')
  .update(
    JSON.stringify({
      flags: FLAGS,
      room: FLAG_ROOM,
      retention: RETENTION_DAYS,
      firstGap: FIRST_GAP,
      funnels: FUNNELS,
      kept: STEP_TIMES_KEPT,
      period: PERIOD_PATTERN,
      rate: usdRateSql('c', 'd'),
      end: periodEndSql('v'),
      mrr: monthlySql('v', 'u'),
      flagSql: flagSql(),
    }),
  )
  .digest('hex')
  .slice(0, 16);
