import type { Api, Headers } from './api.js';
import { CITIES } from './cities.js';

// The demo's account and published content, made through the public API. Each step first looks
// for what an earlier run made (by name or key), so a re-run reuses it instead of duplicating it.

export const OPTION_SET_ID = 'cities';
export const FLOW_NAME = 'Welcome';
export const EXPERIMENT_KEY = 'paywall_annual_vs_monthly';
const ORG_NAME = 'Demo Org';
const APP_NAME = 'Paywall Demo';
const KEY_NAME = 'demo';

/** The plans both paywalls sell (the fake store's catalogue); `trial_days` makes the first purchase a trial. */
export const PLANS = {
  annual: { product_id: 'pro_annual', label: 'Annual', price: 59.99, currency: 'USD', period: 'P1Y', trial_days: 7 },
  monthly: { product_id: 'pro_monthly', label: 'Monthly', price: 9.99, currency: 'USD', period: 'P1M' },
} as const;

export interface Account {
  token: string;
  orgId: string;
  appId: string;
  /** Headers of a console call as the demo user, scoped to the demo app. */
  console: Headers;
  publicKey: string;
}

export interface Content {
  flowId: string;
  /** The experiment's control paywall (the placement's) and its treatment. */
  paywalls: { annual: string; monthly: string };
  experiment: { id: string; key: string; variants: { key: string; weight: number; value: unknown }[] };
}

/** Signs up the demo user, or signs in when it exists; finds or makes its organization, app and SDK key. */
export async function ensureAccount(c: Api, email: string, password: string): Promise<Account> {
  const signup = await c.post('/api/v1/auth/signup', { email, password, name: 'Demo' }, {}, [201, 409]);
  const token: string =
    signup.status === 201
      ? signup.body.token
      : (await c.post('/api/v1/auth/login', { email, password }, {}, [200])).body.token;
  const auth = { authorization: `Bearer ${token}` };
  const me = (await c.get('/api/v1/me', auth)).body.data as {
    organizations: { id: string; name: string; apps: { id: string; name: string }[] }[];
  };
  const org =
    me.organizations.find((o) => o.name === ORG_NAME) ??
    (await c.post('/api/v1/organizations', { name: ORG_NAME }, auth)).body.data;
  const app =
    org.apps?.find((a: { name: string }) => a.name === APP_NAME) ??
    (await c.post(`/api/v1/organizations/${org.id}/apps`, { name: APP_NAME }, auth)).body.data;
  const scoped = { ...auth, 'x-tenant-id': org.id, 'x-app-id': app.id };
  const keys = (await c.get('/api/v1/sdk/api-keys', scoped)).body.data as {
    name: string | null;
    public_key: string;
    environment: string;
    status: string;
  }[];
  const key =
    keys.find((k) => k.name === KEY_NAME && k.environment === 'production' && k.status === 'active') ??
    (await newKey(c, scoped, KEY_NAME));
  return { token, orgId: org.id, appId: app.id, console: scoped, publicKey: key.public_key };
}

const newKey = async (c: Api, h: Headers, name: string) =>
  (await c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: ['export_data'], name }, h)).body
    .data as { public_key: string; secret_key: string };

/** The Option Set the flow's select step searches: synced once (a sync needs a key pair, made for it). */
export async function ensureOptionSet(c: Api, h: Headers): Promise<void> {
  const sets = (await c.get('/api/v1/option-sets', h)).body.data as { set_id: string }[];
  if (sets.some((s) => s.set_id === OPTION_SET_ID)) return;
  const k = await newKey(c, h, 'demo-option-sets');
  const items = CITIES.map(([value, label, country], i) => ({
    id: value,
    value,
    label,
    sort_order: i,
    option_data: { country },
  }));
  await c.post(
    `/api/v1/sdk/option-sets/${OPTION_SET_ID}/sync`,
    { mode: 'replace', items },
    { 'x-api-key': k.public_key, 'x-api-secret': k.secret_key },
    [200],
  );
}

/** A published item of `kind` named `name`, made and published when missing. */
async function ensurePublished(c: Api, h: Headers, kind: string, name: string, body: object): Promise<string> {
  const list = (await c.get(`/api/v1/${kind}?limit=100`, h)).body.data as {
    id: string;
    name: string;
    status: string;
  }[];
  const found = list.find((i) => i.name === name);
  const id: string = found?.id ?? (await c.post(`/api/v1/${kind}`, { name, ...body }, h)).body.data.id;
  if (found?.status !== 'published') await c.post(`/api/v1/${kind}/${id}/publish`, {}, h);
  return id;
}

const paywallBody = (headline: string, order: (keyof typeof PLANS)[]) => ({
  layout: { headline, subtitle: 'Unlimited lessons, offline mode, no ads.', highlight: order[0] },
  plans: order.map((p) => PLANS[p]),
  cta: { text: 'Continue' },
  dismiss: true,
});

/** The onboarding flow, two paywalls, remote config, a flag and the running paywall experiment. */
export async function ensureContent(c: Api, h: Headers): Promise<Content> {
  const steps = [
    { id: 'welcome', type: 'info', title: 'Welcome to Lingo', body: 'Learn a language in 10 minutes a day.' },
    { id: 'city', type: 'select', title: 'Where do you live?', option_set_id: OPTION_SET_ID, searchable: true },
    { id: 'reminders', type: 'info', title: 'Daily reminders', body: 'We will nudge you once a day.' },
  ];
  const flowId = await ensurePublished(c, h, 'onboarding-flows', FLOW_NAME, { steps });
  const annual = await ensurePublished(c, h, 'paywalls', 'Annual first', paywallBody('Go Pro', ['annual', 'monthly']));
  const monthly = await ensurePublished(
    c,
    h,
    'paywalls',
    'Monthly first',
    paywallBody('Try Pro monthly', ['monthly', 'annual']),
  );
  // The example app reads which flow and paywall placement to show from remote config.
  const config = { onboarding_flow_id: flowId, paywall_id: annual, support_email: 'help@example.com' };
  await c.put('/api/v1/remote-config', { values: config }, h);
  await c.put('/api/v1/feature-flags/show_close_button', { enabled: true, rollout_pct: 100 }, h);
  await c.put('/api/v1/feature-flags/new_checkout', { enabled: true, rollout_pct: 25 }, h);

  const variants = [
    { key: 'control', weight: 50, value: { paywall_id: annual } },
    { key: 'monthly_first', weight: 50, value: { paywall_id: monthly } },
  ];
  type Experiment = { id: string; key: string; status: string; variants: typeof variants };
  const list = (await c.get('/api/v1/experiments?limit=100', h)).body.data as Experiment[];
  let x = list.find((e) => e.key === EXPERIMENT_KEY);
  if (!x) {
    const body = {
      key: EXPERIMENT_KEY,
      name: 'Paywall: annual first vs monthly first',
      hypothesis: 'Showing the monthly plan first raises paid conversion without lowering revenue.',
      variants,
      primary_metric: 'paid_conversion',
      secondary_metrics: ['trial_started', 'revenue'],
      guardrail_metrics: ['refund_rate'],
    };
    x = (await c.post('/api/v1/experiments', body, h, [201])).body.data as Experiment;
  }
  if (x.status === 'draft') await c.post(`/api/v1/experiments/${x.id}/start`, {}, h);
  // An earlier run's experiment keeps its variants (frozen once started).
  const experiment = { id: x.id, key: EXPERIMENT_KEY, variants: x.variants };
  return { flowId, paywalls: { annual, monthly }, experiment };
}
