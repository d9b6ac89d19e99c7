import { useFlag, usePaywall } from '@mobile-sdk-backend/react';
import type { Client } from '@mobile-sdk-backend/sdk';
import { useEffect, useState } from 'react';
import type { FakeStore, Plan, StoreReceipt } from './fake-store.js';

interface Layout {
  headline?: string;
  subtitle?: string;
  highlight?: string;
}

/**
 * The paywall placement: `usePaywall` resolves it through the running experiment (the variant's
 * paywall; the exposure is tracked once), `shown()` tracks `paywall_view`, and the purchase helpers
 * report the fake store's purchase with the paywall's id and the experiment's variant.
 */
export function PaywallScreen(props: {
  client: Client;
  paywallId: string;
  store: FakeStore;
  onDone: (receipt?: StoreReceipt) => void;
}) {
  const { client, store, onDone } = props;
  const pw = usePaywall(props.paywallId);
  const closable = useFlag('show_close_button', true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const shownId = pw?.paywallId;

  // One paywall_view per display: keyed on the paywall shown, not on the handle (a new bundle or a
  // re-render makes a new one). paywall_close is tracked when the user leaves, not in a cleanup, so
  // React's development double effects do not close and reopen it.
  useEffect(() => {
    if (pw) void pw.shown().then(() => client.flush());
  }, [shownId]);

  if (pw === undefined) return <p aria-busy="true">Loading…</p>;
  if (pw === null) return <p role="alert">The paywall {props.paywallId} is not published.</p>;
  const layout = (pw.content.layout ?? {}) as Layout;
  const plans = (pw.content.plans ?? []) as Plan[];

  const buy = async (plan: Plan) => {
    setBusy(true);
    setError('');
    const p = { product_id: plan.product_id, price: plan.price, currency: plan.currency, period: plan.period };
    await pw.purchaseStarted(p);
    try {
      const receipt = await store.purchase(plan);
      await pw.purchaseCompleted({ ...p, is_trial: receipt.trial, transaction_id: receipt.transactionId });
      await pw.closed();
      onDone(receipt);
    } catch (e) {
      await pw.purchaseFailed({ ...p, reason: String(e) });
      setError(`Purchase failed: ${e instanceof Error ? e.message : e}`);
      setBusy(false);
    }
    void client.flush();
  };
  const close = async () => {
    await pw.closed();
    void client.flush();
    onDone();
  };

  return (
    <section className="card paywall" aria-labelledby="paywall-title">
      {closable && pw.content.dismiss !== false && (
        <button type="button" className="close" aria-label="Close" onClick={() => void close()}>
          ×
        </button>
      )}
      <h2 id="paywall-title">{layout.headline ?? pw.content.name}</h2>
      {layout.subtitle && <p>{layout.subtitle}</p>}
      <ul className="plans">
        {plans.map((plan) => (
          <li key={plan.product_id} className={plan.product_id.endsWith(layout.highlight ?? '-') ? 'best' : ''}>
            <button type="button" disabled={busy} onClick={() => void buy(plan)}>
              <strong>{plan.label ?? plan.product_id}</strong> {plan.currency} {plan.price.toFixed(2)} / {period(plan)}
              {plan.trial_days ? <small> {plan.trial_days}-day free trial</small> : null}
            </button>
          </li>
        ))}
      </ul>
      <label className="muted">
        <input type="checkbox" onChange={(e) => (store.decline = e.target.checked)} /> Fake store declines the card
      </label>
      {error && <p role="alert">{error}</p>}
      <p className="muted">
        Paywall <code>{pw.paywallId}</code>
        {pw.experiment && (
          <>
            {' '}
            chosen by experiment <code>{pw.experiment.key}</code>, variant <code>{pw.experiment.variant}</code>
          </>
        )}
      </p>
    </section>
  );
}

const period = (p: Plan) =>
  ({ P1W: 'week', P1M: 'month', P3M: '3 months', P6M: '6 months', P1Y: 'year' })[p.period] ?? p.period;
