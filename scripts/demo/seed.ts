import { api, type Api, type Headers } from './api.js';
import { type Account, type Content, ensureAccount, ensureContent, ensureOptionSet, FLOW_NAME } from './content.js';
import { type Envelope, generateHistory } from './events.js';

// The demo's seeding, all through the public HTTP API: account, app and key, Option Set, published
// content, a running experiment, then the generated history uploaded through the ingestion API in
// batches. `npm run demo` runs it at full size; test/example-app.test.ts at a small one.

export const DEMO_EMAIL = 'demo@example.com';
export const DEMO_PASSWORD = 'demo-password-1234';
/** The ingestion API's batch limit (docs/ingestion.md: 1 to 500 events). */
const BATCH = 500;
/** Batches in flight at once: enough to keep the service's writers busy on a 2-core machine. */
const PARALLEL = 4;
/** Marks a finished upload, so a re-run skips it (found through the export API). */
const SEEDED_EVENT = 'demo_history_seeded';
const DAY = 86_400_000;

export interface SeedOptions {
  baseUrl: string;
  devices?: number;
  days?: number;
  email?: string;
  password?: string;
  seed?: number;
  log?: (line: string) => void;
}

export interface Demo extends Account, Content {
  email: string;
  password: string;
  /** Events uploaded by this run (0 when an earlier run did it). */
  uploaded: number;
}

/** Makes (or finds) everything the demo needs; idempotent: a second run reuses the first's data. */
export async function seedDemo(o: SeedOptions): Promise<Demo> {
  const log = o.log ?? (() => undefined);
  const c = api(o.baseUrl);
  const email = o.email ?? DEMO_EMAIL;
  const password = o.password ?? DEMO_PASSWORD;
  log('account, app and SDK key…');
  const account = await ensureAccount(c, email, password);
  const h = account.console;
  // Events reach the service within 2 s of being tracked (the SDK reads these at bootstrap).
  await c.patch('/api/v1/settings', { sdk_settings: { flushInterval: 2, batchSize: 20 } }, h);
  log('option set, onboarding flow, paywalls, remote config, flags, experiment…');
  await ensureOptionSet(c, h);
  const content = await ensureContent(c, h);
  const demo = { ...account, ...content, email, password, uploaded: 0 };
  if (await seeded(c, account.publicKey)) {
    log('history already uploaded by an earlier run');
    return demo;
  }
  const days = o.days ?? 60;
  const flow = (await c.get(`/api/v1/onboarding-flows/${content.flowId}`, h)).body.data as { steps: { id: string }[] };
  const events = generateHistory({
    appId: account.appId,
    devices: o.devices ?? 3000,
    days,
    now: Date.now(),
    flowId: content.flowId,
    stepIds: flow.steps.map((s) => s.id),
    paywalls: content.paywalls,
    experiment: content.experiment,
    seed: o.seed,
  });
  log(`uploading ${events.length.toLocaleString('en-US')} events of ${o.devices ?? 3000} devices over ${days} days…`);
  demo.uploaded = await upload(c, h, account.publicKey, events, log);
  log(`flow "${FLOW_NAME}" and history ready`);
  return demo;
}

async function seeded(c: Api, key: string): Promise<boolean> {
  const now = Date.now();
  const q = new URLSearchParams({
    start_date: new Date(now - 89 * DAY).toISOString(),
    end_date: new Date(now + DAY).toISOString(),
    event_names: SEEDED_EVENT,
    limit: '1',
  });
  const r = await c.get(`/api/v1/sdk/events/export?${q}`, { 'x-api-key': key });
  return r.body.data.length > 0;
}

/**
 * Uploads in batches of 500, a few at a time. The app's `events_per_minute` (60,000 by default) is
 * raised for the upload and put back after it; the marker event goes last.
 */
async function upload(c: Api, h: Headers, key: string, events: Envelope[], log: (s: string) => void) {
  const settings = (await c.get('/api/v1/settings', h)).body.data as { events_per_minute: number };
  await c.patch('/api/v1/settings', { events_per_minute: 10_000_000 }, h);
  let accepted = 0;
  let next = 0;
  let shown = 0;
  const send = async () => {
    for (let i = next; i < events.length; i = next) {
      next += BATCH;
      const batch = events.slice(i, i + BATCH);
      const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key }, [202]);
      if (r.body.rejected > 0) throw new Error(`events rejected: ${JSON.stringify(r.body.errors).slice(0, 500)}`);
      accepted += batch.length;
      if (accepted - shown >= events.length / 10) {
        shown = accepted;
        log(`  ${Math.round((100 * accepted) / events.length)}% (${accepted.toLocaleString('en-US')} events)`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: PARALLEL }, send));
  } finally {
    await c.patch('/api/v1/settings', { events_per_minute: settings.events_per_minute }, h);
  }
  const last = events[events.length - 1];
  const marker = { ...last, event_id: crypto.randomUUID(), event_name: SEEDED_EVENT, ts_ms: Date.now() };
  await c.post(
    '/api/v1/ingest/events',
    { batch: [{ ...marker, properties: { events: accepted } }] },
    { 'x-api-key': key },
    [202],
  );
  return accepted;
}
