import { dayOf, FIRST_GAP, FLAG, FLAG_COUNT, RETENTION_DAYS } from '../definitions.js';
import type { Deltas } from './deltas.js';
import { type BatchEvents, type MergedDays, NO_GAIN, storedTo } from './device-days.js';
import type { Bucket } from './events.js';
import type { DeviceStates } from './state.js';

/**
 * Steps 3 and 4 of the device pass (devices.ts): the device's first event, platform and country
 * (its histogram segment), and the histogram changes its merged days make. Outputs go to scratch
 * objects the pass reuses for every device; the changes go to the pass's `Deltas`.
 */

/** No day (no onboarding start); also "from the first day on" for the histogram walks. */
export const NONE = -2147483648;

/** Step 3's output. */
export interface FirstEvent {
  ts: number;
  day: number;
  /** Platform and country codes (RoundDicts strings, -1: NULL). */
  plat: number;
  ctry: number;
  /** A stored device whose platform or country changed (its first event moved). */
  relocated: boolean;
  /** Its histogram segment after the batch, and before it (-1: a new device). */
  seg: number;
  oldSeg: number;
}

export const newFirstEvent = (): FirstEvent => ({
  ts: 0,
  day: 0,
  plat: -1,
  ctry: -1,
  relocated: false,
  seg: -1,
  oldSeg: -1,
});

export type Segments = Pick<Deltas, 'seg'>;

/**
 * Step 3: first event, platform and country of device d (app environment `appEnv`): a new
 * device's come from its first batch event; an earlier first event (a late event) replaces the
 * stored ones.
 */
export function firstEvent(
  b: Pick<Bucket, 'day' | 'plat' | 'ctry'>,
  ev: BatchEvents,
  st: DeviceStates,
  d: number,
  appEnv: number,
  segs: Segments,
  out: FirstEvent,
): void {
  const existed = st.existed[d] === 1;
  const first = !existed || ev.firstTs < st.firstTs[d];
  const f = ev.first;
  out.ts = first ? ev.firstTs : st.firstTs[d];
  out.day = first ? b.day[f] : st.firstDay[d];
  out.plat = first ? b.plat[f] : st.plat[d];
  out.ctry = first ? b.ctry[f] : st.ctry[d];
  out.relocated = existed && (out.plat !== st.plat[d] || out.ctry !== st.ctry[d]);
  out.seg = segs.seg(appEnv, out.plat, out.ctry);
  out.oldSeg = existed ? segs.seg(appEnv, st.plat[d], st.ctry[d]) : -1;
}

/** Step 4's output: the device's retention bits and first onboarding-start day (NONE: none), for its row. */
export interface Cohort {
  mask: number;
  onb: number;
}

export type HistogramCells = Pick<Deltas, 'active1' | 'flag1' | 'cohort1' | 'onb1'>;

/**
 * Step 4: device d's changes to the histograms (active users, users per flag, cohorts and
 * onboarding), from its stored days (st) and its merged ones. Unchanged cells are left alone: a
 * stored device in the same segment leaves only its days from the first new (or flag-gaining)
 * day on, and enters with the merged ones from there.
 */
export function histograms(
  st: DeviceStates,
  d: number,
  merged: MergedDays,
  first: FirstEvent,
  cells: HistogramCells,
  out: Cohort,
): void {
  const existed = st.existed[d] === 1;
  const old = st.days;
  const oFrom = st.daysOff[d];
  const oTo = storedTo(st, d);
  const { md, m, minNew, minGain } = merged;
  const { seg, oldSeg } = first;
  if (!existed) {
    active(cells, md, 0, m, NONE, seg, 1);
    for (let bit = 0; bit < FLAG_COUNT; bit++) flagged(cells, md, 0, m, bit, NONE, seg, 1);
  } else if (first.relocated) {
    active(cells, old, oFrom, oTo, NONE, oldSeg, -1);
    active(cells, md, 0, m, NONE, seg, 1);
    for (let bit = 0; bit < FLAG_COUNT; bit++) {
      flagged(cells, old, oFrom, oTo, bit, NONE, oldSeg, -1);
      flagged(cells, md, 0, m, bit, NONE, seg, 1);
    }
  } else {
    if (minNew !== Infinity) {
      active(cells, old, oFrom, oTo, minNew, seg, -1);
      active(cells, md, 0, m, minNew, seg, 1);
    }
    for (let bit = 0; bit < FLAG_COUNT; bit++) {
      if (minGain[bit] === NO_GAIN) continue;
      flagged(cells, old, oFrom, oTo, bit, minGain[bit], seg, -1);
      flagged(cells, md, 0, m, bit, minGain[bit], seg, 1);
    }
  }
  const mask = retMask(md, 0, m, first.day);
  const onb = onbDay(md, 0, m);
  out.mask = mask;
  out.onb = onb;
  const oldFirst = st.firstDay[d];
  const oldMask = existed ? retMask(old, oFrom, oTo, oldFirst) : 0;
  const oldOnb = existed ? onbDay(old, oFrom, oTo) : NONE;
  if (existed && !first.relocated && first.day === oldFirst && mask === oldMask && onb === oldOnb) return;
  cells.cohort1(seg, first.day, mask, 1);
  if (onb !== NONE) cells.onb1(seg, first.day, onb - first.day, 1);
  if (existed) {
    cells.cohort1(oldSeg, oldFirst, oldMask, -1);
    if (oldOnb !== NONE) cells.onb1(oldSeg, oldFirst, oldOnb - oldFirst, -1);
  }
}

/**
 * A stored device's whole contribution taken out of the histograms (a privacy erasure): its days
 * `list` [from, to) leave the active-user and flag cells, and the device leaves its cohort and
 * onboarding cells, as `histograms` would compute them for it.
 */
export function leaveAll(
  cells: HistogramCells,
  list: Int32Array,
  from: number,
  to: number,
  firstDay: number,
  seg: number,
): void {
  active(cells, list, from, to, NONE, seg, -1);
  for (let bit = 0; bit < FLAG_COUNT; bit++) flagged(cells, list, from, to, bit, NONE, seg, -1);
  cells.cohort1(seg, firstDay, retMask(list, from, to, firstDay), -1);
  const onb = onbDay(list, from, to);
  if (onb !== NONE) cells.onb1(seg, firstDay, onb - firstDay, -1);
}

/** Active-user cells of the days of `list` [from, to) on or after `start`, each under its gap to the previous. */
function active(
  cells: HistogramCells,
  list: Int32Array,
  from: number,
  to: number,
  start: number,
  seg: number,
  sign: number,
) {
  let prev = NONE;
  for (let k = from; k < to; k++) {
    const dd = dayOf(list[k]);
    if (dd >= start) cells.active1(seg, dd, prev === NONE ? FIRST_GAP : dd - prev, sign);
    prev = dd;
  }
}

/** The same over the days having flag `bit`, each under its gap to the previous day having it. */
function flagged(
  cells: HistogramCells,
  list: Int32Array,
  from: number,
  to: number,
  bit: number,
  start: number,
  seg: number,
  sign: number,
) {
  const m = 1 << bit;
  let prev = NONE;
  for (let k = from; k < to; k++) {
    if ((list[k] & m) === 0) continue;
    const dd = dayOf(list[k]);
    if (dd >= start) cells.flag1(seg, bit, dd, prev === NONE ? FIRST_GAP : dd - prev, sign);
    prev = dd;
  }
}

function retMask(list: Int32Array, from: number, to: number, first: number): number {
  let mask = 0;
  for (let k = from; k < to; k++) mask |= retBit(dayOf(list[k]) - first);
  return mask;
}

function onbDay(list: Int32Array, from: number, to: number): number {
  for (let k = from; k < to; k++) if (list[k] & FLAG.onbStarted) return dayOf(list[k]);
  return NONE;
}

/** Retention bit by offset from the first day (definitions.ts RETENTION_DAYS; 0 for other offsets). */
const RET_BITS = new Int32Array(RETENTION_DAYS[RETENTION_DAYS.length - 1] + 1);
RETENTION_DAYS.forEach((n, bit) => (RET_BITS[n] = 1 << bit));
export const retBit = (offset: number): number => (offset >= 0 && offset < RET_BITS.length ? RET_BITS[offset] : 0);
