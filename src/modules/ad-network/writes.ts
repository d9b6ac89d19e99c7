import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Scope } from '../../types/domain.js';
import { AppError } from '../../http/errors.js';
import { NetworkError, toAppError } from './client.js';
import type { AccountRow, AdNetworkStore, WriteRow } from './store.js';

export interface WriteSpec {
  kind: 'campaign' | 'adsquad' | 'ad' | 'creative' | 'media';
  op: 'create' | 'update' | 'delete' | 'pause' | 'resume' | 'upload';
  /** The request as it is (or would be) sent; stored with the journal entry. */
  request: unknown;
  /** Sends the write; returns the network object. */
  send: (idempotencyKey: string) => Promise<any>;
  /** For creates: finds an object an earlier attempt created (the network ignores Idempotency-Key). */
  find?: (createdAfter: Date, claimed: Set<string>) => Promise<any | undefined>;
  /** Dry-run answer object (what the dashboard sees instead of the network's object). */
  dryRun?: (id: string) => Record<string, unknown>;
}

export interface WriteResult {
  dry_run: boolean;
  replayed: boolean;
  write_id: string;
  idempotency_key: string;
  object: any;
}

/** After this long an unfinished entry is presumed abandoned (crash) and is reconciled. */
const IN_FLIGHT_MS = 60_000;

const AMBIGUOUS = (err: unknown) => err instanceof NetworkError && (err.kind === 'transport' || err.kind === 'server');

/**
 * The write journal: every write is recorded under its Idempotency-Key before anything is sent.
 * Until a Super Admin enables live writes for the ad account, writes stop there (dry run).
 * A retry (same key, or after an ambiguous failure) first looks for the object an earlier attempt
 * created, so a dropped answer never produces a duplicate.
 */
export function createWriteJournal({ store, retryDelayMs = 300 }: { store: AdNetworkStore; retryDelayMs?: number }) {
  // Bodies may legitimately differ between retries (e.g. a budget converted at a newer rate), so the key binds the target and operation.
  const sameRequest = (row: WriteRow, acct: AccountRow, spec: WriteSpec) =>
    row.ad_account_id === acct.id && row.kind === spec.kind && row.op === spec.op;

  return {
    async run(
      scope: Scope,
      acct: AccountRow,
      spec: WriteSpec,
      given: string | undefined,
      actor: string | null,
    ): Promise<WriteResult> {
      const key = given ?? randomUUID();
      const { row, created } = await store.insertWrite(scope, {
        accountId: acct.id,
        key,
        kind: spec.kind,
        op: spec.op,
        request: spec.request,
        actor,
      });
      const answer = (status: 'dry_run' | 'succeeded', object: any, replayed: boolean): WriteResult => ({
        dry_run: status === 'dry_run',
        replayed,
        write_id: row.id,
        idempotency_key: key,
        object,
      });
      if (!created) {
        if (!sameRequest(row, acct, spec))
          throw new AppError('conflict', 'This Idempotency-Key was used for a different request');
        if (row.status === 'succeeded' || row.status === 'dry_run') return answer(row.status, row.result, true);
        // Still in flight in another request (not finished, recent): sending again could duplicate.
        if (row.status === 'pending' && !row.completed_at && Date.now() - row.created_at.getTime() < IN_FLIGHT_MS) {
          throw new AppError(
            'conflict',
            'A request with this Idempotency-Key is still in progress; retry shortly',
            undefined,
            { 'retry-after': '2' },
          );
        }
      }
      if (!acct.live_writes) {
        const id = `dryrun-${randomUUID()}`;
        const object = spec.dryRun ? spec.dryRun(id) : { id, ...(spec.request as object) };
        await store.finishWrite(scope, row.id, {
          status: 'dry_run',
          remoteId: spec.op === 'create' ? id : null,
          result: object,
        });
        return answer('dry_run', object, false);
      }
      // A pending or failed entry may have reached the network before its answer was lost.
      let mayExist = !created;
      for (let attempt = 0; ; attempt++) {
        try {
          if (mayExist && spec.find) {
            const found = await spec.find(
              new Date(row.created_at.getTime() - 5000),
              await store.claimedIds(scope, spec.kind, row.id),
            );
            if (found) {
              await store.finishWrite(scope, row.id, { status: 'succeeded', remoteId: found.id, result: found });
              return answer('succeeded', found, !created);
            }
          }
          const object = await spec.send(key);
          await store.finishWrite(scope, row.id, { status: 'succeeded', remoteId: object?.id ?? null, result: object });
          return answer('succeeded', object, false);
        } catch (err) {
          if (AMBIGUOUS(err) && attempt < 3) {
            mayExist = true;
            await sleep(retryDelayMs * 2 ** attempt);
            continue;
          }
          // Leave ambiguous failures pending (a later retry reconciles); definitive ones are failed.
          const status = AMBIGUOUS(err) ? 'pending' : 'failed';
          await store.finishWrite(scope, row.id, { status, error: (err as Error).message.slice(0, 500) });
          throw toAppError(err);
        }
      }
    },
  };
}

export type WriteJournal = ReturnType<typeof createWriteJournal>;
