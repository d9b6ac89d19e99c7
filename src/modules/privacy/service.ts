import { withTx, type Db } from '../../db/pool.js';
import { AppError, notFound } from '../../http/errors.js';
import type { JobQueue } from '../../jobs/queue.js';
import type { Scope } from '../../types/domain.js';
import type { ActivityStore } from '../activity/store.js';
import { kindOf, type Subject, subjectHash, valueOf } from './hash.js';
import type { DeletionRow, PrivacyStore, StepReceipt, SuppressionRow } from './store.js';

/** The stores a deletion clears, in the order it clears them (docs/privacy.md). */
export const ERASE_STEPS = [
  'events',
  'option_locks',
  'identity',
  'webhooks',
  'exports',
  'analytics',
  'experiments',
] as const;
export type EraseStep = (typeof ERASE_STEPS)[number];

export interface DeletionView {
  id: string;
  status: DeletionRow['status'];
  subjects: { kind: string; hash: string }[];
  suppress: boolean;
  requested_by: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  error: string | null;
  receipt: { stores: Record<string, StepReceipt>; verified: boolean } | null;
}

function view(r: DeletionRow): DeletionView {
  const stores: Record<string, StepReceipt> = {};
  for (const step of ERASE_STEPS) {
    const s = r.steps[step];
    if (s) stores[step] = { deleted: s.deleted, finished_at: s.finished_at, remaining: s.remaining };
  }
  const done = Object.keys(stores).length > 0;
  return {
    id: r.id,
    status: r.status,
    subjects: r.subject_hashes.map((h) => {
      const [kind, hash] = h.split(':');
      return { kind, hash };
    }),
    suppress: r.suppress,
    requested_by: r.requested_by,
    created_at: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
    error: r.error,
    receipt: done
      ? { stores, verified: r.status === 'done' && Object.values(stores).every((s) => s.remaining === 0) }
      : null,
  };
}

const suppressionView = (s: SuppressionRow) => ({
  hash: s.hash,
  kind: s.kind,
  deletion_id: s.deletion_id,
  created_by: s.created_by,
  created_at: s.created_at.toISOString(),
});

/** Deletion requests and suppressions (docs/privacy.md); the erasure itself runs as a job (jobs.ts). */
export function createPrivacyService({
  db,
  store,
  jobs,
  activity,
  settleS,
}: {
  db: Db;
  store: PrivacyStore;
  jobs: Pick<JobQueue, 'send'>;
  activity: ActivityStore;
  /** How long the job waits before it erases: every instance's suppression cache has reloaded by then. */
  settleS: number;
}) {
  return {
    async request(scope: Scope, userId: string, body: { subjects: Subject[]; suppress?: boolean }) {
      const suppress = body.suppress ?? true;
      const row = await withTx(db, async (tx) => {
        const key = await store.hashKey(scope, tx);
        const hashed = body.subjects.map((s) => ({ kind: kindOf(s), hash: subjectHash(key, kindOf(s), valueOf(s)) }));
        const clear = body.subjects.map((s) => ({ [kindOf(s)]: valueOf(s) }) as Subject);
        const r = await store.insertDeletion(
          scope,
          { subjects: clear, hashes: hashed.map((h) => `${h.kind}:${h.hash}`), suppress, requestedBy: userId },
          tx,
        );
        if (suppress) await store.suppress(scope, hashed, { deletionId: r.id, userId }, tx);
        // The request and its job commit together: a request is never left pending with nothing behind it.
        await jobs.send(
          'privacy.delete',
          { deletionId: r.id, tenantId: scope.tenantId, appId: scope.appId },
          {
            singletonKey: r.id,
            startAfter: settleS,
            db: { executeSql: (text: string, values: unknown[]) => tx.query(text, values) },
          },
        );
        await activity.record(
          scope,
          {
            entityType: 'privacy',
            entityId: r.id,
            action: 'deletion_requested',
            description: `Deletion of ${body.subjects.length} subject(s) requested${suppress ? ', their new data suppressed' : ''}`,
            actorUserId: userId,
          },
          tx,
        );
        return r;
      });
      return view(row);
    },

    async get(scope: Scope, id: string) {
      const r = await store.deletion(scope, id);
      if (!r) throw notFound('Deletion request');
      return view(r);
    },

    async list(scope: Scope, limit: number, offset: number) {
      const { rows, total } = await store.deletions(scope, limit, offset);
      return { data: rows.map(view), total };
    },

    async cancel(scope: Scope, userId: string, id: string) {
      const r = await store.cancel(scope, id);
      if (!r) {
        if (!(await store.deletion(scope, id))) throw notFound('Deletion request');
        throw new AppError('conflict', 'Only a pending deletion request can be cancelled');
      }
      await activity.record(scope, {
        entityType: 'privacy',
        entityId: id,
        action: 'deletion_cancelled',
        description: 'A pending deletion request was cancelled (its suppressions stay until lifted)',
        actorUserId: userId,
      });
      return view(r);
    },

    async suppressions(scope: Scope, limit: number, offset: number) {
      const { rows, total } = await store.suppressions(scope, limit, offset);
      return { data: rows.map(suppressionView), total };
    },

    async suppression(scope: Scope, hash: string) {
      const s = await store.suppression(scope, hash);
      if (!s) throw notFound('Suppression');
      return suppressionView(s);
    },

    async lift(scope: Scope, userId: string, hash: string) {
      if (!(await store.lift(scope, hash))) throw notFound('Suppression');
      await activity.record(scope, {
        entityType: 'privacy',
        entityId: hash,
        action: 'suppression_lifted',
        description: `Suppression ${hash.slice(0, 12)}… lifted: that subject's new data is accepted again`,
        actorUserId: userId,
      });
    },
  };
}

export type PrivacyService = ReturnType<typeof createPrivacyService>;
