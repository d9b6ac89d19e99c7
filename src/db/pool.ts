import pg from 'pg';

// int8 (counts, sums, bigserial ids) fit in a JS number for every value this service stores.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric: money and rates are read as numbers; precision beyond 2 decimals is not kept in answers.
pg.types.setTypeParser(1700, (v) => Number(v));

export type Db = pg.Pool;
export type Tx = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/**
 * `tempBuffersMb`: each session's temp_buffers, set at connection start (it cannot change once a
 * session has used a temp table). Local buffers are allocated only as temp tables fill them, so
 * sessions without big temp tables (all but the analytics fold's) use none of it.
 */
export function createPool(url: string, max = 20, { tempBuffersMb }: { tempBuffersMb?: number } = {}): Db {
  const options = tempBuffersMb ? `-c temp_buffers=${Math.trunc(tempBuffersMb)}MB` : undefined;
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000, options });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

export async function withTx<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
