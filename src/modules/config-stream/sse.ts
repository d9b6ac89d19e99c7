import type { ChangeRow, Snapshot } from './store.js';

/** SSE wire format (text/event-stream): one message per blank-line-terminated block. */
export const sseMessage = (event: string, data: unknown, id?: number): string =>
  `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** A comment keeps proxies from timing the connection out; the bare id advances the client's resume point without an event. */
export const heartbeat = (seq: number): string => `: heartbeat\nid: ${seq}\n\n`;

export const retryHint = (ms: number): string => `retry: ${ms}\n\n`;

export const snapshotMessage = (event: 'snapshot' | 'resync', seq: number, s: Snapshot): string =>
  sseMessage(event, s, seq);

/** A change is an invalidation: versions only, the client fetches with If-None-Match. */
export function changeMessage(r: ChangeRow): string {
  const data =
    r.kind === 'option_set_synced'
      ? { kind: r.kind, set_id: r.option_set_id, version: r.option_set_version }
      : { kind: r.kind, bundle_version: r.bundle_version };
  return sseMessage('change', data, r.seq);
}

/** Sent before the server closes the stream: reconnect (to any instance) after the jittered delay. */
export const reconnectMessage = (reason: 'shutdown' | 'error', retryMs: number): string =>
  `retry: ${retryMs}\n${sseMessage('reconnect', { reason, retry_ms: retryMs })}`;
