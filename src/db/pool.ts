import pg from 'pg';

// int8 (counts, sums, bigserial ids) fit in a JS number for every value this service stores.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric: money and rates are read as numbers; precision beyond 2 decimals is not kept in answers.
pg.types.setTypeParser(1700, (v) => Number(v));

export type Db = pg.Pool;
export type Tx = pg.PoolClient;
/** A connection of the pool or one of its own (a worker thread's): what a transaction runs on. */
export type Conn = pg.ClientBase;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export function createPool(url: string, max = 20): Db {
  // Idle connections stay open: a new one costs a backend's start and its cold catalog caches, and the
  // dashboard's queries (one per metric group, at once) took about 200 ms longer after a quiet half minute.
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 0 });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Opens the pool's connections at once, before the first request needs them (kept open: createPool).
 * Best effort: a database that refuses some (its max_connections) leaves them to open on demand.
 */
export async function warmPool(db: Db, connections: number): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: connections }, () => db.connect()));
  for (const c of opened) if (c.status === 'fulfilled') c.value.release();
}

/** Runs `fn` in a transaction on `conn` (a pool's client, or a connection of its own). */
export async function inTx<T>(conn: Conn, fn: () => Promise<T>): Promise<T> {
  await conn.query('BEGIN');
  try {
    const result = await fn();
    await conn.query('COMMIT');
    return result;
  } catch (err) {
    await conn.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

export async function withTx<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    return await inTx(client, () => fn(client));
  } finally {
    client.release();
  }
}
