import { CopyWriter } from '../../../db/copy-writer.js';
import { type Cohort, firstEvent, histograms, newFirstEvent } from './device-cells.js';
import { batchEvents, linkEvents, mergeDays, newBatchEvents, newMergedDays, storedTo } from './device-days.js';
import { codeField, type DeviceRows, deviceRow, funnelSteps, type StepNames } from './device-rows.js';
import type { Deltas } from './deltas.js';
import type { Bucket, RoundDicts } from './events.js';
import { orderByPrefix } from './order.js';
import { parsePurchase, writePurchase } from './purchases.js';
import type { DeviceStates } from './state.js';
import { StepRows } from './steps.js';

/**
 * The device pass of a partition's fold: each device's events of the batch merged into its
 * stored state (first event, active days with their flags, last event and session), with the
 * histogram changes that follow (active users, users with a flag, new-user cohorts), its funnel
 * step times (steps.ts) and its purchases. Pure computation over the batch's columns; bucket.ts
 * writes the returned rows.
 *
 * Per device, in order (each step a function filling a scratch object reused for every device):
 * 1. its events of the batch (device-days.ts batchEvents); 2. its days merged with the stored ones
 * (mergeDays); 3. first event, platform and country (device-cells.ts firstEvent); 4. histogram
 * changes (histograms); 5. its row (device-rows.ts deviceRow); 6. its funnel steps (funnelSteps).
 *
 * Histograms: a device-day counts in the active-user histogram under its gap to the device's
 * previous active day (FIRST_GAP on its first). Adding a day d changes the gaps of d and of the
 * next day only; the pass takes out the device's stored contributions from its first new day on
 * and adds back the merged ones from there (in ingestion order there are none to take out). The
 * same per flag bit, from the first day that gained the bit. A device whose first event moved to
 * another platform or country leaves every cell with its stored days and enters with the merged.
 */

export interface DevicePass {
  /** Per device: platform and country after the batch (codes, -1: NULL), and their histogram segment. */
  plat: Int32Array;
  ctry: Int32Array;
  seg: Int32Array;
  /** an_dev_upd rows (stored devices, by row address) and an_devices rows (new devices), in key order. */
  updates: { rows: number; payload: Buffer };
  inserts: { rows: number; payload: Buffer };
  /** an_mv rows: devices whose first event moved them to another platform or country, with the new ones. */
  movedRows: CopyWriter;
  /** an_steps rows of device-days not stored before (plain inserts), an_stp rows of stored ones (merged). */
  steps: CopyWriter;
  storedSteps: CopyWriter;
  /** an_pu rows: the batch's purchases with their device's platform and country. */
  purchases: CopyWriter;
}

/** The device pass: the loop over the bucket's devices, each through steps 1 to 6, then its purchases. */
export function foldDevices(
  b: Bucket,
  st: DeviceStates,
  dicts: RoundDicts,
  deltas: Deltas,
  isStep: Uint8Array,
  trialName: number,
): DevicePass {
  const D = b.devices.size;
  const strings = dicts.strings.fields;
  const plat = new Int32Array(D);
  const ctry = new Int32Array(D);
  const seg = new Int32Array(D);
  const rows: DeviceRows = {
    updates: new CopyWriter(D * 160, { reorder: true }),
    updated: new Int32Array(D),
    inserts: new CopyWriter(D * 160, { reorder: true }),
    inserted: new Int32Array(D),
    moved: new CopyWriter(),
  };
  const steps = new StepRows(b, dicts);
  const names: StepNames = { isStep, trial: trialName };
  // Each step's output, reused for every device.
  const events = linkEvents(b.dev, b.n, D);
  const ev = newBatchEvents();
  const merged = newMergedDays();
  const first = newFirstEvent();
  const cohort: Cohort = { mask: 0, onb: 0 };

  for (let d = 0; d < D; d++) {
    const appEnv = b.devices.tags[d];
    const ae = dicts.appEnvs[appEnv];
    batchEvents(b, events, d, ev); // 1.
    mergeDays(st.days, st.daysOff[d], storedTo(st, d), ev.days, ev.k, merged); // 2.
    firstEvent(b, ev, st, d, appEnv, deltas, first); // 3.
    histograms(st, d, merged, first, deltas, cohort); // 4.
    deviceRow(rows, b, strings, ae, st, d, ev, merged, first, cohort); // 5.
    funnelSteps(steps, b, ev, d, ae, names, st); // 6.
    plat[d] = first.plat;
    ctry[d] = first.ctry;
    seg[d] = first.seg;
  }

  // New devices in key order (index locality); stored ones in the order of their addresses: each
  // update fetches its row by address, and neighbouring rows share pages.
  const maxBlock = st.tidBlock.reduce((m, v) => Math.max(m, v), 1);
  const inOrder = (w: CopyWriter, prefix: (r: number) => number, rotation: number) => ({
    rows: w.rows,
    payload: w.finishIn(orderByPrefix(w.rows, prefix, rotation)),
  });
  return {
    plat,
    ctry,
    seg,
    updates: inOrder(rows.updates, (r) => Math.floor((st.tidBlock[rows.updated[r]] / maxBlock) * 65535) * 65536, 0),
    inserts: inOrder(rows.inserts, (r) => b.devices.prefix(rows.inserted[r]), b.rotation),
    movedRows: rows.moved,
    steps: steps.fresh(b.rotation),
    storedSteps: steps.stored,
    purchases: purchaseRows(b, dicts, plat, ctry),
  };
}

/** an_pu rows: the batch's purchases, with their device's platform and country after the batch. */
function purchaseRows(b: Bucket, dicts: RoundDicts, plat: Int32Array, ctry: Int32Array): CopyWriter {
  const { dev, eid, ts, day, name, flag } = b;
  const keys = b.devices.bytes;
  const strings = dicts.strings.fields;
  const out = new CopyWriter(b.purchases.length * 300);
  b.purchases.forEach((i, x) => {
    const d = dev[i];
    const w = out
      .row(15)
      .raw(dicts.appEnvs[b.devices.tags[d]].head3)
      .uuid(eid, i * 16)
      .uuid(keys, d * 16)
      .int8(ts[i])
      .date(day[i]);
    writePurchase(w, parsePurchase(dicts.names.list[name[i]], flag[i], b.purchaseProps[x]));
    codeField(w, strings, plat[d]);
    codeField(w, strings, ctry[d]);
  });
  return out;
}
