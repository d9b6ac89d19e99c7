import { useRemoteConfig } from '@mobile-sdk-backend/react';
import type { Client } from '@mobile-sdk-backend/sdk';
import { type ReactNode, useState } from 'react';
import { EventList } from './event-list.js';
import type { FakeStore, StoreReceipt } from './fake-store.js';
import { Onboarding } from './onboarding.js';
import { PaywallScreen } from './paywall.js';
import type { SentEventLog } from './sent-events.js';

type Screen = { name: 'onboarding' } | { name: 'paywall' } | { name: 'done'; receipt?: StoreReceipt };

/** Onboarding, then the paywall, then a thank-you; beside them, the events the SDK sent. */
export function App({ client, log, store }: { client: Client; log: SentEventLog; store: FakeStore }) {
  // Which flow and paywall placement to show is remote config (`npm run demo` writes it).
  const flowId = useRemoteConfig<string>('onboarding_flow_id');
  const paywallId = useRemoteConfig<string>('paywall_id');
  const [screen, setScreen] = useState<Screen>({ name: 'onboarding' });

  const startOver = async () => {
    await client.shutdown(); // session_end, app_close, the last flush
    localStorage.clear(); // a new install: new anon id, first_open again
    location.reload();
  };

  let body: ReactNode;
  if (flowId === undefined || paywallId === undefined) body = <p aria-busy="true">Loading the app's config…</p>;
  else if (screen.name === 'onboarding')
    body = <Onboarding client={client} flowId={flowId} onDone={() => setScreen({ name: 'paywall' })} />;
  else if (screen.name === 'paywall')
    body = (
      <PaywallScreen
        client={client}
        paywallId={paywallId}
        store={store}
        onDone={(receipt) => setScreen({ name: 'done', receipt })}
      />
    );
  else
    body = (
      <section className="card" id="done">
        <h2>{screen.receipt ? 'Welcome to Pro!' : 'Maybe later'}</h2>
        {screen.receipt && (
          <p>
            Purchased <code>{screen.receipt.productId}</code>
            {screen.receipt.trial ? ' (free trial)' : ''}, transaction <code>{screen.receipt.transactionId}</code>.
          </p>
        )}
        <button type="button" onClick={() => void startOver()}>
          Start over as a new install
        </button>
      </section>
    );

  return (
    <div className="layout">
      <main>
        <h1>Lingo</h1>
        {body}
      </main>
      <EventList log={log} />
    </div>
  );
}
