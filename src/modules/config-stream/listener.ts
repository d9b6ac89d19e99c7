import pg from 'pg';
import { CHANNEL, type ChangeRow, type ConfigChangeStore } from './store.js';

/** Rows read per round trip when catching up. */
const BATCH = 1000;

export interface ListenerDeps {
  databaseUrl: string;
  store: ConfigChangeStore;
  /** Every change after the start, once, in seq order. */
  deliver: (rows: ChangeRow[]) => void;
  /** While the LISTEN connection is down (or a read failed), the table is polled this often. */
  pollMs: number;
  onError: (err: unknown, where: string) => void;
}

/**
 * One LISTEN connection per instance, whatever the number of streams. A notification is only a
 * wake-up: the listener reads every change after the last seq it delivered, so a lost or
 * coalesced notification, a dropped connection or a failed read never loses a change (the next
 * wake-up or poll reads from the same seq).
 */
export function createChangeListener({ databaseUrl, store, deliver, pollMs, onError }: ListenerDeps) {
  let lastSeq = 0;
  let client: pg.Client | null = null;
  let listening = false;
  let stale = false;
  let reading = false;
  let again = false;
  let stopped = false;
  let starting: Promise<void> | null = null;
  let poll: NodeJS.Timeout | null = null;
  let reconnect: NodeJS.Timeout | null = null;

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

  function lost(c: pg.Client, err?: unknown): void {
    if (c !== client) return;
    client = null;
    listening = false;
    if (err) onError(err, 'config-stream listener');
    c.end().catch(() => undefined);
    if (!stopped && !reconnect) {
      reconnect = setTimeout(() => ((reconnect = null), void connect()), pollMs);
      reconnect.unref();
    }
  }

  async function connect(): Promise<void> {
    if (stopped) return;
    const c = new pg.Client({ connectionString: databaseUrl, application_name: 'config-stream-listener' });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    c.on('notification', () => void catchUp());
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
      if (client !== c) return;
      listening = true;
      // Whatever committed while the connection was down.
      void catchUp();
    } catch (err) {
      lost(c, err);
    }
  }

  return {
    /** Resolves once the listener knows where it starts; memoized, retried after a failure. */
    start(): Promise<void> {
      starting ??= (async () => {
        lastSeq = (await store.head()).lastSeq;
        poll = setInterval(() => (!listening || stale) && void catchUp(), pollMs);
        poll.unref();
        await connect();
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
    async stop(): Promise<void> {
      stopped = true;
      if (poll) clearInterval(poll);
      if (reconnect) clearTimeout(reconnect);
      const c = client;
      client = null;
      listening = false;
      await c?.end().catch(() => undefined);
    },
  };
}

export type ChangeListener = ReturnType<typeof createChangeListener>;
