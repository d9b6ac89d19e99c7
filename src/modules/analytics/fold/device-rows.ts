import type { CopyWriter } from '../../../db/copy-writer.js';
import { dayOf, FLAG } from '../definitions.js';
import { type Cohort, type FirstEvent, NONE } from './device-cells.js';
import { type BatchEvents, type MergedDays, storedTo } from './device-days.js';
import type { AppEnv, Bucket } from './events.js';
import type { DeviceStates } from './state.js';
import type { StepRows } from './steps.js';

/**
 * Steps 5 and 6 of the device pass (devices.ts): the rows a device writes, its own (an_devices,
 * an_mv) and its funnel steps' (steps.ts).
 */

/** The device rows of a pass, written in the order of the device arrays (each device's data at hand). */
export interface DeviceRows {
  /** an_dev_upd rows of stored devices; updated[r]: row r's device. */
  updates: CopyWriter;
  updated: Int32Array;
  /** an_devices rows of new devices; inserted[r]: row r's device. */
  inserts: CopyWriter;
  inserted: Int32Array;
  /** an_mv rows: devices whose first event moved them to another platform or country, with the new ones. */
  moved: CopyWriter;
}

/** A platform or country code (-1: NULL) as a COPY field; `strings`: the round's (RoundDicts.strings.fields). */
export function codeField(w: CopyWriter, strings: Uint8Array[], c: number): void {
  if (c < 0) w.null();
  else w.raw(strings[c]);
}

/**
 * Step 5: device d's row after the batch (stored devices by their row address): first event,
 * platform, country, retention mask, onboarding day, last day, last event and session (the
 * stored ones unless the batch's are later), merged days; and its an_mv row if it moved.
 */
export function deviceRow(
  rows: DeviceRows,
  b: Pick<Bucket, 'devices' | 'sessions'>,
  strings: Uint8Array[],
  ae: AppEnv,
  st: DeviceStates,
  d: number,
  ev: BatchEvents,
  merged: MergedDays,
  first: FirstEvent,
  cohort: Cohort,
): void {
  const existed = st.existed[d] === 1;
  const keys = b.devices.bytes;
  let w: CopyWriter;
  if (existed) {
    w = rows.updates;
    rows.updated[w.rows] = d;
    w.row(14).tid(st.tidBlock[d], st.tidItem[d]).raw(ae.head2);
  } else {
    w = rows.inserts;
    rows.inserted[w.rows] = d;
    w.row(14).raw(ae.head3);
  }
  w.uuid(keys, d * 16)
    .int8(first.ts)
    .date(first.day);
  codeField(w, strings, first.plat);
  codeField(w, strings, first.ctry);
  w.int4(cohort.mask);
  if (cohort.onb === NONE) w.null();
  else w.date(cohort.onb);
  w.date(dayOf(merged.md[merged.m - 1]));
  if (existed && !Number.isNaN(st.lastTs[d]) && ev.lastTs < st.lastTs[d]) {
    w.int8(st.lastTs[d]);
    if (st.hasLastSession[d]) w.uuid(st.lastSession, d * 16);
    else w.null();
  } else {
    w.int8(ev.lastTs);
    if (ev.lastSession >= 0) w.uuid(b.sessions.bytes, ev.lastSession * 16);
    else w.null();
  }
  w.int4Array(merged.md, 0, merged.m);
  if (first.relocated) {
    rows.moved
      .row(5)
      .raw(ae.head2)
      .uuid(keys, d * 16);
    codeField(rows.moved, strings, first.plat);
    codeField(rows.moved, strings, first.ctry);
  }
}

/** Which event names are funnel steps (isStep[name] === 1), and the name a trial purchase is also kept under. */
export interface StepNames {
  isStep: Uint8Array;
  trial: number;
}

/** Step 6: device d's funnel step events (of its batch events, step 1) grouped into an_steps rows. */
export function funnelSteps(
  steps: StepRows,
  b: Pick<Bucket, 'name' | 'day' | 'ts' | 'flag'>,
  ev: BatchEvents,
  d: number,
  ae: AppEnv,
  names: StepNames,
  st: DeviceStates,
): void {
  const { name, day, ts, flag } = b;
  const events = ev.events;
  for (let e = 0; e < ev.k; e++) {
    const i = events[e];
    if (names.isStep[name[i]] === 1) steps.add(name[i], day[i], ts[i]);
    if (flag[i] & FLAG.trial) steps.add(names.trial, day[i], ts[i]);
  }
  steps.endDevice(d, ae, st.days, st.daysOff[d], storedTo(st, d));
}
