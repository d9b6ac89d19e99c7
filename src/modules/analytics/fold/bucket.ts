import { copyIn } from '../../../db/copy.js';
import { TRIAL_STEP_EVENT } from '../definitions.js';
import type { CopyWriter } from '../../../db/copy-writer.js';
import type { Conn } from '../../../db/pool.js';
import { uuidText, type Bucket, type RoundDicts } from './events.js';
import { Deltas, type DeltaTable } from './deltas.js';
import { foldDevices, type DevicePass } from './devices.js';
import { findSessions, foldSessions, groupSessions, probeKeys } from './sessions.js';
import {
  APPLY_HIST_DELTAS,
  CREATE_HIST_DELTAS,
  deltaCopy,
  DEVICE_INSERT,
  DEVICE_UPDATE_COPY,
  DEVICE_UPDATE_TEMP,
  DROP_HIST_DELTAS,
  FOLD_TEMPS,
  MOVE_STAGE,
  PURCHASE_STAGE,
  SESSION_INSERT,
  STEP_MERGE_STAGE,
  STEPS_INSERT,
  UPDATE_DEVICES,
  WIDEN_STAGE,
  without,
  type TempStage,
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
export async function foldBucket(
  tx: Conn,
  b: Bucket,
  dicts: RoundDicts,
  funnelNames: readonly string[],
  profile?: FoldProfile,
): Promise<number> {
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

async function foldOnce(
  tx: Conn,
  b: Bucket,
  dicts: RoundDicts,
  funnelNames: readonly string[],
  lookUpAll: boolean,
  step: Step,
): Promise<void> {
  await tx.query(CREATE_HIST_DELTAS);
  const states = await step('load devices', () => loadDeviceStates(tx, b, dicts));
  const deltas = new Deltas(dicts);
  const trialName = dicts.names.code(TRIAL_STEP_EVENT);
  const steps = new Set(funnelNames);
  const isStep = Uint8Array.from(dicts.names.list, (name) => (steps.has(name) ? 1 : 0));
  const pass = await step('devices (js)', () => foldDevices(b, states, dicts, deltas, isStep, trialName));
  await step('write devices', () => writeDevices(tx, pass));

  // Sessions are looked up after the moved devices' stored sessions took their new platform and country.
  const groups = await step('group sessions (js)', () => groupSessions(b));
  const stored = await step('look up sessions', () =>
    findSessions(tx, b, dicts, probeKeys(b, groups, states, dicts, lookUpAll)),
  );
  const sessions = await step('sessions (js)', () => foldSessions(b, groups, stored, pass, dicts, deltas));
  await step('insert sessions', () => copyIn(tx, SESSION_INSERT, sessions.inserts));
  await step('widen sessions', () => throughTemp(tx, WIDEN_STAGE, sessions.widened));
  await step('purchases', () => throughTemp(tx, PURCHASE_STAGE, pass.purchases));
  await step('insert steps', () => copyIn(tx, STEPS_INSERT, pass.steps));
  await step('merge steps', () => throughTemp(tx, STEP_MERGE_STAGE, pass.storedSteps));
  await step('histograms', async () => {
    for (const [table, w] of Object.entries(deltas.writers())) await copyIn(tx, deltaCopy(table as DeltaTable), w);
    for (const sql of APPLY_HIST_DELTAS) await tx.query(sql);
  });
  // Stored funnel answers of these apps are no longer exact (funnel-answers.ts).
  const appEnvs = [...new Set(b.devices.tags.subarray(0, b.devices.size))].map((c) => dicts.appEnvs[c]);
  await bumpAppVersions(
    tx,
    appEnvs.map((ae) => ({
      tenantId: uuidText(ae.tenantId, 0),
      appId: uuidText(ae.appId, 0),
      environment: ae.environment,
    })),
  );
  await tx.query(`DROP TABLE IF EXISTS ${FOLD_TEMPS.join(', ')}`);
  await tx.query(DROP_HIST_DELTAS);
}

async function writeDevices(tx: Conn, pass: DevicePass): Promise<void> {
  if (pass.updates.rows > 0) {
    await tx.query(DEVICE_UPDATE_TEMP);
    await copyIn(tx, DEVICE_UPDATE_COPY, pass.updates);
    await without(tx, ['hashjoin', 'mergejoin'], () => tx.query(UPDATE_DEVICES));
  }
  await copyIn(tx, DEVICE_INSERT, pass.inserts);
  await throughTemp(tx, MOVE_STAGE, pass.movedRows);
}

/** Sends `rows` through the stage's temp table and applies them (nothing for no rows). */
async function throughTemp(tx: Conn, stage: TempStage, rows: CopyWriter): Promise<void> {
  if (rows.rows === 0) return;
  await tx.query(stage.temp);
  await copyIn(tx, stage.copy, rows);
  for (const sql of stage.apply) await tx.query(sql);
}
