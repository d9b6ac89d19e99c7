import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CopyRow, readCopyPayload, readInt64 } from '../src/db/copy.js';
import { CopyWriter } from '../src/db/copy-writer.js';
import { FIRST_GAP, FLAG, FLAG_COUNT, FLAGS, pack, retentionBit } from '../src/modules/analytics/definitions.js';
import { Deltas } from '../src/modules/analytics/fold/deltas.js';
import {
  type Cohort,
  firstEvent,
  type HistogramCells,
  histograms,
  NONE,
  newFirstEvent,
} from '../src/modules/analytics/fold/device-cells.js';
import {
  batchEvents,
  hasDay,
  linkEvents,
  type MergedDays,
  mergeDays,
  NO_GAIN,
  newBatchEvents,
  newMergedDays,
} from '../src/modules/analytics/fold/device-days.js';
import { type DeviceRows, deviceRow, funnelSteps } from '../src/modules/analytics/fold/device-rows.js';
import { Bucket, RoundDicts } from '../src/modules/analytics/fold/events.js';
import { DeviceStates } from '../src/modules/analytics/fold/state.js';
import { StepRows } from '../src/modules/analytics/fold/steps.js';

// Unit tests of the device pass's steps (fold/devices.ts), each on plain inputs: no database.

/** A uuid whose bytes are all `v` (uuids sort by their bytes). */
const uuid = (v: number) => new Uint8Array(16).fill(v);

/** A round with one app environment (code 0) and the platforms / countries `strings`, in code order. */
function round(...strings: string[]): RoundDicts {
  const dicts = new RoundDicts();
  const env = Buffer.from('production');
  dicts.appEnvAt(Buffer.concat([uuid(0xaa), uuid(0xbb), env]), 0, 16, 32, env.length);
  for (const s of strings) dicts.strings.code(s);
  return dicts;
}

interface Ev {
  dev: number;
  ts: number;
  day: number;
  flag?: number;
  name?: number;
  sess?: number;
  eid?: number;
  plat?: number;
  ctry?: number;
}

/** A bucket of `devices` devices (uuid bytes 1, 2, ...) and these events; session s has uuid bytes s + 1. */
function bucket(devices: number, events: Ev[]): Bucket {
  const b = new Bucket(64);
  for (let d = 0; d < devices; d++) b.devices.intern(uuid(d + 1), 0, 0);
  for (const e of events) {
    const i = b.next();
    b.dev[i] = e.dev;
    b.ts[i] = e.ts;
    b.day[i] = e.day;
    b.flag[i] = e.flag ?? 0;
    b.name[i] = e.name ?? 0;
    b.plat[i] = e.plat ?? -1;
    b.ctry[i] = e.ctry ?? -1;
    b.sess[i] = e.sess === undefined ? -1 : b.sessions.intern(uuid(e.sess + 1), 0, 0);
    b.eid[i * 16 + 15] = e.eid ?? i;
  }
  return b;
}

/** Stored state: device d with these days (packed, sorted) and first event; other fields as given. */
function stored(
  st: DeviceStates,
  d: number,
  days: number[],
  first: { ts: number; day: number; plat: number; ctry: number },
) {
  st.existed[d] = 1;
  st.daysOff[d] = d * 8;
  st.daysLen[d] = days.length;
  st.days.set(days, d * 8);
  st.firstTs[d] = first.ts;
  st.firstDay[d] = first.day;
  st.plat[d] = first.plat;
  st.ctry[d] = first.ctry;
  st.lastTs[d] = NaN;
}

type Field = Buffer | null;

/** Each row of a COPY payload, as its fields' bytes (null: NULL). */
function copyRows(payload: Buffer): Field[][] {
  const out: Field[][] = [];
  readCopyPayload(payload, (r: CopyRow) => {
    const n = r.buf.readInt16BE(r.start);
    out.push(
      Array.from({ length: n }, (_, f) => (r.len[f] < 0 ? null : r.buf.subarray(r.off[f], r.off[f] + r.len[f]))),
    );
  });
  return out;
}
const int4 = (f: Field) => f?.readInt32BE(0);
const int8 = (f: Field) => (f === null ? undefined : readInt64(f, 0));
const hex = (f: Field) => f?.toString('hex');
/** A one-dimensional int4[] or timestamptz[]'s element count and its int4 values (width 4). */
const arrayLength = (f: Field) => (f === null || f.readInt32BE(0) === 0 ? 0 : f.readInt32BE(12));
const int4s = (f: Field) => Array.from({ length: arrayLength(f) }, (_, k) => f?.readInt32BE(20 + k * 8 + 4));
const int8s = (f: Field) => Array.from({ length: arrayLength(f) }, (_, k) => (f ? readInt64(f, 20 + k * 12 + 4) : 0));

describe('analytics fold, device pass: 1. the batch events of a device', () => {
  it('finds first event (ties by event id), last time and session (smallest at it), and sorted packed days', () => {
    const b = bucket(2, [
      { dev: 0, ts: 300, day: 9, sess: 7 },
      { dev: 1, ts: 50, day: 2 },
      { dev: 0, ts: 100, day: 8, flag: FLAG.paywall, eid: 5 },
      { dev: 0, ts: 300, day: 9, flag: FLAG.crash, sess: 4 },
      { dev: 0, ts: 100, day: 8, eid: 3 },
      { dev: 0, ts: 300, day: 9 },
    ]);
    const ev = newBatchEvents();
    const lists = linkEvents(b.dev, b.n, 2);
    batchEvents(b, lists, 0, ev);
    assert.deepEqual([...ev.events.subarray(0, ev.k)], [0, 2, 3, 4, 5], 'its events, in batch order');
    assert.equal(ev.first, 4, 'the tie at 100 goes to the smaller event id');
    assert.deepEqual([ev.firstTs, ev.lastTs], [100, 300]);
    assert.equal(ev.lastSession, b.sessions.find(uuid(5), 0, 0), 'session 4 sorts before session 7');
    assert.deepEqual(
      [...ev.days.subarray(0, ev.k)],
      [pack(8, 0), pack(8, FLAG.paywall), pack(9, 0), pack(9, 0), pack(9, FLAG.crash)],
    );
    batchEvents(b, lists, 1, ev);
    assert.deepEqual([ev.first, ev.firstTs, ev.lastTs, ev.lastSession, ev.k], [1, 50, 50, -1, 1]);
  });

  it('grows its day buffer for a device with many events', () => {
    const b = bucket(
      1,
      Array.from({ length: 150 }, (_, i) => ({ dev: 0, ts: 1000 - i, day: 1000 - i })),
    );
    const ev = newBatchEvents();
    batchEvents(b, linkEvents(b.dev, b.n, 1), 0, ev);
    assert.equal(ev.k, 150);
    assert.equal(ev.events[149], 149);
    assert.deepEqual([ev.days[0], ev.days[149]], [pack(851, 0), pack(1000, 0)]);
    assert.equal(ev.first, 149);
  });
});

describe('analytics fold, device pass: 2. merging stored and batch days', () => {
  it('finds a day in a packed, sorted day list', () => {
    const list = Int32Array.from([pack(3, FLAG.crash), pack(5, 0), pack(9, FLAG.paid | FLAG.trial)]);
    assert.deepEqual(
      [2, 3, 4, 5, 9, 10].map((d) => hasDay(list, 0, 3, d)),
      [false, true, false, true, true, false],
    );
    assert.equal(hasDay(list, 1, 3, 3), false, 'only within [from, to)');
  });

  it("merges a device's stored days with the batch's: flags or-ed per day, first new day, first day gaining each flag", () => {
    const old = Int32Array.from([99, pack(3, FLAG.onbStarted), pack(5, 0), 99]);
    const batch = Int32Array.from([
      pack(3, FLAG.onbCompleted),
      pack(4, 0),
      pack(5, FLAG.onbStarted),
      pack(5, FLAG.paywall),
    ]);
    const out: MergedDays = { md: new Int32Array(1), m: 0, minNew: 0, minGain: new Int32Array(FLAG_COUNT) };
    mergeDays(old, 1, 3, batch, batch.length, out);
    assert.deepEqual(
      [...out.md.subarray(0, out.m)],
      [pack(3, FLAG.onbStarted | FLAG.onbCompleted), pack(4, 0), pack(5, FLAG.onbStarted | FLAG.paywall)],
    );
    assert.equal(out.minNew, 4);
    const gain = Object.fromEntries(FLAGS.map((f, bit) => [f.key, out.minGain[bit]]));
    assert.deepEqual(gain, {
      onbStarted: 5,
      onbCompleted: 3,
      paywall: 5,
      trial: NO_GAIN,
      paid: NO_GAIN,
      crash: NO_GAIN,
    });
    // Nothing stored: every day is new.
    mergeDays(old, 0, 0, batch, 2, out);
    assert.deepEqual([...out.md.subarray(0, out.m)], [pack(3, FLAG.onbCompleted), pack(4, 0)]);
    assert.equal(out.minNew, 3);
  });
});

describe('analytics fold, device pass: 3. first event, platform and country', () => {
  it("takes a new device's from its first event, a late event's from the batch, and keeps a stored earlier one", () => {
    const dicts = round('ios', 'android', 'DE', 'FR');
    const deltas = new Deltas(dicts);
    const b = bucket(3, [
      { dev: 0, ts: 200, day: 2, plat: 0 },
      { dev: 1, ts: 100, day: 1, plat: 1, ctry: 2 },
      { dev: 2, ts: 100, day: 1, plat: 1, ctry: 2 },
    ]);
    const st = new DeviceStates(3);
    stored(st, 1, [pack(5, 0)], { ts: 500, day: 5, plat: 0, ctry: 2 });
    stored(st, 2, [pack(0, 0)], { ts: 50, day: 0, plat: 0, ctry: 3 });
    const ev = newBatchEvents();
    const first = newFirstEvent();
    const seg = (s: number) => deltas.segs[s];
    const at = (d: number) => {
      ev.first = d;
      ev.firstTs = b.ts[d];
      firstEvent(b, ev, st, d, 0, deltas, first);
      return { ...first, seg: seg(first.seg), oldSeg: first.oldSeg < 0 ? null : seg(first.oldSeg) };
    };
    const unknown = 'unknown';
    assert.deepEqual(at(0), {
      ...{ ts: 200, day: 2, plat: 0, ctry: -1, relocated: false },
      ...{ seg: { appEnv: 0, platform: 'ios', country: unknown }, oldSeg: null },
    });
    assert.deepEqual(at(1), {
      ...{ ts: 100, day: 1, plat: 1, ctry: 2, relocated: true },
      ...{
        seg: { appEnv: 0, platform: 'android', country: 'DE' },
        oldSeg: { appEnv: 0, platform: 'ios', country: 'DE' },
      },
    });
    const kept = at(2);
    assert.deepEqual(kept, {
      ...{ ts: 50, day: 0, plat: 0, ctry: 3, relocated: false },
      ...{ seg: { appEnv: 0, platform: 'ios', country: 'FR' }, oldSeg: { appEnv: 0, platform: 'ios', country: 'FR' } },
    });
  });
});

/** Histogram cells recording each change as a line. */
function recorder(): HistogramCells & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    active1: (seg, day, gap, n) => void calls.push(`active ${seg} ${day} ${gap} ${n}`),
    flag1: (seg, bit, day, gap, n) => void calls.push(`${FLAGS[bit].key} ${seg} ${day} ${gap} ${n}`),
    cohort1: (seg, day, mask, n) => void calls.push(`cohort ${seg} ${day} ${mask} ${n}`),
    onb1: (seg, day, offset, n) => void calls.push(`onb ${seg} ${day} ${offset} ${n}`),
  };
}

describe('analytics fold, device pass: 4. histogram changes', () => {
  const G = FIRST_GAP;
  const r1r3 = retentionBit(1) | retentionBit(3);
  /** Step 4 for device 0 of `st` with batch days `batch` (steps 2 and 3's outputs given). */
  function run(
    st: DeviceStates,
    batch: number[],
    first: { day: number; seg: number; oldSeg: number; relocated: boolean },
  ) {
    const merged = newMergedDays();
    const to = st.daysOff[0] + st.daysLen[0];
    mergeDays(st.days, st.daysOff[0], to, Int32Array.from(batch), batch.length, merged);
    const cells = recorder();
    const cohort: Cohort = { mask: -1, onb: -1 };
    histograms(st, 0, merged, { ...newFirstEvent(), ...first }, cells, cohort);
    return { calls: cells.calls, cohort };
  }

  it('enters a new device into every cell of its days', () => {
    const { calls, cohort } = run(new DeviceStates(1), [pack(10, FLAG.onbStarted), pack(11, 0), pack(13, FLAG.paid)], {
      ...{ day: 10, seg: 1, oldSeg: -1, relocated: false },
    });
    assert.deepEqual(calls, [
      `active 1 10 ${G} 1`,
      'active 1 11 1 1',
      'active 1 13 2 1',
      `onbStarted 1 10 ${G} 1`,
      `paid 1 13 ${G} 1`,
      `cohort 1 10 ${r1r3} 1`,
      'onb 1 10 0 1',
    ]);
    assert.deepEqual(cohort, { mask: r1r3, onb: 10 });
  });

  it('moves a stored device only from its first new or flag-gaining day on, and its cohort when its mask changed', () => {
    const st = new DeviceStates(1);
    stored(st, 0, [pack(10, 0), pack(14, 0)], { ts: 0, day: 10, plat: -1, ctry: -1 });
    const { calls, cohort } = run(st, [pack(11, FLAG.paywall)], { day: 10, seg: 1, oldSeg: 1, relocated: false });
    assert.deepEqual(calls, [
      'active 1 14 4 -1',
      'active 1 11 1 1',
      'active 1 14 3 1',
      `paywall 1 11 ${G} 1`,
      `cohort 1 10 ${retentionBit(1)} 1`,
      'cohort 1 10 0 -1',
    ]);
    assert.deepEqual(cohort, { mask: retentionBit(1), onb: NONE });
    // A stored day again, with a flag it had: no change at all.
    stored(st, 0, [pack(10, 0), pack(14, FLAG.crash)], { ts: 0, day: 10, plat: -1, ctry: -1 });
    assert.deepEqual(run(st, [pack(14, FLAG.crash)], { day: 10, seg: 1, oldSeg: 1, relocated: false }).calls, []);
  });

  it('moves every cell of a relocated device from its old segment to its new one', () => {
    const st = new DeviceStates(1);
    stored(st, 0, [pack(10, FLAG.paywall), pack(12, 0)], { ts: 0, day: 10, plat: -1, ctry: -1 });
    const { calls } = run(st, [pack(9, 0)], { day: 9, seg: 2, oldSeg: 1, relocated: true });
    assert.deepEqual(calls, [
      `active 1 10 ${G} -1`,
      'active 1 12 2 -1',
      `active 2 9 ${G} 1`,
      'active 2 10 1 1',
      'active 2 12 2 1',
      `paywall 1 10 ${G} -1`,
      `paywall 2 10 ${G} 1`,
      `cohort 2 9 ${r1r3} 1`,
      'cohort 1 10 0 -1',
    ]);
    // An earlier first event on the same day, elsewhere: the same days and cohort, in the new segment.
    assert.deepEqual(run(st, [pack(10, 0)], { day: 10, seg: 2, oldSeg: 1, relocated: true }).calls.slice(-2), [
      'cohort 2 10 0 1',
      'cohort 1 10 0 -1',
    ]);
  });
});

describe('analytics fold, device pass: 5. the device row', () => {
  it("writes a new device's row and a stored one's by address, keeping a later stored last event, and its move", () => {
    const dicts = round('ios', 'DE');
    const b = bucket(2, [{ dev: 0, ts: 200, day: 3, sess: 8 }]);
    const st = new DeviceStates(2);
    stored(st, 1, [pack(1, 0)], { ts: 10, day: 1, plat: 1, ctry: -1 });
    st.tidBlock[1] = 7;
    st.tidItem[1] = 3;
    st.lastTs[1] = 900;
    st.hasLastSession[1] = 1;
    st.lastSession.set(uuid(0x55), 16);
    const rows: DeviceRows = {
      updates: new CopyWriter(256, { reorder: true }),
      updated: new Int32Array(2),
      inserts: new CopyWriter(256, { reorder: true }),
      inserted: new Int32Array(2),
      moved: new CopyWriter(),
    };
    const merged: MergedDays = {
      ...newMergedDays(),
      md: Int32Array.from([pack(1, 0), pack(3, FLAG.onbStarted)]),
      m: 2,
    };
    const ev = { ...newBatchEvents(), first: 0, firstTs: 200, lastTs: 200, lastSession: 0 };
    const first = { ...newFirstEvent(), ts: 100, day: 1, plat: 0, ctry: -1 };
    const ae = dicts.appEnvs[0];
    deviceRow(rows, b, dicts.strings.fields, ae, st, 0, ev, merged, first, { mask: 3, onb: 3 });
    const relocated = { ...first, ts: 10, plat: 0, ctry: 1, relocated: true };
    deviceRow(rows, b, dicts.strings.fields, ae, st, 1, { ...ev, lastTs: 500 }, merged, relocated, {
      mask: 0,
      onb: NONE,
    });

    const [ins] = copyRows(rows.inserts.finish());
    assert.equal(rows.inserted[0], 0);
    assert.deepEqual(
      [hex(ins[0]), hex(ins[1]), ins[2]?.toString(), hex(ins[3])],
      ['bb'.repeat(16), 'aa'.repeat(16), 'production', '01'.repeat(16)],
    );
    assert.deepEqual([int8(ins[4]), int4(ins[5]), ins[6]?.toString(), ins[7]], [100, 1, 'ios', null]);
    assert.deepEqual(
      [int4(ins[8]), int4(ins[9]), int4(ins[10]), int8(ins[11]), hex(ins[12])],
      [3, 3, 3, 200, '09'.repeat(16)],
    );
    assert.deepEqual(int4s(ins[13]), [pack(1, 0), pack(3, FLAG.onbStarted)]);

    const [upd] = copyRows(rows.updates.finish());
    assert.equal(rows.updated[0], 1);
    assert.deepEqual(
      [upd[0]?.readUInt32BE(0), upd[0]?.readUInt16BE(4), hex(upd[1]), hex(upd[3])],
      [7, 3, 'aa'.repeat(16), '02'.repeat(16)],
    );
    assert.deepEqual([int8(upd[4]), upd[6]?.toString(), upd[7]?.toString(), upd[9]], [10, 'ios', 'DE', null]);
    assert.deepEqual([int8(upd[11]), hex(upd[12])], [900, '55'.repeat(16)], 'the stored last event is later');

    const moved = copyRows(rows.moved.finish());
    assert.equal(moved.length, 1, 'only the relocated device moves');
    assert.deepEqual(
      moved[0].slice(2).map((f) => (f?.length === 16 ? hex(f) : f?.toString())),
      ['02'.repeat(16), 'ios', 'DE'],
    );
  });
});

describe('analytics fold, device pass: 6. funnel steps', () => {
  it('keeps step events (and trials as $trial) per name and day: merged on stored days, inserted on new ones', () => {
    const dicts = round();
    const [signup, view, trial, purchase] = ['signup', 'screen_view', '$trial', 'purchase_completed'].map((n) =>
      dicts.names.code(n),
    );
    const b = bucket(2, [
      { dev: 0, ts: 30, day: 3, name: signup },
      { dev: 0, ts: 10, day: 3, name: signup },
      { dev: 0, ts: 50, day: 5, name: signup },
      { dev: 1, ts: 5, day: 3, name: signup },
      { dev: 0, ts: 55, day: 5, name: view },
      { dev: 0, ts: 60, day: 5, name: purchase, flag: FLAG.trial },
    ]);
    const st = new DeviceStates(2);
    stored(st, 0, [pack(3, 0)], { ts: 10, day: 3, plat: -1, ctry: -1 });
    const steps = new StepRows(b, dicts);
    const lists = linkEvents(b.dev, b.n, 2);
    const names = { isStep: Uint8Array.from(dicts.names.list, (_, c) => (c === signup ? 1 : 0)), trial };
    const ev = newBatchEvents();
    for (const d of [0, 1]) {
      batchEvents(b, lists, d, ev);
      funnelSteps(steps, b, ev, d, dicts.appEnvs[0], names, st);
    }

    const row = (f: Field[]) => [f[3]?.toString(), int4(f[4]), hex(f[5])?.slice(0, 2), int8s(f[6])];
    assert.deepEqual(copyRows(steps.stored.finish()).map(row), [['signup', 3, '01', [10, 30]]]);
    assert.deepEqual(copyRows(steps.fresh(0).finish()).map(row), [
      ['$trial', 5, '01', [60]],
      ['signup', 3, '02', [5]],
      ['signup', 5, '01', [50]],
    ]);
  });
});
