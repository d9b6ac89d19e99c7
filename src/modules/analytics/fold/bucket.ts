import { copyIn } from '../../../db/copy.js';
import type { Conn } from '../../../db/pool.js';
import type { Bucket, RoundDicts } from './events.js';
import { Deltas, type DeltaTable } from './deltas.js';
import { foldDevices, type DevicePass } from './devices.js';
import { findSessions, foldSessions, groupSessions, probeKeys } from './sessions.js';
import {
  APPLY_HIST_DELTAS, CREATE_HIST_DELTAS, deltaCopy, DEVICE_INSERT, DEVICE_UPDATE_COPY, DEVICE_UPDATE_TEMP, DROP_HIST_DELTAS, FOLD_TEMPS,
  INSERT_PURCHASES, MERGE_STEPS, MOVE_DEVICES, MOVED_COPY, MOVED_TEMP, PURCHASES_COPY, PURCHASES_TEMP, SESSION_INSERT, SESSION_WIDEN_COPY,
  SESSION_WIDEN_TEMP, STEPS_COPY, STEPS_INSERT, STEPS_TEMP, UPDATE_DEVICES, WIDEN_SESSIONS,
} from './sql.js';
import { loadDeviceStates } from './state.js';
import { bumpAppVersions } from '../funnel-store.js';

/**
 * The fold of one bucket (a fold partition's events of a round, or an app's events in a rebuild)
 * into every rollup table, inside the caller's transaction (round.ts, worker.ts).
 */

/**
 * A session the batch thought new but another device reported first (SDK misuse) fails its insert
 * on the key: a unique violation, or a deadlock when two partitions' transactions wait for each
 * other's. The bucket is then folded again, looking every session up.
 */
const isConflict = (e: unknown) => ['23505', '40P01'].includes((e as { code?: string }).code ?? '');
const ATTEMPTS = 3;

/**
 * Folds `b` into the rollups; returns the number of events folded. Runs under a savepoint: a
 * conflicting session insert (see isConflict) rolls the bucket back and folds it again with
 * every session looked up, up to 3 times (after a deadlock the other transaction may still hold
 * its session rows; the next attempt waits for it).
 */
export async function foldBucket(tx: Conn, b: Bucket, dicts: RoundDicts, funnelNames: readonly string[], profile?: FoldProfile): Promise<number> {
  if (b.n === 0) return 0;
  for (let attempt = 1; ; attempt++) {
    await tx.query(`SAVEPOINT an_bucket`);
    try {
      await foldOnce(tx, b, dicts, funnelNames, attempt > 1, timer(profile));
      await tx.query(`RELEASE SAVEPOINT an_bucket`);
      return b.n;
    } catch (e) {
      await tx.query(`ROLLBACK TO SAVEPOINT an_bucket`).catch(() => undefined);
      if (!isConflict(e) || attempt >= ATTEMPTS) throw e;
    }
  }
}

/** Receives the time of each step of a fold (bench:analytics-fold-profile). */
export type FoldProfile = (step: string, ms: number) => void;
type Step = <T>(name: string, fn: () => Promise<T> | T) => Promise<T>;

function timer(profile?: FoldProfile): Step {
  return async (name, fn) => {
    if (!profile) return fn();
    const t = performance.now();
    try {
      return await fn();
    } finally {
      profile(name, performance.now() - t);
    }
  };
}

async function foldOnce(tx: Conn, b: Bucket, dicts: RoundDicts, funnelNames: readonly string[], lookUpAll: boolean, step: Step): Promise<void> {
  await tx.query(CREATE_HIST_DELTAS);
  const states = await step('load devices', () => loadDeviceStates(tx, b, dicts));
  const deltas = new Deltas(dicts);
  const trialName = dicts.names.code('$trial');
  const steps = new Set(funnelNames);
  const isStep = Uint8Array.from(dicts.names.list, (name) => (steps.has(name) ? 1 : 0));
  const pass = await step('devices (js)', () => foldDevices(b, states, dicts, deltas, isStep, trialName));
  await step('write devices', () => writeDevices(tx, pass));

  // Sessions are looked up after the moved devices' stored sessions took their new platform and country.
  const groups = await step('group sessions (js)', () => groupSessions(b));
  const stored = await step('look up sessions', () => findSessions(tx, b, dicts, probeKeys(b, groups, states, dicts, lookUpAll)));
  const sessions = await step('sessions (js)', () => foldSessions(b, groups, stored, pass, dicts, deltas));
  await step('insert sessions', () => copyIn(tx, SESSION_INSERT, sessions.inserts));
  if (sessions.widened.rows > 0) {
    await step('widen sessions', async () => {
      await tx.query(SESSION_WIDEN_TEMP);
      await copyIn(tx, SESSION_WIDEN_COPY, sessions.widened);
      await tx.query(WIDEN_SESSIONS);
    });
  }
  if (pass.purchases.rows > 0) {
    await step('purchases', async () => {
      await tx.query(PURCHASES_TEMP);
      await copyIn(tx, PURCHASES_COPY, pass.purchases);
      await tx.query(INSERT_PURCHASES);
    });
  }
  await step('insert steps', () => copyIn(tx, STEPS_INSERT, pass.steps));
  if (pass.storedSteps.rows > 0) {
    await step('merge steps', async () => {
      await tx.query(STEPS_TEMP);
      await copyIn(tx, STEPS_COPY, pass.storedSteps);
      await tx.query(MERGE_STEPS);
    });
  }
  await step('histograms', async () => {
    for (const [table, w] of Object.entries(deltas.writers())) await copyIn(tx, deltaCopy(table as DeltaTable), w);
    for (const sql of APPLY_HIST_DELTAS) await tx.query(sql);
  });
  // Stored funnel answers of these apps are no longer exact (funnel-answers.ts).
  const appEnvs = [...new Set(b.devices.tags.subarray(0, b.devices.size))].map((c) => dicts.appEnvs[c]);
  await bumpAppVersions(tx, appEnvs);
  await tx.query(`DROP TABLE IF EXISTS ${FOLD_TEMPS.join(', ')}`);
  await tx.query(DROP_HIST_DELTAS);
}

async function writeDevices(tx: Conn, pass: DevicePass): Promise<void> {
  if (pass.updates.rows > 0) {
    await tx.query(DEVICE_UPDATE_TEMP);
    await copyIn(tx, DEVICE_UPDATE_COPY, pass.updates);
    await without(tx, ['hashjoin', 'mergejoin'], UPDATE_DEVICES);
  }
  await copyIn(tx, DEVICE_INSERT, pass.inserts);
  if (pass.moved > 0) {
    await tx.query(MOVED_TEMP);
    await copyIn(tx, MOVED_COPY, pass.movedRows);
    for (const sql of MOVE_DEVICES) await tx.query(sql);
  }
}

/**
 * Runs `sql` with the given planner methods switched off for it alone. No restore on failure:
 * the savepoint's rollback restores them.
 */
export async function without(tx: Conn, methods: ('nestloop' | 'hashjoin' | 'mergejoin' | 'seqscan')[], sql: string) {
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = off`);
  const result = await tx.query(sql);
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = on`);
  return result;
}
