import { CopyWriter } from '../../../db/copy-writer.js';
import type { AppEnv, Bucket, RoundDicts } from './events.js';
import { STEP_TIMES_KEPT as STEP_TIMES } from '../definitions.js';
import { hasDay } from './device-days.js';
import { grow, growF, orderByPrefix, sortPrefix } from './order.js';

/**
 * Funnel material of a partition's fold (an_steps): per device, event name and day, the earliest
 * STEP_TIMES_KEPT times of that event, enough to find "the earliest step-k event at or after step k-1" for any
 * realistic funnel. Only event names some funnel uses are kept (a trial purchase also as '$trial').
 * A row can only be stored already for a device-day the device had before the batch: those are
 * merged by an upsert (`stored`); the others are plain inserts (`fresh`), written in key order
 * (event name, day, device) after the pass.
 */
export class StepRows {
  readonly stored = new CopyWriter();
  /** The current device's step events. */
  private n = 0;
  private name: Int32Array = new Int32Array(64);
  private day: Int32Array = new Int32Array(64);
  private ts: Float64Array = new Float64Array(64);
  private order: Int32Array = new Int32Array(64);
  // New rows, until they are written in key order.
  private count = 0;
  private dev: Int32Array = new Int32Array(1024);
  private rowName: Int32Array = new Int32Array(1024);
  private rowDay: Int32Array = new Int32Array(1024);
  private from: Int32Array = new Int32Array(1024);
  private len: Int32Array = new Int32Array(1024);
  private times: Float64Array = new Float64Array(1024);
  private used = 0;
  private minDay = 2147483647;

  /** The order of the current device's step events: name, day, time (one function for the pass, not one per device). */
  private readonly less = (x: number, y: number): boolean => {
    const { name, day, ts } = this;
    return name[x] < name[y] || (name[x] === name[y] && (day[x] < day[y] || (day[x] === day[y] && ts[x] < ts[y])));
  };

  constructor(
    private readonly b: Bucket,
    private readonly dicts: RoundDicts,
  ) {}

  /** A step event of the current device. */
  add(name: number, day: number, ts: number): void {
    if (this.n === this.name.length) {
      this.name = grow(this.name);
      this.day = grow(this.day);
      this.ts = growF(this.ts);
      this.order = grow(this.order);
    }
    this.name[this.n] = name;
    this.day[this.n] = day;
    this.ts[this.n++] = ts;
  }

  /** Groups device d's step events into rows; `stored` [from, to): the days it had before (packed, sorted). */
  endDevice(d: number, ae: AppEnv, stored: Int32Array, from: number, to: number): void {
    const { n, name, day, ts, order } = this;
    this.n = 0;
    if (n === 0) return;
    for (let e = 0; e < n; e++) order[e] = e;
    sortPrefix(order, n, this.less);
    for (let g = 0; g < n; ) {
      const first = order[g];
      let e = g + 1;
      while (e < n && name[order[e]] === name[first] && day[order[e]] === day[first]) e++;
      const cnt = Math.min(STEP_TIMES, e - g);
      if (this.used + cnt > this.times.length) this.times = growF(this.times, this.used + cnt);
      for (let y = 0; y < cnt; y++) this.times[this.used + y] = ts[order[g + y]];
      if (hasDay(stored, from, to, day[first])) {
        this.stored
          .row(7)
          .raw(ae.head3)
          .raw(this.dicts.names.fields[name[first]])
          .date(day[first])
          .uuid(this.b.devices.bytes, d * 16)
          .tsArray(this.times, this.used, this.used + cnt);
      } else this.keep(d, name[first], day[first], cnt);
      g = e;
    }
  }

  private keep(d: number, name: number, day: number, cnt: number): void {
    if (this.count === this.dev.length) {
      this.dev = grow(this.dev);
      this.rowName = grow(this.rowName);
      this.rowDay = grow(this.rowDay);
      this.from = grow(this.from);
      this.len = grow(this.len);
    }
    const r = this.count++;
    this.dev[r] = d;
    this.rowName[r] = name;
    this.rowDay[r] = day;
    this.from[r] = this.used;
    this.len[r] = cnt;
    this.used += cnt;
    if (day < this.minDay) this.minDay = day;
  }

  /** The new rows (an_steps), in key order: event name (byte order), day, device. */
  fresh(rotation: number): CopyWriter {
    const names = this.dicts.names.list;
    const rank = new Int32Array(names.length);
    names
      .map((s, c) => [s, c] as const)
      .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
      .forEach(([, c], r) => (rank[c] = r));
    const order = orderByPrefix(
      this.count,
      (x) => ((rank[this.rowName[x]] & 63) * 1024 + Math.min(1023, this.rowDay[x] - this.minDay)) * 65536,
      rotation,
    );
    const w = new CopyWriter(this.count * 80 + this.used * 12);
    for (let y = 0; y < this.count; y++) {
      const r = order[y];
      const d = this.dev[r];
      w.row(7)
        .raw(this.dicts.appEnvs[this.b.devices.tags[d]].head3)
        .raw(this.dicts.names.fields[this.rowName[r]])
        .date(this.rowDay[r])
        .uuid(this.b.devices.bytes, d * 16)
        .tsArray(this.times, this.from[r], this.from[r] + this.len[r]);
    }
    return w;
  }
}
