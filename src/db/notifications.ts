import pg from 'pg';

/** What a channel's subscriber is told. */
export interface Subscriber {
  /** A NOTIFY on the channel, with its payload. */
  notify(payload: string): void;
  /** LISTEN is up on a fresh connection: anything sent before it may have been missed. */
  up(): void;
  /** The connection is lost: notifications are missed until the next `up`. */
  down(): void;
}

/** How long a lost LISTEN connection waits before it is opened again. */
export const RECONNECT_MS = 1000;
/** The connection's name in pg_stat_activity. */
export const LISTENER_NAME = 'notifications-listener';

/**
 * One LISTEN connection per instance for every channel (bundle versions, config changes): opened
 * with the first subscription, so an instance that never serves the SDK holds none, and outside
 * the request pool, where it would hold one of its connections for good. When it is lost, each
 * subscriber is told and the connection is opened again every RECONNECT_MS.
 */
export function createNotifications({
  databaseUrl,
  onError,
}: {
  databaseUrl: string;
  onError: (err: unknown, where: string) => void;
}) {
  const channels = new Map<string, Set<Subscriber>>();
  /** Channels listened to on the current connection. */
  const live = new Set<string>();
  let client: pg.Client | null = null;
  let connected = false;
  let retry: NodeJS.Timeout | null = null;
  let stopped = false;
  // LISTEN statements run one at a time, so a channel subscribed during a (re)connection is not missed.
  let listening: Promise<void> = Promise.resolve();

  function lost(c: pg.Client, err?: unknown): void {
    if (c !== client) return;
    client = null;
    connected = false;
    if (err) onError(err, 'notifications listener');
    c.end().catch(() => undefined);
    for (const ch of live) for (const s of channels.get(ch) ?? []) s.down();
    live.clear();
    if (!stopped && !retry) {
      retry = setTimeout(() => ((retry = null), void connect()), RECONNECT_MS);
      retry.unref();
    }
  }

  /** LISTENs to the channels not yet live on `c`, telling their subscribers once each is. */
  function listenAll(c: pg.Client): Promise<void> {
    listening = listening.then(async () => {
      for (const ch of channels.keys()) {
        if (client !== c || live.has(ch)) continue;
        try {
          // Channel names are the modules' constants, never input.
          await c.query(`LISTEN ${ch}`);
        } catch (err) {
          return lost(c, err);
        }
        if (client !== c) return;
        live.add(ch);
        for (const s of channels.get(ch)!) s.up();
      }
    });
    return listening;
  }

  async function connect(): Promise<void> {
    if (stopped || client) return;
    const c = new pg.Client({ connectionString: databaseUrl, application_name: LISTENER_NAME });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    c.on('notification', (m) => {
      for (const s of channels.get(m.channel) ?? []) s.notify(m.payload ?? '');
    });
    try {
      await c.connect();
    } catch (err) {
      return lost(c, err);
    }
    if (client !== c) return;
    connected = true;
    await listenAll(c);
  }

  return {
    /** Starts listening to `channel` for `sub` (`up` once it is live); returns the unsubscribe. */
    subscribe(channel: string, sub: Subscriber): () => void {
      let set = channels.get(channel);
      if (!set) channels.set(channel, (set = new Set()));
      set.add(sub);
      if (live.has(channel)) sub.up();
      else if (client && connected) void listenAll(client);
      else void connect();
      return () => void set.delete(sub);
    },
    async stop(): Promise<void> {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      connected = false;
      live.clear();
      await c?.end().catch(() => undefined);
    },
  };
}

export type Notifications = ReturnType<typeof createNotifications>;
