import { Readable } from 'node:stream';
import { withTx, type Db } from '../../db/pool.js';
import type { KeyContext, Scope } from '../../http/auth.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import type { JobQueue } from '../../jobs/queue.js';
import { assertPublicTarget } from '../../outbound/guard.js';
import type { ActivityStore } from '../activity/store.js';
import type { SendCallback } from '../webhooks/callbacks.js';
import type { EventFilter, ExportFormat, ExportReadModel } from './read-model.js';
import { readSchema } from './schema-store.js';
import type { ExportStorage } from './storage.js';
import type { ExportRow, ExportStore } from './store.js';

export const MAX_EVENT_NAMES = 50;
export const MAX_EVENT_NAME_LENGTH = 128;
/** Concurrent download streams: each holds a database connection for its whole duration. */
export const MAX_STREAMS_PER_APP = 2;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// A full timestamp: date, 'T' and time; seconds, fraction and offset optional (no offset = UTC).
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

function parseTimestamp(raw: string, field: string): Date {
  const m = TIMESTAMP.exec(raw);
  if (!m)
    throw invalid(
      `${field} must be a full ISO 8601 timestamp such as 2026-01-31T00:00:00Z (a date alone is not accepted)`,
      `/${field}`,
    );
  const d = new Date(m[7] ? raw : `${raw}Z`);
  // Date rolls 2026-02-30 over to March; a calendar date that does not exist is refused instead.
  if (
    Number.isNaN(d.getTime()) ||
    d.getUTCFullYear() < 1 ||
    Number(m[1]) < 1 ||
    Number(m[2]) > 12 ||
    Number(m[3]) > 31 ||
    Number(m[4]) > 23 ||
    Number(m[5]) > 59
  ) {
    throw invalid(`${field} is not a valid timestamp`, `/${field}`);
  }
  return d;
}

export function parseWindow(start: string, end: string, where: 'querystring' | 'body'): { start: Date; end: Date } {
  const s = parseTimestamp(start, `${where}/start_date`);
  const e = parseTimestamp(end, `${where}/end_date`);
  if (e.getTime() <= s.getTime())
    throw invalid(
      'end_date must be after start_date (the window is start inclusive, end exclusive)',
      `/${where}/end_date`,
    );
  return { start: s, end: e };
}

export function parseEventNames(raw: string | string[] | undefined, path: string): string[] {
  if (raw === undefined) return [];
  const names = (Array.isArray(raw) ? raw : raw.split(',')).map((n) => n.trim()).filter(Boolean);
  if (names.length > MAX_EVENT_NAMES) throw invalid(`At most ${MAX_EVENT_NAMES} event names`, path);
  if (names.some((n) => n.length > MAX_EVENT_NAME_LENGTH))
    throw invalid(`Event names are at most ${MAX_EVENT_NAME_LENGTH} characters`, path);
  return [...new Set(names)];
}

export const downloadUrl = (id: string) => `/api/v1/sdk/events/export/bulk/${id}/download`;

export function exportView(r: ExportRow, now = Date.now()) {
  const completed = r.status === 'completed';
  return {
    id: r.id,
    status: r.status,
    environment: r.environment,
    params: { start_date: r.start_date.toISOString(), end_date: r.end_date.toISOString(), event_names: r.event_names },
    callback_url: r.callback_url,
    download_url: completed ? downloadUrl(r.id) : null,
    event_count: completed ? r.event_count : null,
    file_size_bytes: completed ? r.file_size_bytes : null,
    created_at: r.created_at.toISOString(),
    completed_at: r.completed_at?.toISOString() ?? null,
    expires_at: r.expires_at?.toISOString() ?? null,
    expired: completed && r.expires_at !== null && r.expires_at.getTime() <= now,
    failure_reason: r.status === 'failed' ? r.failure_reason : null,
  };
}

export interface ExportServiceDeps {
  db: Db;
  store: ExportStore;
  readModel: ExportReadModel;
  storage: ExportStorage;
  activity: ActivityStore;
  jobs: Pick<JobQueue, 'send'>;
  allowPrivateTargets: boolean;
  /** The app's callback_signing_secret (app_settings). */
  callbackSecret: (scope: Scope) => Promise<string>;
  /** Durable, signed, retried delivery (the webhooks engine). */
  sendCallback: SendCallback;
}

export function createExportService(deps: ExportServiceDeps) {
  const { db, store, readModel, storage, activity, jobs } = deps;
  const streams = new Map<string, number>();

  const filterOf = (
    key: KeyContext,
    q: { start_date: string; end_date: string; event_names?: string; user_id?: string },
  ): EventFilter => ({
    environment: key.environment,
    ...parseWindow(q.start_date, q.end_date, 'querystring'),
    eventNames: parseEventNames(q.event_names, '/querystring/event_names'),
    userId: q.user_id === undefined || q.user_id === '' ? undefined : q.user_id,
  });

  async function mustGet(key: KeyContext, id: string): Promise<ExportRow> {
    const row = UUID.test(id) ? await store.get(key, key.environment, id) : null;
    if (!row) throw notFound('Export');
    return row;
  }

  return {
    async page(
      key: KeyContext,
      q: {
        start_date: string;
        end_date: string;
        event_names?: string;
        user_id?: string;
        limit: number;
        offset: number;
      },
    ) {
      const { data, total } = await readModel.page(key, filterOf(key, q), q.limit, q.offset);
      return { data, meta: { total, limit: q.limit, offset: q.offset, hasMore: q.offset + data.length < total } };
    },

    /** A file stream over the filtered range; holds one connection until it ends or the client leaves. */
    download(
      key: KeyContext,
      q: { start_date: string; end_date: string; event_names?: string; user_id?: string; format: ExportFormat },
    ) {
      const filter = filterOf(key, q);
      const open = streams.get(key.appId) ?? 0;
      if (open >= MAX_STREAMS_PER_APP) {
        throw new AppError(
          'rate_limited',
          `At most ${MAX_STREAMS_PER_APP} downloads of one app run at once; retry when one has finished`,
          undefined,
          { 'retry-after': '5' },
        );
      }
      streams.set(key.appId, open + 1);
      const stream = Readable.from(readModel.file(key, filter, q.format), { objectMode: false });
      stream.once('close', () => {
        const n = (streams.get(key.appId) ?? 1) - 1;
        if (n <= 0) streams.delete(key.appId);
        else streams.set(key.appId, n);
      });
      const stamp = filter.start.toISOString().replace(/[:.]/g, '-');
      return {
        stream,
        filename: `events-${stamp}.${q.format}`,
        contentType: q.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
      };
    },

    async createBulk(
      key: KeyContext,
      body: { start_date: string; end_date: string; event_names?: string[]; callback_url?: string },
    ) {
      const window = parseWindow(body.start_date, body.end_date, 'body');
      const eventNames = parseEventNames(body.event_names, '/body/event_names');
      const callbackUrl = body.callback_url
        ? (await assertPublicTarget(body.callback_url, 'callback_url', deps.allowPrivateTargets)).toString()
        : null;
      const scope: Scope = { tenantId: key.tenantId, appId: key.appId };
      // Record and job commit together: an export can never be left processing with no job behind it.
      const row = await withTx(db, async (tx) => {
        const r = await store.insert(
          scope,
          { environment: key.environment, ...window, eventNames, callbackUrl, keyId: key.keyId },
          tx,
        );
        await jobs.send(
          'export.bulk',
          { exportId: r.id, tenantId: r.tenant_id, appId: r.app_id },
          {
            singletonKey: r.id,
            db: { executeSql: (text: string, values: unknown[]) => tx.query(text, values) },
          },
        );
        await activity.record(
          scope,
          {
            entityType: 'export',
            entityId: r.id,
            action: 'created',
            description: `Bulk export of ${key.environment} events ${r.start_date.toISOString()} to ${r.end_date.toISOString()}${eventNames.length ? ` (${eventNames.length} event names)` : ''} started`,
          },
          tx,
        );
        return r;
      });
      return exportView(row);
    },

    async getBulk(key: KeyContext, id: string) {
      return exportView(await mustGet(key, id));
    },

    async openBulkFile(key: KeyContext, id: string) {
      const row = await mustGet(key, id);
      if (row.status !== 'completed') {
        throw new AppError(
          'export_not_ready',
          row.status === 'failed'
            ? `Export ${id} failed: ${row.failure_reason ?? 'unknown reason'}; start a new export`
            : `Export ${id} is still processing`,
        );
      }
      if (!row.expires_at || row.expires_at.getTime() <= Date.now() || row.file_deleted_at || !row.storage_key) {
        throw new AppError(
          'export_expired',
          `Export ${id} expired at ${row.expires_at?.toISOString()}; start a new export`,
        );
      }
      const file = await storage.open(row.storage_key);
      if (!file)
        throw new AppError('export_expired', `The file of export ${id} is no longer available; start a new export`);
      return { ...file, filename: `export-${id}.json` };
    },

    async schema(key: KeyContext) {
      return readSchema(db, key, key.environment);
    },
  };
}

export type ExportService = ReturnType<typeof createExportService>;
