import { closeDom } from './helpers/dom.js';
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import murmur from 'murmurhash3js';
import { createElement as h, useEffect } from 'react';
import {
  SdkProvider,
  useExperiment,
  useFlag,
  useFlow,
  usePaywall,
  useRemoteConfig,
  type SdkClient,
} from '@mobile-sdk-backend/react';
import { createClient, memoryStorage, type Client, type ClientOptions } from '@mobile-sdk-backend/sdk';
import { useTenantApp } from './helpers/suite.js';
import { deviceEvents } from './helpers/client.js';

// @mobile-sdk-backend/react (built, as an app imports it) with React Testing Library on happy-dom,
// the SDK talking to the real service: content made through the API, events read back through export.
const suite = useTenantApp();
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
const VARIANTS = [
  { key: 'control', weight: 50, value: 'monthly_first' },
  { key: 'annual_first', weight: 50, value: 'annual_first' },
];
const clients: Client[] = [];

/** The split of the published vectors, computed apart (the service's murmur library): < 5000 is control. */
const variantOf = (unit: string, key: string) =>
  murmur.x86.hash32(`${unit}:${key}`) % 10_000 < 5000 ? VARIANTS[0] : VARIANTS[1];

function sdk(over: Partial<ClientOptions> = {}): Client {
  const c = createClient({
    apiKey: suite.t.live.public_key,
    baseUrl: suite.server.url,
    storage: memoryStorage(),
    device,
    stream: false,
    lifecycle: false,
    ...over,
  });
  clients.push(c);
  return c;
}

async function stored(anon: string) {
  return (await deviceEvents(suite.c, suite.t.live.public_key, anon)).map((e) => [e.event_name, e.properties]);
}

async function ok(r: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const a = await r;
  assert.equal(a.status, status, a.text);
  return a.body;
}

const provide = (client: SdkClient, child: ReturnType<typeof h>) => render(h(SdkProvider, { client }, child));

function Values() {
  const flag = useFlag('new_checkout');
  const flagD = useFlag('new_checkout', false);
  const rc = useRemoteConfig<string>('greeting');
  const rcD = useRemoteConfig('greeting', 'dflt');
  const exp = useExperiment<string>('layout_test', 'none');
  const text = `flag:${flag} flagd:${flagD} rc:${rc} rcd:${rcD} exp:${exp.variant}/${exp.value}`;
  return h('p', { 'data-testid': 'values' }, text);
}
const values = () => screen.getByTestId('values').textContent;

describe('react bindings (React Testing Library, real service)', () => {
  let flowId: string;
  const paywalls: Record<string, string> = {};
  before(async () => {
    await ok(suite.c.put('/api/v1/feature-flags/new_checkout', { enabled: true }, suite.t.console));
    await ok(suite.c.put('/api/v1/remote-config', { values: { greeting: 'hello' } }, suite.t.console));
    const x = await ok(
      suite.c.post(
        '/api/v1/experiments',
        { key: 'layout_test', name: 'Layout', variants: VARIANTS, primary_metric: 'trial_started' },
        suite.t.console,
      ),
      201,
    );
    await ok(suite.c.post(`/api/v1/experiments/${x.data.id}/start`, {}, suite.t.console));
    const steps = [{ id: 'welcome' }, { id: 'goal' }];
    flowId = (await ok(suite.c.post('/api/v1/onboarding-flows', { name: 'First run', steps }, suite.t.console), 201))
      .data.id;
    await ok(suite.c.post(`/api/v1/onboarding-flows/${flowId}/publish`, {}, suite.t.console));
    for (const name of ['a', 'b']) {
      paywalls[name] = (
        await ok(suite.c.post('/api/v1/paywalls', { name: `pw_${name}` }, suite.t.console), 201)
      ).data.id;
      await ok(suite.c.post(`/api/v1/paywalls/${paywalls[name]}/publish`, {}, suite.t.console));
    }
    const pv = [
      { key: 'control', weight: 50, value: { paywall_id: paywalls.a } },
      { key: 'annual_first', weight: 50, value: { paywall_id: paywalls.b } },
    ];
    const p = await ok(
      suite.c.post(
        '/api/v1/experiments',
        { key: 'paywall_q4', name: 'PW', variants: pv, primary_metric: 'trial_started' },
        suite.t.console,
      ),
      201,
    );
    await ok(suite.c.post(`/api/v1/experiments/${p.data.id}/start`, {}, suite.t.console));
  });
  afterEach(() => cleanup());
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()));
    await closeDom();
  });

  it('undefined (or the default) while loading; the values once the bundle arrives; identify re-renders', async () => {
    const client = sdk();
    provide(client, h(Values));
    assert.equal(values(), 'flag:undefined flagd:false rc:undefined rcd:dflt exp:null/none');
    await act(() => client.start());
    const anon = client.getAnonId()!;
    const v = variantOf(anon, 'layout_test');
    await screen.findByText(`flag:true flagd:true rc:hello rcd:hello exp:${v.key}/${v.value}`);
    // The unit becomes the user id: a user whose variant differs from the anonymous one.
    const user = ['user-0', 'user-1', 'user-2', 'user-3'].find((u) => variantOf(u, 'layout_test') !== v)!;
    const w = variantOf(user, 'layout_test');
    await act(() => client.identify(user));
    await screen.findByText(`flag:true flagd:true rc:hello rcd:hello exp:${w.key}/${w.value}`);
    await client.flush();
    assert.deepEqual(
      (await stored(anon)).filter(([n]) => n === 'experiment_exposure'),
      [
        ['experiment_exposure', { experiment_id: 'layout_test', variant: v.key }],
        ['experiment_exposure', { experiment_id: 'layout_test', variant: w.key }],
      ],
      'one exposure per (experiment, unit), however many renders',
    );
  });

  it('re-renders when a publish reaches the client through the config stream', async () => {
    const client = sdk({ stream: true });
    provide(client, h(Values));
    await act(() => client.start());
    await screen.findByText(/^flag:true .* rc:hello/);
    // The updates come from the server's push, outside any act(): as in an app, React renders them.
    const g = globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean };
    g.IS_REACT_ACT_ENVIRONMENT = false;
    await ok(suite.c.put('/api/v1/remote-config', { values: { greeting: 'published' } }, suite.t.console));
    await ok(suite.c.put('/api/v1/feature-flags/new_checkout', { enabled: false }, suite.t.console));
    await screen.findByText(/^flag:false flagd:false rc:published rcd:published /, {}, { timeout: 10_000 });
    await ok(suite.c.put('/api/v1/feature-flags/new_checkout', { enabled: true }, suite.t.console));
    await ok(suite.c.put('/api/v1/remote-config', { values: { greeting: 'hello' } }, suite.t.console));
    await screen.findByText(/^flag:true .* rc:hello/, {}, { timeout: 10_000 });
    g.IS_REACT_ACT_ENVIRONMENT = true;
  });

  it('useFlow: undefined while loading, null for an unknown flow, re-renders on progress', async () => {
    function Onboarding() {
      const flow = useFlow(flowId);
      const none = useFlow('no-such-flow');
      if (flow === undefined) return h('p', null, 'loading');
      if (!flow) return h('p', null, 'no flow');
      return h(
        'div',
        null,
        h('p', null, `${flow.status} ${flow.index}/${flow.totalSteps} unknown:${none}`),
        h(
          'button',
          { onClick: () => void (flow.status === 'in_progress' ? flow.complete(flow.index) : flow.start()) },
          'next',
        ),
      );
    }
    const client = sdk();
    provide(client, h(Onboarding));
    assert.ok(screen.getByText('loading'));
    await act(() => client.start());
    await screen.findByText('not_started 0/2 unknown:null');
    for (const want of ['in_progress 0/2', 'in_progress 1/2', 'completed 1/2']) {
      fireEvent.click(screen.getByText('next'));
      await screen.findByText(`${want} unknown:null`);
    }
    await client.flush();
    assert.deepEqual(
      (await stored(client.getAnonId()!)).map(([n]) => n),
      [
        'onboarding_flow_started',
        'onboarding_step_completed',
        'onboarding_step_completed',
        'onboarding_flow_completed',
      ],
    );
  });

  it('usePaywall: the experiment-chosen paywall, one paywall_view per display, purchases and close carry paywall_id', async () => {
    function Paywall() {
      const run = usePaywall(paywalls.a);
      useEffect(() => {
        if (!run) return;
        void run.shown();
        return () => void run.closed();
      }, [run]);
      if (run === undefined) return h('p', null, 'loading');
      if (!run) return h('p', null, 'none');
      const buy = () =>
        void run.purchaseCompleted({ product_id: 'pro_annual', price: 59.99, currency: 'USD', period: 'P1Y' });
      return h('div', null, h('p', null, `showing ${run.content.name}`), h('button', { onClick: buy }, 'buy'));
    }
    const client = sdk();
    await client.identify('user-1'); // paywall_q4's vector: annual_first, i.e. paywall B
    const view = provide(client, h(Paywall));
    await act(() => client.start());
    await screen.findByText('showing pw_b');
    await act(async () => fireEvent.click(screen.getByText('buy')));
    await act(() => client.setForeground(false)); // a change re-renders: still one display
    view.unmount();
    await act(() => client.flush());
    const pw = { paywall_id: paywalls.b, experiment_id: 'paywall_q4', variant: 'annual_first' };
    assert.deepEqual(
      (await stored(client.getAnonId()!)).filter(([n]) => !n.startsWith('session')),
      [
        ['experiment_exposure', { experiment_id: 'paywall_q4', variant: 'annual_first' }],
        ['paywall_view', pw],
        ['purchase_completed', { product_id: 'pro_annual', price: 59.99, currency: 'USD', period: 'P1Y', ...pw }],
        ['paywall_close', pw],
      ],
    );
  });
});
