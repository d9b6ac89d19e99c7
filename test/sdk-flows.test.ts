import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { createClient, memoryStorage, type Storage } from '../packages/sdk/src/index.js';
import { useTenantApp } from './helpers/suite.js';
import { deviceEvents } from './helpers/client.js';

// The headless onboarding-flow runtime (issue 34 §4) with a flow published through the API:
// the SDK downloads it in the bundle, and the events it tracks are read back through the export API.
const suite = useTenantApp();
const device = { platform: 'android', os: '14', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
let flowId: string;

describe('sdk onboarding flow runtime', () => {
  before(async () => {
    const steps = [{ id: 'welcome' }, { id: 'goal', option_set_id: 'goals' }, { title: 'no id' }];
    const r = await suite.c.post('/api/v1/onboarding-flows', { name: 'First run', steps }, suite.t.console);
    assert.equal(r.status, 201, r.text);
    flowId = r.body.data.id;
    assert.equal((await suite.c.post(`/api/v1/onboarding-flows/${flowId}/publish`, {}, suite.t.console)).status, 200);
  });

  const sdk = (storage: Storage) =>
    createClient({
      apiKey: suite.t.live.public_key,
      baseUrl: suite.server.url,
      storage,
      device,
      stream: false,
      lifecycle: false,
    });
  const stored = (anon: string) => deviceEvents(suite.c, suite.t.live.public_key, anon);
  const step = (step_id: string, step_index: number) => ({ flow_id: flowId, step_id, step_index, total_steps: 3 });

  it('start, view, complete, back, a restart in the middle (resumes), completion after the last step', async () => {
    const storage = memoryStorage();
    const c = sdk(storage);
    await c.start();
    assert.equal(c.flow('no-such-flow'), null);
    const flow = c.flow(flowId)!;
    assert.equal(flow.status, 'not_started');
    await assert.rejects(flow.view(0), /not started/, 'view before start');
    assert.equal(await flow.start(), 0);
    await flow.view(0);
    await flow.view(0); // a re-render: not tracked twice
    await flow.complete(0);
    await flow.view(1);
    assert.equal(await flow.back(), 0);
    await flow.view(1);
    await flow.complete(1, 'lose_weight');
    await assert.rejects(flow.view(7), RangeError);
    await c.shutdown();

    // A restart: the flow resumes where the user left off, without a second flow_started.
    const again = sdk(storage);
    await again.start();
    const resumed = again.flow(flowId)!;
    assert.equal(resumed.status, 'in_progress');
    assert.equal(await resumed.start(), 2);
    assert.deepEqual(resumed.progress?.answers, { goal: 'lose_weight' });
    await resumed.view(2);
    await resumed.complete(2);
    assert.equal(resumed.status, 'completed');
    await again.flush();

    const events = await stored(c.getAnonId()!);
    assert.deepEqual(
      events.map((e) => [e.event_name, e.properties]),
      [
        ['onboarding_flow_started', { flow_id: flowId, total_steps: 3 }],
        ['onboarding_step_viewed', step('welcome', 0)],
        ['onboarding_step_completed', step('welcome', 0)],
        ['onboarding_step_viewed', step('goal', 1)],
        ['onboarding_step_viewed', step('welcome', 0)],
        ['onboarding_step_viewed', step('goal', 1)],
        ['onboarding_step_completed', { ...step('goal', 1), option_set_id: 'goals', option_value: 'lose_weight' }],
        ['onboarding_step_viewed', step('2', 2)],
        ['onboarding_step_completed', step('2', 2)],
        ['onboarding_flow_completed', { flow_id: flowId, total_steps: 3 }],
      ],
    );
  });

  it('a select step pages and searches the Option Set it names; its answer locks the value', async () => {
    const items = ['Lose weight', 'Build muscle', 'Sleep better', 'Løse stress'].map((label, i) => ({
      value: ['lose_weight', 'build_muscle', 'sleep', 'stress'][i],
      label,
      sort_order: i,
    }));
    const pair = { 'x-api-key': suite.t.live.public_key, 'x-api-secret': suite.t.live.secret_key };
    const sync = await suite.c.post('/api/v1/sdk/option-sets/goals/sync', { mode: 'replace', items }, pair);
    assert.equal(sync.status, 200, sync.text);
    const c = sdk(memoryStorage());
    await c.start();
    const flow = c.flow(flowId)!;
    assert.equal(flow.optionSetOf(1), 'goals');
    await assert.rejects(flow.options(0), /names no option set/);
    const first = await flow.options(1, { limit: 3 });
    assert.deepEqual(
      first.items.map((o) => o.value),
      ['lose_weight', 'build_muscle', 'sleep'],
    );
    const rest = await flow.options(1, { limit: 3, cursor: first.next_cursor! });
    assert.deepEqual(
      rest.items.map((o) => o.value),
      ['stress'],
    );
    assert.equal(rest.next_cursor, null);
    const found = await flow.options(1, { q: 'lose' });
    assert.deepEqual(
      found.items.map((o) => o.value),
      ['lose_weight', 'stress'],
      'accent-insensitive search',
    );

    await flow.start();
    await flow.complete(0);
    await flow.complete(1, 'sleep');
    await c.flush();
    // The answer locked the value (the console's view of the set lists it), as the first test's did.
    const set = await suite.c.get('/api/v1/option-sets/goals', suite.t.console);
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.data.locked_values, ['lose_weight', 'sleep']);
  });

  it('dismiss: onboarding_flow_dismissed at the current step; a later start() begins again', async () => {
    const c = sdk(memoryStorage());
    await c.start();
    const flow = c.flow(flowId)!;
    await flow.start();
    await flow.view(0);
    await flow.complete(0);
    await flow.dismiss();
    assert.equal(flow.status, 'dismissed');
    await assert.rejects(flow.complete(1), /not started/);
    assert.equal(await flow.start(), 0);
    await c.flush();
    const names = (await stored(c.getAnonId()!)).map((e) => [e.event_name, e.properties]);
    assert.deepEqual(names.slice(3), [
      ['onboarding_flow_dismissed', step('goal', 1)],
      ['onboarding_flow_started', { flow_id: flowId, total_steps: 3 }],
    ]);
  });
});
