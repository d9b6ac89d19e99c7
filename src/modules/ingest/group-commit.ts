import { AppError } from '../../http/errors.js';
import type { EventWrite } from './store.js';

export interface GroupCommitOptions {
  /** How long an idle writer waits for more requests before it writes a group (ms). */
  waitMs: number;
  /** Most events one group holds (one transaction, one commit). */
  maxEvents: number;
  /** Groups written at once, each on a connection of its own. */
  writers: number;
  /** Payload bytes that may wait for a writer; a request beyond it is answered 503 at once. */
  queueMaxBytes: number;
  /** How long a request may wait for a writer before it is answered 503. */
  queueMaxMs: number;
}

/** Seconds the SDK is told to wait before retrying a request the writer had no room for. */
export const BUSY_RETRY_AFTER_S = 1;

const busy = (why: string) =>
  new AppError('service_unavailable', `Ingestion is busy (${why}); retry later`, undefined, {
    'retry-after': String(BUSY_RETRY_AFTER_S),
  });

interface Pending {
  write: EventWrite;
  events: number;
  bytes: number;
  /** Cleared once a writer has taken it (no 503 after that) or it timed out (never written). */
  timer: NodeJS.Timeout | null;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: concurrent ingest requests, of any apps, are written by one transaction. An idle
 * writer waits `waitMs` for company; while writers are busy, requests queue and the next free
 * writer takes them all (up to `maxEvents`), so groups grow with the load. A request is answered
 * only after the commit that holds its events. When a group fails, it is split in halves and each
 * half written alone, down to the requests that fail on their own: the others still commit. Nothing
 * is stored twice: a failed transaction stored nothing, and even when a commit's outcome was lost
 * with its connection, the retried halves find their dedupe slots taken.
 */
export function createGroupCommit(insertGroup: (writes: EventWrite[]) => Promise<unknown>, opts: GroupCommitOptions) {
  let queue: Pending[] = [];
  let queuedBytes = 0;
  let queuedEvents = 0;
  let idle = opts.writers;
  let linger: NodeJS.Timeout | null = null;
  const running = new Set<Promise<void>>();

  function take(): Pending[] {
    const group: Pending[] = [];
    let events = 0;
    let i = 0;
    for (; i < queue.length && (group.length === 0 || events + queue[i].events <= opts.maxEvents); i++) {
      const p = queue[i];
      clearTimeout(p.timer!);
      p.timer = null;
      group.push(p);
      events += p.events;
      queuedBytes -= p.bytes;
    }
    queue = queue.slice(i);
    queuedEvents -= events;
    return group;
  }

  /** Writes the group; on failure each half alone, so one bad request fails only itself. */
  async function commit(group: Pending[]): Promise<void> {
    try {
      await insertGroup(group.map((p) => p.write));
      for (const p of group) p.resolve();
    } catch (err) {
      if (group.length === 1) return group[0].reject(err);
      const half = group.length >> 1;
      await commit(group.slice(0, half));
      await commit(group.slice(half));
    }
  }

  function start(group: Pending[]) {
    idle--;
    const run = commit(group).finally(() => {
      running.delete(run);
      idle++;
      // These requests have waited for a writer already: no lingering for them.
      if (queue.length > 0) start(take());
    });
    running.add(run);
  }

  function flush() {
    linger = null;
    while (idle > 0 && queue.length > 0) start(take());
  }

  return {
    /** Resolves once the write is committed; 503 (service_unavailable, Retry-After) when the writers are too far behind. */
    write(write: EventWrite): Promise<void> {
      let bytes = 0;
      for (const r of write.rows) bytes += r.payloadJson.length;
      // One request alone always gets in, however big: it could never be written otherwise.
      if (queue.length > 0 && queuedBytes + bytes > opts.queueMaxBytes) return Promise.reject(busy('queue full'));
      return new Promise<void>((resolve, reject) => {
        const p: Pending = { write, events: write.rows.length, bytes, timer: null, resolve, reject };
        p.timer = setTimeout(() => {
          // Still queued (a writer clears the timer when it takes the request): leave without being written.
          queue = queue.filter((q) => q !== p);
          queuedBytes -= p.bytes;
          queuedEvents -= p.events;
          reject(busy('writer behind'));
        }, opts.queueMaxMs);
        queue.push(p);
        queuedBytes += bytes;
        queuedEvents += p.events;
        if (idle === 0) return; // the next writer to finish takes the queue
        if (queuedEvents >= opts.maxEvents) flush();
        else linger ??= setTimeout(flush, opts.waitMs);
      });
    },

    /** Writes what is queued and waits for every group in flight (after the HTTP server stopped taking requests). */
    async close(): Promise<void> {
      if (linger) clearTimeout(linger);
      flush();
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}

export type GroupCommit = ReturnType<typeof createGroupCommit>;
