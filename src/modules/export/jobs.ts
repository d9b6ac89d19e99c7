import type { Db } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { ActivityStore } from '../activity/store.js';
import type { SendCallback } from '../webhooks/callbacks.js';
import type { ExportReadModel } from './read-model.js';
import { foldSchema } from './schema-store.js';
import { downloadUrl } from './service.js';
import type { ExportStorage } from './storage.js';
import { expiredFiles, markFileDeleted, type ExportRow, type ExportStore } from './store.js';

/** Runs of one export before it is marked failed (interrupted runs count too). */
export const MAX_EXPORT_ATTEMPTS = 5;
/** Errors retrying cannot cure: fail the export at once with the reason. */
const PERMANENT_FS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR']);

function isPermanent(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  // Postgres data exceptions (class 22): the same rows fail the same way on every run.
  return PERMANENT_FS.has(code) || /^22[0-9A-Z]{3}$/.test(code);
}

function reasonOf(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const msg = err instanceof Error ? err.message : String(err);
  return `export could not be written${typeof code === 'string' ? ` (${code})` : ''}: ${msg}`.slice(0, 300);
}

export interface ExportJobDeps {
  db: Db;
  store: ExportStore;
  readModel: ExportReadModel;
  storage: ExportStorage;
  activity: ActivityStore;
  exportTtlHours: number;
  callbackSecret: (scope: Scope) => Promise<string>;
  sendCallback: SendCallback;
  schemaIntervalS: number;
  /** PUBLIC_URL: the callback's download_url is absolute when set (a receiver has no base to resolve it against). */
  publicUrl?: string;
  onError?: (err: unknown, what: string) => void;
}

export function createExportJobs(deps: ExportJobDeps) {
  const { db, store, readModel, storage, activity } = deps;
  const onError = deps.onError ?? (() => undefined);
  const running = new Set<AbortController>();
  let timer: NodeJS.Timeout | undefined;
  let folding: Promise<unknown> | undefined;
  let stopped = false;

  /** Queues the completion callback once (at least once: a crash before the mark queues it again). */
  async function notify(row: ExportRow): Promise<void> {
    if (!row.callback_url || row.callback_queued_at || row.status === 'processing') return;
    const scope = { tenantId: row.tenant_id, appId: row.app_id };
    const completed = row.status === 'completed';
    await deps.sendCallback(scope, {
      url: row.callback_url,
      secret: await deps.callbackSecret(scope),
      eventType: `export.${row.status}`,
      body: {
        export_id: row.id,
        status: row.status,
        download_url: completed ? (deps.publicUrl ?? '') + downloadUrl(row.id) : null,
        event_count: completed ? row.event_count : null,
        file_size_bytes: completed ? row.file_size_bytes : null,
      },
    });
    await store.markCallbackQueued(scope, row.id);
  }

  async function failExport(scope: Scope, row: ExportRow, reason: string): Promise<void> {
    const failed = await store.fail(scope, row.id, row.attempts, reason);
    if (!failed) return;
    await activity.record(scope, {
      entityType: 'export',
      entityId: row.id,
      action: 'failed',
      description: `Bulk export failed: ${reason}`,
    });
    await notify(failed);
  }

  async function runBulk({
    exportId,
    tenantId,
    appId,
  }: {
    exportId: string;
    tenantId: string;
    appId: string;
  }): Promise<void> {
    const scope: Scope = { tenantId, appId };
    const row = await store.claim(scope, exportId);
    if (!row) {
      // Already finished (a retry after a crash between finishing and queueing the callback).
      const done = await store.getById(scope, exportId);
      if (done) await notify(done);
      return;
    }
    if (row.attempts > MAX_EXPORT_ATTEMPTS)
      return failExport(scope, row, `gave up after ${MAX_EXPORT_ATTEMPTS} interrupted or failed runs`);

    const ac = new AbortController();
    running.add(ac);
    // One file per run: a run that lost its claim never overwrites the winner's file.
    const key = `${tenantId}/${appId}/${exportId}-${row.attempts}.json`;
    let count = 0;
    try {
      const filter = {
        environment: row.environment,
        start: row.start_date,
        end: row.end_date,
        eventNames: row.event_names,
      };
      const source = readModel.file(scope, filter, 'json', { signal: ac.signal, onRows: (n) => (count += n) });
      const { sizeBytes } = await storage.put(key, source, ac.signal);
      ac.signal.throwIfAborted();
      const done = await store.complete(scope, exportId, row.attempts, {
        storageKey: key,
        eventCount: count,
        sizeBytes,
        ttlHours: deps.exportTtlHours,
      });
      if (!done) {
        await storage.delete(key);
        return;
      }
      await activity.record(scope, {
        entityType: 'export',
        entityId: exportId,
        action: 'completed',
        description: `Bulk export completed: ${count} events, ${sizeBytes} bytes`,
      });
      await notify(done);
    } catch (err) {
      // Shutdown: the queue runs it again after the restart.
      if (ac.signal.aborted) throw new Error('export interrupted by shutdown; it will run again');
      if (isPermanent(err) || row.attempts >= MAX_EXPORT_ATTEMPTS) return failExport(scope, row, reasonOf(err));
      throw err;
    } finally {
      running.delete(ac);
    }
  }

  async function cleanupExpired(): Promise<void> {
    for (;;) {
      const rows = await expiredFiles(db, 200);
      for (const r of rows) {
        if (r.storage_key) await storage.delete(r.storage_key);
        await markFileDeleted(db, r);
      }
      if (rows.length < 200) break;
    }
  }

  /** Deletes files past their expiry, and debris of interrupted writes. */
  async function cleanup(): Promise<void> {
    await cleanupExpired();
    await storage.sweep(24 * 3600_000);
  }

  function scheduleFold(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      // Expired files are also swept here (cheap: a partial index), so deletion follows expiry within an interval.
      folding = foldSchema(db)
        .catch((err) => onError(err, 'export schema fold'))
        .then(() => cleanupExpired())
        .catch((err) => onError(err, 'export cleanup'))
        .finally(() => {
          folding = undefined;
          scheduleFold();
        });
    }, deps.schemaIntervalS * 1000);
    timer.unref();
  }

  return {
    handlers: {
      'export.bulk': runBulk,
      'export.cleanup': cleanup,
    },
    /** The schema fold runs every schemaIntervalS on worker processes (cheap when nothing is new). */
    startBackground(): void {
      stopped = false;
      scheduleFold();
    },
    /** Interrupts running exports (they run again after restart) and stops the schema fold. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      for (const ac of running) ac.abort();
      const until = Date.now() + 5000;
      while (running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      // Waited for to its end: the pool closes after this, and a fold left running failed on it.
      if (folding) await folding;
    },
  };
}

export type ExportJobs = ReturnType<typeof createExportJobs>;
