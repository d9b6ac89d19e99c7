import { SdkProvider } from '@mobile-sdk-backend/react';
import { createBrowserClient } from '@mobile-sdk-backend/sdk/browser';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { readConfig } from './config.js';
import { createFakeStore } from './fake-store.js';
import { sentEventLog } from './sent-events.js';
import './styles.css';

const root = createRoot(document.getElementById('root')!);
const config = readConfig();

if (!config) {
  root.render(
    <main className="card">
      <h1>Paywall demo</h1>
      <p>
        Open this page with <code>?api=http://localhost:3000&amp;key=&lt;SDK public key&gt;</code>, or build it with{' '}
        <code>VITE_API_URL</code> and <code>VITE_SDK_KEY</code> (see the README). <code>npm run demo</code> prints a
        ready URL.
      </p>
    </main>,
  );
} else {
  const log = sentEventLog();
  // Created once, outside render; the browser entry wires visibilitychange / pagehide to sessions.
  const client = createBrowserClient({
    apiKey: config.sdkKey,
    baseUrl: config.apiUrl,
    fetch: log.fetch,
    device: {
      platform: /android/i.test(navigator.userAgent) ? 'android' : 'ios',
      os: '17.4',
      appVersion: '3.2.0',
      locale: navigator.language.replace('-', '_'),
      country: 'US',
    },
    onError: (e) => console.warn('sdk:', e.code, e.message),
  });
  void client.start();
  Object.assign(window, { sdk: client }); // for poking at it from the devtools console
  root.render(
    <StrictMode>
      <SdkProvider client={client}>
        <App client={client} log={log} store={createFakeStore()} />
      </SdkProvider>
    </StrictMode>,
  );
}
