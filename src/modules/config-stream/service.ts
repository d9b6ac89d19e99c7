import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../../config.js';
import type { Notifications } from '../../db/notifications.js';
import type { KeyContext } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { createChangeListener } from './listener.js';
import { changeMessage, heartbeat, reconnectMessage, retryHint, snapshotMessage } from './sse.js';
import { createBatcher } from './batch.js';
import type { ChangeRow, ConfigChangeStore, Snapshot } from './store.js';

type Head = Awaited<ReturnType<ConfigChangeStore['head']>>;

export type StreamSettings = Omit<Config['configStream'], 'retentionHours'>;

/** Missed changes replayed on a resume; a client further behind gets a resync instead. */
export const BACKLOG_MAX = 500;
/** A client this far behind on reading (bytes queued in the socket) is dropped; it resumes by id. */
const MAX_QUEUED_BYTES = 256 * 1024;

interface Stream {
  tenantId: string;
  appId: string;
  keyId: string;
  environment: string;
  /** Highest seq this client has been sent (or has no interest in). */
  lastSeq: number;
  /** The connection, written directly once the response head is out (see `chunk`). */
  socket: Socket | null;
  /** Changes that arrived while the stream's first messages were being prepared. */
  pending: ChangeRow[] | null;
  /** What to send when it attaches (retry hint, snapshot or missed changes). */
  first: string;
}

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/**
 * One HTTP/1.1 chunk, built once per message and written to every stream's socket as is:
 * ServerResponse.write re-encodes and re-frames the same bytes for each of thousands of streams
 * (bench:stream, 10,000 streams: 33.5 µs of CPU per stream per heartbeat with it, 20 µs without).
 */
function chunk(text: string): Buffer {
  const body = Buffer.from(text);
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, CRLF]);
}

const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  // no-transform: compressing proxies would buffer the events.
  'cache-control': 'no-cache, no-transform',
  // nginx and similar proxies otherwise buffer the response.
  'x-accel-buffering': 'no',
};

export function createConfigStreamService({
  store,
  notifications,
  settings,
  onError,
}: {
  store: ConfigChangeStore;
  notifications: Pick<Notifications, 'subscribe'>;
  settings: StreamSettings;
  onError: (err: unknown, where: string) => void;
}) {
  const byApp = new Map<string, Set<Stream>>();
  const perKey = new Map<string, number>();
  let total = 0;
  let closing = false;
  let beat: NodeJS.Timeout | null = null;

  const jitteredMs = () => settings.retryMs + Math.floor(Math.random() * (settings.retryJitterMs + 1));
  const retryAfter = () => ({ 'retry-after': String(Math.max(1, Math.ceil(jitteredMs() / 1000))) });

  const listener = createChangeListener({ notifications, store, deliver, pollMs: settings.pollMs, onError });

  function write(s: Stream, bytes: Buffer): void {
    const socket = s.socket!;
    // Past the budget the client is not reading: drop it rather than buffer without bound.
    if (!socket.write(bytes) && socket.writableLength > MAX_QUEUED_BYTES) socket.destroy();
  }

  function push(s: Stream, r: ChangeRow, bytes: Buffer): void {
    if (r.seq <= s.lastSeq || r.tenant_id !== s.tenantId) return;
    if (s.pending) return void s.pending.push(r);
    s.lastSeq = r.seq;
    if (r.environment === null || r.environment === s.environment) write(s, bytes);
  }

  function deliver(rows: ChangeRow[]): void {
    for (const r of rows) {
      const streams = byApp.get(r.app_id);
      if (!streams) continue;
      const bytes = chunk(changeMessage(r));
      for (const s of streams) push(s, r, bytes);
    }
  }

  function release(s: Stream): void {
    const set = byApp.get(s.appId);
    if (!set?.delete(s)) return;
    if (set.size === 0) byApp.delete(s.appId);
    total--;
    const n = perKey.get(s.keyId)! - 1;
    if (n === 0) perKey.delete(s.keyId);
    else perKey.set(s.keyId, n);
  }

  function tick(): void {
    // Every live stream has been handed the changes up to the listener's seq; one that attached
    // since may already be past it (its own first read), and its id must not go back.
    const seq = listener.lastSeq;
    const bytes = chunk(heartbeat(seq));
    for (const set of byApp.values())
      for (const s of set) if (s.socket && !s.pending) write(s, s.lastSeq > seq ? chunk(heartbeat(s.lastSeq)) : bytes);
  }

  // Reads shared by concurrent opens (see batch.ts): the global head, an app's snapshot, an app's changes after an id.
  const heads = createBatcher<Head>();
  const snapshots = createBatcher<{ head: Head; snap: Snapshot }>();
  const backlogs = createBatcher<ChangeRow[]>();
  const readHead = () => heads('', () => store.head());
  const readSnapshot = (key: KeyContext) =>
    snapshots(`${key.tenantId}:${key.appId}`, async () => {
      // Head first: a change committed after it has a higher seq and reaches the stream as an event.
      const head = await store.head();
      return { head, snap: await store.snapshot(key) };
    });

  /** The stream's first messages: a snapshot, the changes after the client's id, or a resync. */
  async function prepare(s: Stream, key: KeyContext, lastEventId: number | undefined): Promise<string> {
    const hint = retryHint(jitteredMs());
    if (lastEventId !== undefined) {
      const head = await readHead();
      if (lastEventId >= head.prunedThrough && lastEventId <= head.lastSeq) {
        const rows = await backlogs(`${key.tenantId}:${key.appId}:${lastEventId}`, () =>
          store.since(key, lastEventId, BACKLOG_MAX + 1),
        );
        if (rows.length <= BACKLOG_MAX) {
          s.lastSeq = Math.max(head.lastSeq, rows.at(-1)?.seq ?? 0);
          const mine = rows.filter((r) => r.environment === null || r.environment === s.environment);
          return hint + mine.map(changeMessage).join('');
        }
      }
    }
    // Fresh connect, or an id this server cannot resume from (pruned, too far behind, or from
    // another database): the current versions. Changes after head.lastSeq follow as events.
    const { head, snap } = await readSnapshot(key);
    s.lastSeq = head.lastSeq;
    return hint + snapshotMessage(lastEventId === undefined ? 'snapshot' : 'resync', head.lastSeq, snap);
  }

  return {
    /**
     * Admits a stream (caps, shutdown) and prepares its first messages; nothing is written yet,
     * so a refusal or a database failure still answers problem+json.
     */
    async open(
      key: KeyContext,
      lastEventId: number | undefined,
    ): Promise<{ attach(res: ServerResponse, headers: Record<string, unknown>): void }> {
      if (closing)
        throw new AppError('service_unavailable', 'This instance is shutting down; reconnect', undefined, retryAfter());
      if (total >= settings.maxPerInstance) {
        throw new AppError(
          'service_unavailable',
          `This instance holds its maximum of ${settings.maxPerInstance} streams`,
          undefined,
          retryAfter(),
        );
      }
      if ((perKey.get(key.keyId) ?? 0) >= settings.maxPerKey) {
        throw new AppError(
          'rate_limited',
          `This key holds its maximum of ${settings.maxPerKey} streams on this instance`,
          undefined,
          retryAfter(),
        );
      }
      const s: Stream = {
        tenantId: key.tenantId,
        appId: key.appId,
        keyId: key.keyId,
        environment: key.environment,
        lastSeq: 0,
        socket: null,
        pending: [],
        first: '',
      };
      // Counted and registered before any read: changes committing meanwhile wait in `pending`.
      total++;
      perKey.set(s.keyId, (perKey.get(s.keyId) ?? 0) + 1);
      let set = byApp.get(s.appId);
      if (!set) byApp.set(s.appId, (set = new Set()));
      set.add(s);
      try {
        await listener.start();
        s.first = await prepare(s, key, lastEventId);
      } catch (err) {
        release(s);
        onError(err, 'config-stream open');
        throw new AppError(
          'service_unavailable',
          'The config stream is unavailable; retry later or poll',
          undefined,
          retryAfter(),
        );
      }
      return {
        attach(res, headers) {
          // The client may have gone (or shutdown begun) while the first messages were read.
          if (closing || res.destroyed || !res.socket || res.socket.destroyed) {
            release(s);
            return void res.destroy();
          }
          s.socket = res.socket;
          res.on('close', () => release(s));
          // A failed write ends this stream only (an unhandled 'error' would end the process).
          res.on('error', () => release(s));
          // The head goes out now (chunked: no length); every message after it is a chunk of our own.
          res.writeHead(200, { ...headers, ...EVENT_STREAM_HEADERS });
          res.flushHeaders();
          const pending = s.pending!;
          s.pending = null;
          write(s, chunk(s.first));
          s.first = '';
          for (const r of pending) push(s, r, chunk(changeMessage(r)));
          if (!beat) {
            beat = setInterval(tick, settings.heartbeatMs);
            beat.unref();
          }
        },
      };
    },

    /** Tells every client to reconnect (elsewhere, after a jittered delay) and ends its stream. */
    async close(): Promise<void> {
      closing = true;
      if (beat) clearInterval(beat);
      for (const set of [...byApp.values()]) {
        for (const s of [...set]) {
          release(s);
          const socket = s.socket;
          // The last chunk ends the response; then the socket goes (a kept-alive idle connection would hold the server's close).
          if (socket && !socket.destroyed)
            socket.end(Buffer.concat([chunk(reconnectMessage('shutdown', jitteredMs())), LAST_CHUNK]), () =>
              socket.destroy(),
            );
        }
      }
      listener.stop();
    },
  };
}

export type ConfigStreamService = ReturnType<typeof createConfigStreamService>;
