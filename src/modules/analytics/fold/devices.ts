import { CopyWriter } from '../../../db/copy-writer.js';
import { dayOf, FIRST_GAP, FLAG, FLAG_COUNT, flagsOf, pack, RETENTION_DAYS } from '../definitions.js';
import type { Deltas } from './deltas.js';
import type { Bucket, RoundDicts } from './events.js';
import { grow, orderByPrefix, sortInts } from './order.js';
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
 * Histograms: a device-day counts in the active-user histogram under its gap to the device's
 * previous active day (FIRST_GAP on its first). Adding a day d changes the gaps of d and of the
 * next day only; the pass takes out the device's stored contributions from its first new day on
 * and adds back the merged ones from there (in ingestion order there are none to take out). The
 * same per flag bit, from the first day that gained the bit. A device whose first event moved to
 * another platform or country leaves every cell with its stored days and enters with the merged.
 */

const NONE = -2147483648;

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

export function foldDevices(
  b: Bucket,
  st: DeviceStates,
  dicts: RoundDicts,
  deltas: Deltas,
  isStep: Uint8Array,
  trialName: number,
): DevicePass {
  const D = b.devices.size;
  const n = b.n;
  const { dev, ts, day, flag, name, sess, eid } = b;
  const keys = b.devices.bytes;
  const strFields = dicts.strings.fields;
  const text = (w: CopyWriter, c: number) => (c < 0 ? w.null() : w.raw(strFields[c]));

  // Each device's events, in batch order, as a linked list.
  const head = new Int32Array(D).fill(-1);
  const nxt = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) {
    nxt[i] = head[dev[i]];
    head[dev[i]] = i;
  }
  const eidLess = (i: number, j: number) => {
    if (j < 0) return true;
    for (let k = 0; k < 16; k++) {
      const x = eid[i * 16 + k] - eid[j * 16 + k];
      if (x !== 0) return x < 0;
    }
    return false;
  };

  const out: Omit<DevicePass, 'steps' | 'storedSteps' | 'updates' | 'inserts'> = {
    plat: new Int32Array(D),
    ctry: new Int32Array(D),
    seg: new Int32Array(D),
    movedRows: new CopyWriter(),
    purchases: new CopyWriter(b.purchases.length * 300),
  };
  // Device rows, written in the order of the device arrays (each device's data at hand) and sent in key order.
  const updates = new CopyWriter(D * 160, { reorder: true });
  const inserts = new CopyWriter(D * 160, { reorder: true });
  const updated = new Int32Array(D);
  const inserted = new Int32Array(D);

  // Scratch, grown as needed: the device's batch days (packed: definitions.ts pack) and merged days.
  let bd: Int32Array = new Int32Array(64);
  const merged: MergedDays = { md: new Int32Array(128), m: 0, minNew: Infinity, minGain: new Int32Array(FLAG_COUNT) };
  const steps = new StepRows(b, dicts);

  const active = (list: Int32Array, from: number, to: number, start: number, seg: number, sign: number) => {
    let prev = NONE;
    for (let k = from; k < to; k++) {
      const dd = dayOf(list[k]);
      if (dd >= start) deltas.active1(seg, dd, prev === NONE ? FIRST_GAP : dd - prev, sign);
      prev = dd;
    }
  };
  const flagged = (
    list: Int32Array,
    from: number,
    to: number,
    bit: number,
    start: number,
    seg: number,
    sign: number,
  ) => {
    const m = 1 << bit;
    let prev = NONE;
    for (let k = from; k < to; k++) {
      if ((list[k] & m) === 0) continue;
      const dd = dayOf(list[k]);
      if (dd >= start) deltas.flag1(seg, bit, dd, prev === NONE ? FIRST_GAP : dd - prev, sign);
      prev = dd;
    }
  };
  const retMask = (list: Int32Array, from: number, to: number, first: number) => {
    let mask = 0;
    for (let k = from; k < to; k++) mask |= retBit(dayOf(list[k]) - first);
    return mask;
  };
  const onbDay = (list: Int32Array, from: number, to: number) => {
    for (let k = from; k < to; k++) if (list[k] & FLAG.onbStarted) return dayOf(list[k]);
    return NONE;
  };

  for (let d = 0; d < D; d++) {
    const appEnv = b.devices.tags[d];
    const ae = dicts.appEnvs[appEnv];

    // 1. The batch's events of the device.
    let fEv = -1;
    let fTs = Infinity;
    let lTs = -Infinity;
    let k = 0;
    for (let i = head[d]; i >= 0; i = nxt[i]) {
      const t = ts[i];
      if (t < fTs || (t === fTs && eidLess(i, fEv))) {
        fTs = t;
        fEv = i;
      }
      if (t > lTs) lTs = t;
      if (k === bd.length) bd = grow(bd);
      bd[k++] = pack(day[i], flag[i]);
      if (isStep[name[i]] === 1) steps.add(name[i], day[i], t);
      if (flag[i] & FLAG.trial) steps.add(trialName, day[i], t);
    }
    // The last session: of the events at the device's latest time, the smallest session id.
    let ls = -1;
    for (let i = head[d]; i >= 0; i = nxt[i]) {
      if (ts[i] === lTs && sess[i] >= 0 && (ls < 0 || b.sessions.compare(sess[i], ls) < 0)) ls = sess[i];
    }
    sortInts(bd, k);

    // 2. Merge with the stored days: new days, and per flag bit the first day gaining it.
    const existed = st.existed[d] === 1;
    const oFrom = st.daysOff[d];
    const oTo = oFrom + (existed ? st.daysLen[d] : 0);
    const old = st.days;
    mergeDays(old, oFrom, oTo, bd, k, merged);
    const { md, m, minNew, minGain } = merged;

    // 3. First event, platform and country: an earlier first event (a late event) replaces them.
    const moved = existed && fTs < st.firstTs[d];
    const first = !existed || moved;
    const firstTs = first ? fTs : st.firstTs[d];
    const firstDay = first ? day[fEv] : st.firstDay[d];
    const plat = first ? b.plat[fEv] : st.plat[d];
    const ctry = first ? b.ctry[fEv] : st.ctry[d];
    out.plat[d] = plat;
    out.ctry[d] = ctry;
    const relocated = existed && (plat !== st.plat[d] || ctry !== st.ctry[d]);
    const seg = deltas.seg(appEnv, plat, ctry);
    out.seg[d] = seg;
    const oldSeg = existed ? deltas.seg(appEnv, st.plat[d], st.ctry[d]) : -1;

    // 4. Histograms: active users, users per flag, cohorts.
    if (!existed) {
      active(md, 0, m, NONE, seg, 1);
      for (let bit = 0; bit < FLAG_COUNT; bit++) flagged(md, 0, m, bit, NONE, seg, 1);
    } else if (relocated) {
      active(old, oFrom, oTo, NONE, oldSeg, -1);
      active(md, 0, m, NONE, seg, 1);
      for (let bit = 0; bit < FLAG_COUNT; bit++) {
        flagged(old, oFrom, oTo, bit, NONE, oldSeg, -1);
        flagged(md, 0, m, bit, NONE, seg, 1);
      }
    } else {
      if (minNew !== Infinity) {
        active(old, oFrom, oTo, minNew, seg, -1);
        active(md, 0, m, minNew, seg, 1);
      }
      for (let bit = 0; bit < FLAG_COUNT; bit++) {
        if (minGain[bit] === NO_GAIN) continue;
        flagged(old, oFrom, oTo, bit, minGain[bit], seg, -1);
        flagged(md, 0, m, bit, minGain[bit], seg, 1);
      }
    }
    const mask = retMask(md, 0, m, firstDay);
    const onb = onbDay(md, 0, m);
    const oldMask = existed ? retMask(old, oFrom, oTo, st.firstDay[d]) : 0;
    const oldOnb = existed ? onbDay(old, oFrom, oTo) : NONE;
    if (!existed || relocated || firstDay !== st.firstDay[d] || mask !== oldMask || onb !== oldOnb) {
      deltas.cohort1(seg, firstDay, mask, 1);
      if (onb !== NONE) deltas.onb1(seg, firstDay, onb - firstDay, 1);
      if (existed) {
        deltas.cohort1(oldSeg, st.firstDay[d], oldMask, -1);
        if (oldOnb !== NONE) deltas.onb1(oldSeg, st.firstDay[d], oldOnb - st.firstDay[d], -1);
      }
    }

    // 5. The device row.
    const keepLast = existed && !Number.isNaN(st.lastTs[d]) && lTs < st.lastTs[d];
    if (existed) updated[updates.rows] = d;
    else inserted[inserts.rows] = d;
    const w = existed ? updates : inserts;
    if (existed) w.row(14).tid(st.tidBlock[d], st.tidItem[d]).raw(ae.head2);
    else w.row(14).raw(ae.head3);
    w.uuid(keys, d * 16)
      .int8(firstTs)
      .date(firstDay);
    text(w, plat);
    text(w, ctry);
    w.int4(mask);
    if (onb === NONE) w.null();
    else w.date(onb);
    w.date(dayOf(md[m - 1]));
    if (keepLast) {
      w.int8(st.lastTs[d]);
      if (st.hasLastSession[d]) w.uuid(st.lastSession, d * 16);
      else w.null();
    } else {
      w.int8(lTs);
      if (ls >= 0) w.uuid(b.sessions.bytes, ls * 16);
      else w.null();
    }
    w.int4Array(md, 0, m);
    if (relocated) {
      out.movedRows
        .row(5)
        .raw(ae.head2)
        .uuid(keys, d * 16);
      text(out.movedRows, plat);
      text(out.movedRows, ctry);
    }

    // 6. Funnel steps.
    steps.endDevice(d, ae, (sDay) => existed && hasDay(old, oFrom, oTo, sDay));
  }

  // Purchases, with their device's platform and country after the batch.
  b.purchases.forEach((i, x) => {
    const d = dev[i];
    const w = out.purchases
      .row(15)
      .raw(dicts.appEnvs[b.devices.tags[d]].head3)
      .uuid(eid, i * 16)
      .uuid(keys, d * 16)
      .int8(ts[i])
      .date(day[i]);
    writePurchase(w, parsePurchase(dicts.names.list[name[i]], flag[i], b.purchaseProps[x]));
    text(w, out.plat[d]);
    text(w, out.ctry[d]);
  });
  // New devices in key order (index locality); stored ones in the order of their addresses: each
  // update fetches its row by address, and neighbouring rows share pages.
  const maxBlock = st.tidBlock.reduce((m, v) => Math.max(m, v), 1);
  const inOrder = (w: CopyWriter, prefix: (r: number) => number, rotation: number) => ({
    rows: w.rows,
    payload: w.finishIn(orderByPrefix(w.rows, prefix, rotation)),
  });
  return {
    ...out,
    updates: inOrder(updates, (r) => Math.floor((st.tidBlock[updated[r]] / maxBlock) * 65535) * 65536, 0),
    inserts: inOrder(inserts, (r) => b.devices.prefix(inserted[r]), b.rotation),
    steps: steps.fresh(b.rotation),
    storedSteps: steps.stored,
  };
}

/** A device's merged days (`md`, `m` of them), its first new day and per flag bit the first day gaining it (NO_GAIN: none). */
export interface MergedDays {
  md: Int32Array;
  m: number;
  minNew: number;
  minGain: Int32Array;
}

export const NO_GAIN = 2147483647;

/**
 * Step 2 of the device pass: merges a device's stored days (`old` [from, to), packed, sorted) with
 * the batch's (`bd` [0, k), packed, sorted by day, a day possibly repeated) into `out`.
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

/** Retention bit by offset from the first day (definitions.ts RETENTION_DAYS; 0 for other offsets). */
const RET_BITS = new Int32Array(RETENTION_DAYS[RETENTION_DAYS.length - 1] + 1);
RETENTION_DAYS.forEach((n, bit) => (RET_BITS[n] = 1 << bit));
export const retBit = (offset: number): number => (offset >= 0 && offset < RET_BITS.length ? RET_BITS[offset] : 0);

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
