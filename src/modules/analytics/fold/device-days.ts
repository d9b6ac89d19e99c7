import { dayOf, FLAG_COUNT, flagsOf, pack } from '../definitions.js';
import type { Bucket } from './events.js';
import { grow, sortInts } from './order.js';
import type { DeviceStates } from './state.js';

/**
 * Steps 1 and 2 of the device pass (devices.ts): a device's events of the batch, and its days
 * merged with its stored ones. Each step fills a scratch object the pass allocates once and
 * reuses for every device (millions of them: nothing is allocated per device).
 */

/** Each device's events, in batch order, as a linked list: head[d], then nxt[i] (-1: the end). */
export interface EventLists {
  head: Int32Array;
  nxt: Int32Array;
}

export function linkEvents(dev: Int32Array, n: number, devices: number): EventLists {
  const head = new Int32Array(devices).fill(-1);
  const nxt = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    nxt[i] = head[dev[i]];
    head[dev[i]] = i;
  }
  return { head, nxt };
}

/** Step 1's output: what a device's events of the batch say. */
export interface BatchEvents {
  /** Its first event (earliest time, the smaller event id on a tie) and that time; its latest time. */
  first: number;
  firstTs: number;
  lastTs: number;
  /** Of the events at lastTs, the smallest session (a bucket session index; -1: none). */
  lastSession: number;
  /** Its events (batch indexes, in batch order) and their days with their flags (definitions.ts pack),
   * sorted, a day possibly repeated: events[0..k), days[0..k). */
  events: Int32Array;
  days: Int32Array;
  k: number;
}

export const newBatchEvents = (): BatchEvents => ({
  first: -1,
  firstTs: 0,
  lastTs: 0,
  lastSession: -1,
  events: new Int32Array(64),
  days: new Int32Array(64),
  k: 0,
});

export type BatchColumns = Pick<Bucket, 'ts' | 'day' | 'flag' | 'sess' | 'eid' | 'sessions'>;

/** Step 1: device d's events of the batch (its list in `lists`) into `out`. */
export function batchEvents(b: BatchColumns, lists: EventLists, d: number, out: BatchEvents): void {
  const { ts, day, flag, sess, eid } = b;
  const nxt = lists.nxt;
  let fEv = -1;
  let fTs = Infinity;
  let lTs = -Infinity;
  let events = out.events;
  let days = out.days;
  let k = 0;
  for (let i = lists.head[d]; i >= 0; i = nxt[i]) {
    const t = ts[i];
    if (t < fTs || (t === fTs && eidLess(eid, i, fEv))) {
      fTs = t;
      fEv = i;
    }
    if (t > lTs) lTs = t;
    if (k === days.length) {
      days = grow(days);
      events = grow(events);
    }
    events[k] = i;
    days[k++] = pack(day[i], flag[i]);
  }
  let ls = -1;
  for (let e = 0; e < k; e++) {
    const i = events[e];
    if (ts[i] === lTs && sess[i] >= 0 && (ls < 0 || b.sessions.compare(sess[i], ls) < 0)) ls = sess[i];
  }
  sortInts(days, k);
  out.first = fEv;
  out.firstTs = fTs;
  out.lastTs = lTs;
  out.lastSession = ls;
  out.events = events;
  out.days = days;
  out.k = k;
}

/** Whether event i's id sorts before event j's (any id before none, j < 0). */
function eidLess(eid: Uint8Array, i: number, j: number): boolean {
  if (j < 0) return true;
  for (let k = 0; k < 16; k++) {
    const x = eid[i * 16 + k] - eid[j * 16 + k];
    if (x !== 0) return x < 0;
  }
  return false;
}

/** Where device d's stored days end in st.days (they start at st.daysOff[d]; a new device has none). */
export const storedTo = (st: DeviceStates, d: number): number =>
  st.daysOff[d] + (st.existed[d] === 1 ? st.daysLen[d] : 0);

/** A device's merged days (`md`, `m` of them), its first new day and per flag bit the first day gaining it (NO_GAIN: none). */
export interface MergedDays {
  md: Int32Array;
  m: number;
  minNew: number;
  minGain: Int32Array;
}

export const NO_GAIN = 2147483647;

export const newMergedDays = (): MergedDays => ({
  md: new Int32Array(128),
  m: 0,
  minNew: Infinity,
  minGain: new Int32Array(FLAG_COUNT),
});

/**
 * Step 2: merges a device's stored days (`old` [from, to), packed, sorted) with the batch's
 * (`bd` [0, k), packed, sorted by day, a day possibly repeated) into `out`.
 */
export function mergeDays(old: Int32Array, from: number, to: number, bd: Int32Array, k: number, out: MergedDays): void {
  if (out.md.length < to - from + k) out.md = new Int32Array(2 * (to - from + k));
  const md = out.md;
  const minGain = out.minGain;
  let m = 0;
  let minNew = Infinity;
  minGain.fill(NO_GAIN);
  let i = from;
  let j = 0;
  while (i < to || j < k) {
    const od = i < to ? dayOf(old[i]) : Infinity;
    const bdy = j < k ? dayOf(bd[j]) : Infinity;
    if (od < bdy) {
      md[m++] = old[i++];
      continue;
    }
    let bfl = 0;
    while (j < k && dayOf(bd[j]) === bdy) bfl |= flagsOf(bd[j++]);
    const stored = od === bdy;
    const ofl = stored ? flagsOf(old[i++]) : 0;
    if (!stored && bdy < minNew) minNew = bdy;
    const gained = bfl & ~ofl;
    if (gained !== 0)
      for (let bit = 0; bit < FLAG_COUNT; bit++) if (gained & (1 << bit) && bdy < minGain[bit]) minGain[bit] = bdy;
    md[m++] = pack(bdy, bfl | ofl);
  }
  out.m = m;
  out.minNew = minNew;
}

/** Whether the packed, sorted day list [from, to) has day `dd`. */
export function hasDay(list: Int32Array, from: number, to: number, dd: number): boolean {
  let lo = from;
  let hi = to - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = dayOf(list[mid]);
    if (v === dd) return true;
    if (v < dd) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}
