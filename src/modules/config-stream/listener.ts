import type { Notifications } from '../../db/notifications.js';
import { CHANNEL, type ChangeRow, type ConfigChangeStore } from './store.js';

/** Rows read per round trip when catching up. */
const BATCH = 1000;

export interface ListenerDeps {
  /** The instance's LISTEN connection (db/notifications.ts). */
  notifications: Pick<Notifications, 'subscribe'>;
  store: ConfigChangeStore;
  /** Every change after the start, once, in seq order. */
  deliver: (rows: ChangeRow[]) => void;
  /** While the LISTEN connection is down (or a read failed), the table is polled this often. */
  pollMs: number;
  onError: (err: unknown, where: string) => void;
}

/**
 * One subscription per instance, whatever the number of streams. A notification is only a
 * wake-up: the listener reads every change after the last seq it delivered, so a lost or
 * coalesced notification, a dropped connection or a failed read never loses a change (the next
 * wake-up or poll reads from the same seq).
 */
export function createChangeListener({ notifications, store, deliver, pollMs, onError }: ListenerDeps) {
  let lastSeq = 0;
  let listening = false;
  let stale = false;
  let reading = false;
  let again = false;
  let stopped = false;
  let starting: Promise<void> | null = null;
  let poll: NodeJS.Timeout | null = null;
  let unsubscribe: (() => void) | null = null;

  async function catchUp(): Promise<void> {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for (;;) {
          const rows = await store.after(lastSeq, BATCH);
          if (rows.length === 0 || stopped) break;
          lastSeq = rows[rows.length - 1]!.seq;
          deliver(rows);
          if (rows.length < BATCH) break;
        }
      } while (again && !stopped);
      stale = false;
    } catch (err) {
      stale = true;
      onError(err, 'config-stream catch-up');
    } finally {
      reading = false;
    }
  }

  return {
    /** Resolves once the listener knows where it starts; memoized, retried after a failure. */
    start(): Promise<void> {
      starting ??= (async () => {
        lastSeq = (await store.head()).lastSeq;
        poll = setInterval(() => (!listening || stale) && void catchUp(), pollMs);
        poll.unref();
        unsubscribe = notifications.subscribe(CHANNEL, {
          notify: () => void catchUp(),
          up: () => {
            listening = true;
            // Whatever committed while the connection was down (or before it was up).
            void catchUp();
          },
          down: () => {
            listening = false;
          },
        });
      })().catch((err: unknown) => {
        starting = null;
        throw err;
      });
      return starting;
    },
    /** The highest seq delivered: every live stream has seen its changes up to here. */
    get lastSeq() {
      return lastSeq;
    },
    stop(): void {
      stopped = true;
      if (poll) clearInterval(poll);
      unsubscribe?.();
      listening = false;
    },
  };
}

export type ChangeListener = ReturnType<typeof createChangeListener>;
