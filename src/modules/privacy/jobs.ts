import { type Db, type Tx, withTx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { type EraseStore, type OptionLockKey, type Reach } from './erase-store.js';
import type { Subject } from './hash.js';
import { ERASE_STEPS, type EraseStep } from './service.js';
import type { DeletionRow, PrivacyStore, StepReceipt } from './store.js';

/** What the events step keeps for the steps after it (not shown in the receipt). */
interface EventsStep extends StepReceipt {
  span: { from: string; to: string } | null;
  /** The seq of the last event deleted: the analytics erasure waits for the fold to pass it. */
  last_seq?: number;
  locks: OptionLockKey[];
}

/** A running deletion untouched this long has lost its job (the heartbeat is at every store and every fold it waits for). */
const STALE_S = 120;

/**
 * The erasure of one deletion request (docs/privacy.md), durable: each store is cleared in one
 * transaction that also records its receipt, so after a crash (pg-boss retries the job) the stores
 * already done are skipped and none is left half done; every statement is idempotent anyway.
 */
export function createDeletionJob({
  db,
  store,
  erase,
  foldNow,
  purgeExportFiles,
  analyticsTimeoutMs,
  isStopping = () => false,
}: {
  db: Db;
  store: PrivacyStore;
  erase: EraseStore;
  /** Runs the analytics fold now (up to every event committed before the call). */
  foldNow(): Promise<unknown>;
  /** Deletes the files of expired exports now. */
  purgeExportFiles(): Promise<unknown>;
  analyticsTimeoutMs: number;
  /** True once the service stops: a wait for the rebuild ends (the deletion resumes at the next start). */
  isStopping?(): boolean;
}) {
  const now = () => new Date().toISOString();

  async function reachOf(scope: Scope, d: DeletionRow): Promise<Reach> {
    if (d.anon_ids && d.user_ids) return { anonIds: d.anon_ids, userIds: d.user_ids };
    const anon = d.subjects.flatMap((s: Subject) => ('anon_id' in s ? [s.anon_id] : []));
    const users = d.subjects.flatMap((s: Subject) => ('user_id' in s ? [s.user_id] : []));
    const reach = await erase.expand(scope, anon, users);
    await withTx(db, (tx) => store.setExpansion(scope, d.id, reach.anonIds, reach.userIds, tx));
    return reach;
  }

  /**
   * One store's erasure and its receipt in one transaction, after locking the request's row and
   * checking the store is not done: two runs of one request (a resume beside a live job) never both
   * clear a store, and a crash leaves it wholly done or untouched.
   */
  const once = (scope: Scope, id: string, name: EraseStep, fn: (tx: Tx) => Promise<void>) =>
    withTx(db, async (tx) => {
      const cur = await store.deletion(scope, id, tx);
      if (cur && cur.status === 'running' && !cur.steps[name]) await fn(tx);
    });

  async function step(scope: Scope, d: DeletionRow, name: EraseStep, reach: Reach): Promise<void> {
    const id = d.id;
    await store.touch(scope, id);
    const record = (r: StepReceipt | EventsStep, tx: Parameters<PrivacyStore['recordStep']>[4]) =>
      store.recordStep(scope, id, name, r, tx);
    const events = d.steps.events as EventsStep | undefined;
    switch (name) {
      case 'events':
        return once(scope, id, name, async (tx) => {
          const r = await erase.deleteEvents(scope, reach, tx);
          const span = r.from && r.to ? { from: r.from, to: r.to } : null;
          const receipt = { deleted: r.deleted, finished_at: now(), remaining: -1, span, last_seq: r.lastSeq };
          await record({ ...receipt, locks: r.locks }, tx);
        });
      case 'option_locks':
        return once(scope, id, name, async (tx) => {
          const n = await erase.releaseLocks(scope, events?.locks ?? [], tx);
          await record({ deleted: n, finished_at: now(), remaining: -1 }, tx);
        });
      case 'identity':
        return once(scope, id, name, async (tx) => {
          await record(
            { deleted: await erase.deleteIdentity(scope, reach, tx), finished_at: now(), remaining: -1 },
            tx,
          );
        });
      case 'webhooks':
        return once(scope, id, name, async (tx) => {
          const n = await erase.deleteWebhookCopies(scope, reach, tx);
          await record({ deleted: n, finished_at: now(), remaining: -1 }, tx);
        });
      case 'exports': {
        const span = events?.span;
        await once(scope, id, name, async (tx) => {
          const n = span ? await erase.expireExports(scope, span, d.created_at.toISOString(), tx) : 0;
          await record({ deleted: n, finished_at: now(), remaining: -1 }, tx);
        });
        // The files go now rather than at the next cleanup round.
        await purgeExportFiles();
        return;
      }
      case 'analytics': {
        // A fold round that read the deleted events before they went must commit before the erasure.
        const deadline = Date.now() + analyticsTimeoutMs;
        for (;;) {
          let behind = false;
          await once(scope, id, name, async (tx) => {
            const r = await erase.analytics(scope, reach, events?.last_seq ?? 0, tx);
            if (!r) behind = true;
            else {
              const deleted = r.devices + r.sessions + r.purchases + r.steps;
              await record({ deleted, finished_at: now(), remaining: -1 }, tx);
            }
          });
          if (!behind) return;
          if (Date.now() > deadline) throw new Error('the analytics fold did not catch up in time; the job retries');
          if (isStopping()) throw new Error('the service is stopping; the deletion resumes at the next start');
          await foldNow();
          await store.touch(scope, id);
        }
      }
      case 'experiments':
        return once(scope, id, name, async (tx) => {
          const deleted = await erase.experiments(scope, reach, tx);
          await record({ deleted, finished_at: now(), remaining: -1 }, tx);
        });
    }
  }

  /** A search for the subjects in every store; the receipt's `remaining`, 0 when none is found. */
  async function verify(scope: Scope, d: DeletionRow, reach: Reach): Promise<Record<EraseStep, number>> {
    const span = (d.steps.events as EventsStep | undefined)?.span;
    return {
      events: await erase.countEvents(scope, reach),
      option_locks: await erase.countOrphanLocks(scope, (d.steps.events as EventsStep | undefined)?.locks ?? []),
      identity: await erase.countIdentity(scope, reach),
      webhooks: await erase.countWebhookCopies(scope, reach),
      exports: span ? await erase.countExports(scope, span, d.created_at.toISOString()) : 0,
      analytics: await erase.countAnalytics(scope, reach),
      experiments: await erase.countExperiments(scope, reach),
    };
  }

  async function run(p: { deletionId: string; tenantId: string; appId: string }): Promise<void> {
    const scope = { tenantId: p.tenantId, appId: p.appId };
    let d = await store.start(scope, p.deletionId);
    if (!d) return; // cancelled, or over
    const reach = await reachOf(scope, d);
    for (const name of ERASE_STEPS) {
      if (d.steps[name]) continue;
      await step(scope, d, name, reach);
      d = (await store.deletion(scope, d.id))!;
    }
    const found = await verify(scope, d, reach);
    for (const name of ERASE_STEPS)
      await store.recordStep(scope, d.id, name, { ...d.steps[name], remaining: found[name] }, db);
    const left = Object.entries(found).filter(([, n]) => n > 0);
    await store.finish(
      scope,
      d.id,
      left.length ? 'failed' : 'done',
      left.length ? `still found after erasure: ${left.map(([s, n]) => `${s} ${n}`).join(', ')}` : null,
    );
  }

  return {
    run,
    /** Runs the stalled deletions here (all running ones with `all`, at worker start after a crash). */
    async resume({ all }: { all?: boolean }): Promise<void> {
      for (const d of await store.stalled(all ? 0 : STALE_S))
        await run({ deletionId: d.id, tenantId: d.tenant_id, appId: d.app_id });
    },
  };
}
