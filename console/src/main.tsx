import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client';
import { App } from './app';
import { PAGES } from './pages';
import { current } from './router';
import { SessionProvider, startSession } from './session';
import './styles.css';

const queries = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 30_000,
      refetchOnWindowFocus: false,
      // A 4xx will answer the same again; retry only what may pass (5xx, network).
      retry: (n, err) => n < 1 && !(err instanceof ApiError && err.status < 500),
    },
  },
});

// The first page's code, /me and, when the org and app are known from storage, the page's
// queries all start at once, before the first render.
const first = PAGES.find((p) => p.path === current());
void first?.load();
const scope = startSession(queries);
if (first?.prefetch && scope) first.prefetch(queries, scope);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <SessionProvider>
        <App />
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);
