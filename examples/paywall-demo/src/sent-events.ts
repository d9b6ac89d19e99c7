import type { FetchLike } from '@mobile-sdk-backend/sdk';

/** One event the service acknowledged, as the SDK sent it. */
export interface SentEvent {
  event_id: string;
  event_name: string;
  ts_ms: number;
  properties: Record<string, unknown>;
}

interface IngestAnswer {
  errors?: { index: number }[];
}

/**
 * The events the SDK sent, seen on the wire: a `fetch` for the client that records each ingestion
 * batch once the service accepted it (202; the events it listed as rejected left out). A retried
 * batch is recorded once (by event_id).
 */
export function sentEventLog(base: typeof fetch = (u, i) => fetch(u, i)) {
  const events: SentEvent[] = [];
  const seen = new Set<string>();
  const listeners = new Set<() => void>();
  let snapshot: readonly SentEvent[] = [];
  const fetchLike: FetchLike = async (url, init) => {
    const res = await base(url, init);
    if (!(init.method === 'POST' && url.endsWith('/api/v1/ingest/events') && res.status === 202)) return res;
    const text = await res.text();
    const batch = (JSON.parse(init.body ?? '{}') as { batch: SentEvent[] }).batch;
    const rejected = new Set(((JSON.parse(text) as IngestAnswer).errors ?? []).map((e) => e.index));
    for (const [i, e] of batch.entries())
      if (!rejected.has(i) && !seen.has(e.event_id)) {
        seen.add(e.event_id);
        events.push(e);
      }
    snapshot = [...events];
    for (const l of listeners) l();
    // The body is read: the SDK gets an equal answer to read again.
    return new Response(text, { status: res.status, headers: res.headers });
  };
  return {
    fetch: fetchLike,
    subscribe(l: () => void) {
      listeners.add(l);
      return () => void listeners.delete(l);
    },
    snapshot: () => snapshot,
  };
}

export type SentEventLog = ReturnType<typeof sentEventLog>;
