import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client';
import { App } from './app';
import { takeEarlyCalls } from './first-load';
import { STALE_MS } from './scope';
import { SessionProvider } from './session';

/** The app itself: React, the query cache (with the calls the entry started) and the screens. */
const queries = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: STALE_MS,
      refetchOnWindowFocus: false,
      // A 4xx will answer the same again; retry only what may pass (5xx, network).
      retry: (n, err) => n < 1 && !(err instanceof ApiError && err.status < 500),
    },
  },
});

// A call started early lands in the cache under its key; a retry (a 5xx) asks again.
takeEarlyCalls((q, answer) => {
  let early: Promise<unknown> | undefined = answer;
  const queryFn = () => {
    const a = early ?? q.queryFn();
    early = undefined;
    return a;
  };
  void queries.prefetchQuery({ queryKey: q.queryKey, queryFn });
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <SessionProvider>
        <App />
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);
