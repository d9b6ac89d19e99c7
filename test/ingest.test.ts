import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import murmur from 'murmurhash3js';
import { describe, it } from 'node:test';
import { createTenant, makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// Tests here read the outbox rows ingestion writes; the webhook worker's fan-out drains them (every
// WEBHOOK_POLL_MS, 500 by default), which raced those reads: it polls once a minute here.
const suite = useTenantApp({ WEBHOOK_POLL_MS: '60000' });

const send = (batch: unknown[], key = suite.t.live.public_key) =>
  suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key });
const stored = async (ids: string[]) =>
  (
    await suite.server.db.query(
      'SELECT event_id::text, environment, consent, received_at, payload FROM events WHERE event_id = ANY($1::uuid[])',
      [ids],
    )
  ).rows;

describe('ingest: batch rules', () => {
  it('accepts a valid batch with 202 and commits it before answering', async () => {
    const batch = [makeEvent(), makeEvent({ event_name: 'session_start' })];
    const r = await send(batch);
    assert.equal(r.status, 202);
    assert.deepEqual(r.body, { accepted: 2, rejected: 0, sampled: 0, consent_declined: 0, suppressed: 0 });
    const rows = await stored(batch.map((e) => e.event_id));
    assert.equal(rows.length, 2);
    assert.equal(rows[0].environment, 'production');
    assert.ok(rows[0].received_at instanceof Date, 'ingestion time recorded');
    assert.equal(rows.find((x) => x.event_id === batch[0].event_id)!.payload.device.platform, 'ios');
  });

  it('refuses an empty batch and more than 500 events as a whole', async () => {
    const empty = await send([]);
    assert.equal(empty.status, 400);
    assert.equal(empty.body.code, 'validation_failed');
    const many = Array.from({ length: 501 }, () => makeEvent());
    const big = await send(many);
    assert.equal(big.status, 400);
    assert.equal((await stored(many.map((e) => e.event_id))).length, 0);
    const ok = await send(many.slice(0, 500));
    assert.equal(ok.status, 202);
    assert.equal(ok.body.accepted, 500);
  });

  it('answers 413 above 5 MB', async () => {
    const pad = 'x'.repeat(11_000);
    const batch = Array.from({ length: 500 }, () => makeEvent({ properties: { pad } }));
    const r = await send(batch);
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
  });

  it('requires an SDK key', async () => {
    assert.equal((await suite.c.post('/api/v1/ingest/events', { batch: [makeEvent()] })).status, 401);
  });
});

describe('ingest: per-event validation', () => {
  const now = Date.now();
  const cases: [string, Record<string, any>, string][] = [
    [
      'missing device.platform',
      { device: { os: '1', app_version: '1', sdk_version: '1', locale: 'en_US', country: 'US' } },
      'missing_field',
    ],
    ['missing event_id', { event_id: undefined }, 'missing_field'],
    ['ts_ms not a number', { ts_ms: 'yesterday' }, 'invalid_field'],
    [
      'platform outside list',
      { device: { platform: 'web', os: '1', app_version: '1', sdk_version: '1', locale: 'en_US', country: 'US' } },
      'invalid_field',
    ],
    [
      'framework outside list',
      {
        device: {
          platform: 'ios',
          framework: 'unity',
          os: '1',
          app_version: '1',
          sdk_version: '1',
          locale: 'en_US',
          country: 'US',
        },
      },
      'invalid_field',
    ],
    ['event_id not a uuid', { event_id: 'abc' }, 'invalid_field'],
    ['anon_id not a uuid', { user: { anon_id: 'device-1' } }, 'invalid_field'],
    ['session_id missing', { context: {} }, 'missing_field'],
    [
      'country not ISO',
      { device: { platform: 'ios', os: '1', app_version: '1', sdk_version: '1', locale: 'en_US', country: 'USA' } },
      'invalid_field',
    ],
    ['consent missing', { privacy: {} }, 'missing_field'],
    ['consent not boolean', { privacy: { consent: { analytics: 'yes' } } }, 'invalid_field'],
    ['schema_version 2', { schema_version: 2 }, 'invalid_field'],
    ['event_name empty', { event_name: '' }, 'invalid_field'],
    ['exposures not an array', { context: { session_id: randomUUID(), experiment_exposures: 'a' } }, 'invalid_field'],
    ['over 32 KB', { properties: { blob: 'y'.repeat(33 * 1024) } }, 'event_too_large'],
    ['more than 24 h ahead', { ts_ms: now + 25 * 3600_000 }, 'ts_in_future'],
    ['more than 90 days old', { ts_ms: now - 91 * 86_400_000 }, 'ts_too_old'],
  ];

  it('rejects each bad event alone with its index, code and reason, and stores the rest', async () => {
    const good = [makeEvent(), makeEvent()];
    const bad = cases.map(([, over]) => makeEvent(over));
    const batch = [good[0], ...bad, good[1], 'not an object', null];
    const r = await send(batch);
    assert.equal(r.status, 202);
    assert.equal(r.body.accepted, 2);
    assert.equal(r.body.rejected, cases.length + 2);
    assert.equal(r.body.accepted + r.body.rejected, batch.length);
    cases.forEach(([name, , code], i) => {
      const err = r.body.errors.find((e: any) => e.index === i + 1);
      assert.ok(err, `error for ${name}`);
      assert.equal(err.code, code, `${name}: ${err.message}`);
      assert.ok(err.message.length > 0);
    });
    assert.equal(r.body.errors.find((e: any) => e.index === cases.length + 2).code, 'invalid_field');
    assert.equal(r.body.errors.find((e: any) => e.index === 1).event_id, bad[0].event_id);
    assert.equal((await stored(good.map((e) => e.event_id))).length, 2);
    assert.equal(
      (
        await stored(
          bad.filter((e) => typeof e.event_id === 'string' && e.event_id.length === 36).map((e) => e.event_id),
        )
      ).length,
      0,
    );
  });

  it('ignores unknown fields and accepts optional ones', async () => {
    const e = makeEvent({
      extra_top: { anything: true },
      context: {
        session_id: randomUUID(),
        screen: 'home',
        client_seq: 7,
        experiment_exposures: [{ exp: 'e1', variant: 'b' }],
      },
      device: {
        platform: 'android',
        os: '14',
        app_version: '3',
        sdk_version: '2',
        framework: 'flutter',
        framework_version: '1.0',
        locale: 'de_DE',
        country: 'de',
      },
    });
    const r = await send([e]);
    assert.equal(r.body.accepted, 1);
    const [row] = await stored([e.event_id]);
    assert.deepEqual(row.payload.extra_top, { anything: true }, 'stored as received');
  });

  it('stores free text exactly: quotes, backslashes, control characters and emoji in names and user ids', async () => {
    const name = 'tap "buy" \\ now\n\u0001 🚀';
    const userId = 'user "42" \\ é\t';
    const e = makeEvent({ event_name: name, user: { anon_id: randomUUID(), user_id: userId } });
    const r = await send([e]);
    assert.equal(r.body.accepted, 1, JSON.stringify(r.body));
    const { rows } = await suite.server.db.query('SELECT event_name, user_id FROM events WHERE event_id = $1', [
      e.event_id,
    ]);
    assert.deepEqual(rows[0], { event_name: name, user_id: userId });
  });
});

describe('ingest: dedupe, consent, sampling, environments', () => {
  it('stores duplicates once, across retries and within a batch, and acknowledges them', async () => {
    const e = makeEvent();
    const batch = [e, makeEvent(), { ...e }];
    const first = await send(batch);
    assert.equal(first.body.accepted, 3);
    const retry = await send(batch);
    assert.equal(retry.status, 202);
    assert.equal(retry.body.accepted, 3);
    const { rows } = await suite.server.db.query('SELECT count(*)::int AS n FROM events WHERE event_id = $1', [
      e.event_id,
    ]);
    assert.equal(rows[0].n, 1);
  });

  it('keeps consent-declined events for audit only and counts them', async () => {
    const e = makeEvent({ event_name: 'onboarding_flow_started', privacy: { consent: { analytics: false } } });
    const r = await send([e, makeEvent()]);
    assert.equal(r.body.accepted, 2);
    assert.equal(r.body.consent_declined, 1);
    const [row] = await stored([e.event_id]);
    assert.equal(row.consent, false);
    const ob = await suite.server.db.query(
      `SELECT count(*)::int AS n FROM outbox WHERE payload->'event'->>'event_id' = $1`,
      [e.event_id],
    );
    assert.equal(ob.rows[0].n, 0, 'declined events trigger no webhook');
  });

  it('samples deterministically per device and never drops purchases', async () => {
    const fresh = await createTenant(suite.c);
    await suite.c.patch('/api/v1/settings', { sampling_rate: 0.5 }, fresh.console);
    const devices = Array.from({ length: 40 }, () => randomUUID());
    const batch = devices.flatMap((d) => [
      makeEvent({ user: { anon_id: d } }),
      makeEvent({ user: { anon_id: d }, event_name: 'purchase_completed' }),
    ]);
    const r = await send(batch, fresh.live.public_key);
    const keptDevices = devices.filter((d) => murmur.x86.hash32(d) % 10000 < 5000);
    assert.ok(keptDevices.length > 5 && keptDevices.length < 35, 'the sample has both outcomes');
    assert.equal(r.body.accepted, 80);
    assert.equal(r.body.sampled, 40 - keptDevices.length);
    const rows = await stored(batch.map((e) => e.event_id));
    assert.equal(rows.length, 40 + keptDevices.length);
    const again = await send(
      devices.map((d) => makeEvent({ user: { anon_id: d } })),
      fresh.live.public_key,
    );
    assert.equal(again.body.sampled, 40 - keptDevices.length, 'same devices, same decision');
  });

  it('writes sandbox and production keys to separate environments', async () => {
    const e = makeEvent();
    await send([e], suite.t.sandbox.public_key);
    const [row] = await stored([e.event_id]);
    assert.equal(row.environment, 'sandbox');
  });

  it('writes outbox entries for webhook events and option-set locks with the events', async () => {
    const started = makeEvent({ event_name: 'onboarding_flow_started' });
    const completed = makeEvent({ event_name: 'onboarding_flow_completed' });
    const exposure = makeEvent({ event_name: 'experiment_exposure' });
    const answer = makeEvent({
      event_name: 'onboarding_step_completed',
      properties: { option_set_id: 'countries', option_value: ['fr', 'de'] },
    });
    await send([started, completed, exposure, answer, makeEvent()]);
    const { rows } = await suite.server.db.query(
      `SELECT event_type, payload FROM outbox WHERE payload->'event'->>'event_id' = ANY($1) ORDER BY id`,
      [[started.event_id, completed.event_id, exposure.event_id]],
    );
    assert.deepEqual(
      rows.map((r) => r.event_type),
      ['onboarding.started', 'onboarding.completed', 'experiment.exposure'],
    );
    assert.equal(rows[0].payload.app_id, suite.t.appId);
    assert.equal(rows[0].payload.event.event_id, started.event_id);
    const locks = await suite.server.db.query(
      `SELECT value FROM option_value_locks WHERE app_id = $1 AND set_id = 'countries' ORDER BY value`,
      [suite.t.appId],
    );
    assert.deepEqual(
      locks.rows.map((r) => r.value),
      ['de', 'fr'],
    );
  });
});

describe('ingest: per-app rate limit', () => {
  it('answers 429 with Retry-After over events_per_minute and stores nothing of that batch', async () => {
    const fresh = await createTenant(suite.c);
    await suite.c.patch('/api/v1/settings', { events_per_minute: 10 }, fresh.console);
    const ok = await send(
      Array.from({ length: 8 }, () => makeEvent()),
      fresh.live.public_key,
    );
    assert.equal(ok.status, 202);
    assert.equal(ok.headers.get('ratelimit-limit'), '10');
    const over = Array.from({ length: 5 }, () => makeEvent());
    const r = await send(over, fresh.live.public_key);
    assert.equal(r.status, 429);
    assert.equal(r.body.code, 'rate_limited');
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    assert.equal((await stored(over.map((e) => e.event_id))).length, 0);
    const small = await send([makeEvent(), makeEvent()], fresh.live.public_key);
    assert.equal(small.status, 202, 'what still fits in the window is accepted');
  });
});

describe('identify', () => {
  const identify = (body: unknown) =>
    suite.c.post('/api/v1/ingest/identify', body, { 'x-api-key': suite.t.live.public_key });

  it('links a device to a user, latest link wins, history and traits kept', async () => {
    const anon = randomUUID();
    const t0 = Date.now() - 10_000;
    assert.equal(
      (await identify({ anon_id: anon, user_id: 'u-1', ts_ms: t0, traits: { plan: 'free', age: 30 } })).status,
      202,
    );
    assert.equal((await identify({ anon_id: anon, user_id: 'u-2', ts_ms: t0 + 5000 })).status, 202);
    assert.equal(
      (await identify({ anon_id: anon, user_id: 'u-3', ts_ms: t0 - 5000 })).status,
      202,
      'an older link is recorded',
    );
    const cur = await suite.server.db.query('SELECT user_id FROM identities WHERE app_id = $1 AND anon_id = $2', [
      suite.t.appId,
      anon,
    ]);
    assert.equal(cur.rows[0].user_id, 'u-2', 'the latest link by time wins');
    const hist = await suite.server.db.query(
      'SELECT user_id FROM identity_links WHERE app_id = $1 AND anon_id = $2 ORDER BY ts',
      [suite.t.appId, anon],
    );
    assert.deepEqual(
      hist.rows.map((r) => r.user_id),
      ['u-3', 'u-1', 'u-2'],
    );
    await identify({ anon_id: anon, user_id: 'u-1', ts_ms: t0 + 1, traits: { plan: 'pro' } });
    const traits = await suite.server.db.query('SELECT traits FROM user_traits WHERE app_id = $1 AND user_id = $2', [
      suite.t.appId,
      'u-1',
    ]);
    assert.deepEqual(traits.rows[0].traits, { plan: 'pro', age: 30 });
  });

  it('is idempotent on retries and records one user.identified outbox entry per link', async () => {
    const anon = randomUUID();
    const body = { anon_id: anon, user_id: 'retry-user', ts_ms: Date.now() };
    const a = await identify(body);
    const b = await identify(body);
    assert.equal(a.body.duplicate, false);
    assert.equal(b.body.duplicate, true);
    const ob = await suite.server.db.query(
      `SELECT payload FROM outbox WHERE event_type = 'user.identified' AND payload->>'anon_id' = $1`,
      [anon],
    );
    assert.equal(ob.rows.length, 1);
    assert.equal(ob.rows[0].payload.user_id, 'retry-user');
    assert.equal(ob.rows[0].payload.app_id, suite.t.appId);
  });

  it('validates the payload', async () => {
    for (const body of [
      { anon_id: 'nope', user_id: 'u', ts_ms: 1 },
      { anon_id: randomUUID(), user_id: '', ts_ms: 1 },
      { anon_id: randomUUID(), user_id: 'u' },
      { anon_id: randomUUID(), user_id: 'u', ts_ms: Date.now(), traits: { big: 'z'.repeat(20_000) } },
      { anon_id: randomUUID(), user_id: 'u', ts_ms: Date.now() + 2 * 86_400_000 },
    ]) {
      const r = await identify(body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.code, 'validation_failed');
    }
  });
});
