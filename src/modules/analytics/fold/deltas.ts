import { CopyWriter } from '../../../db/copy-writer.js';
import { FLAG_COUNT } from '../definitions.js';
import type { RoundDicts } from './events.js';

/**
 * The histogram changes one partition's fold collects (cell -> summed change), written to the
 * delta tables at the end (sql.ts APPLY_HIST_DELTAS adds them to the cells in key order).
 *
 * A cell's segment (app environment, platform, country; NULL counts as 'unknown') is interned
 * first; the rest of the cell key is packed with it into one number (all parts are small
 * non-negative integers: days since 2000-01-01, gaps, masks). A part out of range takes a string
 * key instead, so no value can collide with another.
 */

/** The platform or country of a cell whose value is NULL (sql.ts writes the same). */
export const UNKNOWN = 'unknown';

export interface Seg {
  appEnv: number;
  platform: string;
  country: string;
}

/** Parts `a` (`ab` bits) and `b` (`bb` bits) packed after the segment, or a string key when out of range. */
export function key2(seg: number, a: number, ab: number, b: number, bb: number): number | string {
  const ma = 2 ** ab;
  const mb = 2 ** bb;
  if (a >= 0 && a < ma && b >= 0 && b < mb && seg < 2 ** (53 - ab - bb)) return (seg * ma + a) * mb + b;
  return `${seg}|${a}|${b}`;
}

export function unpack2(k: number | string, ab: number, bb: number): [number, number, number] {
  if (typeof k === 'string') {
    const [seg, a, b] = k.split('|').map(Number);
    return [seg, a, b];
  }
  const mb = 2 ** bb;
  const ma = 2 ** ab;
  const b = k % mb;
  const rest = (k - b) / mb;
  const a = rest % ma;
  return [(rest - a) / ma, a, b];
}

// Bits of the packed parts: days (since 2000-01-01, up to the year 2179), gaps (<= 100000),
// retention masks (7 bits). A flag histogram's cells are kept in one map per flag bit.
const DAY = 16;
const GAP = 17;
const MASK = 7;

function add(m: Map<number | string, number>, k: number | string, v: number): void {
  m.set(k, (m.get(k) ?? 0) + v);
}

type Cells = Map<number | string, number>;

export type DeltaTable = 'an_d_active' | 'an_d_flag' | 'an_d_session' | 'an_d_cohort' | 'an_d_onb';

export class Deltas {
  readonly segs: Seg[] = [];
  private segCodes = new Map<number, number>();
  private readonly unknown: number;
  private active: Cells = new Map();
  private flags: Cells[] = Array.from({ length: FLAG_COUNT }, () => new Map());
  /** Session cells: key -> slot of their count and summed duration in `sessSums`. */
  private sessSlots: Cells = new Map();
  private sessSums = new Float64Array(1024);
  private cohort: Cells = new Map();
  private onb: Cells = new Map();

  constructor(private readonly dicts: RoundDicts) {
    this.unknown = dicts.strings.code(UNKNOWN);
  }

  /** The segment of an app environment and platform / country codes (-1: NULL). */
  seg(appEnv: number, plat: number, ctry: number): number {
    const p = plat < 0 ? this.unknown : plat;
    const c = ctry < 0 ? this.unknown : ctry;
    const k = (appEnv * 65536 + p) * 65536 + c;
    if (p >= 65536 || c >= 65536 || k > Number.MAX_SAFE_INTEGER)
      throw new Error('analytics fold: too many distinct platforms or countries in one round');
    let s = this.segCodes.get(k);
    if (s === undefined) {
      s = this.segs.length;
      this.segCodes.set(k, s);
      const list = this.dicts.strings.list;
      this.segs.push({ appEnv, platform: list[p], country: list[c] });
    }
    return s;
  }

  active1(seg: number, day: number, gap: number, n: number): void {
    add(this.active, key2(seg, day, DAY, gap, GAP), n);
  }

  /** `bit`: the flag's bit index (definitions.ts FLAGS). */
  flag1(seg: number, bit: number, day: number, gap: number, n: number): void {
    add(this.flags[bit], key2(seg, day, DAY, gap, GAP), n);
  }

  session1(seg: number, startDay: number, endDay: number, n: number, seconds: number): void {
    const k = key2(seg, startDay, DAY, endDay, DAY);
    let slot = this.sessSlots.get(k);
    if (slot === undefined) {
      slot = this.sessSlots.size;
      this.sessSlots.set(k, slot);
      if (2 * slot + 2 > this.sessSums.length) {
        const next = new Float64Array(this.sessSums.length * 2);
        next.set(this.sessSums);
        this.sessSums = next;
      }
    }
    this.sessSums[2 * slot] += n;
    this.sessSums[2 * slot + 1] += seconds;
  }

  cohort1(seg: number, firstDay: number, mask: number, n: number): void {
    add(this.cohort, key2(seg, firstDay, DAY, mask, MASK), n);
  }

  onb1(seg: number, firstDay: number, offset: number, n: number): void {
    add(this.onb, key2(seg, firstDay, DAY, offset, DAY), n);
  }

  /**
   * COPY payloads for the delta tables (tenant_id, app_id, environment, the cell key's columns,
   * the sums: an_d_active day, platform, country, gap, n; an_d_flag day, platform, country, flag,
   * gap, n; an_d_session start_day, end_day, platform, country, n, dur; an_d_cohort first_day,
   * platform, country, ret_mask, n; an_d_onb first_day, platform, country, onb_off, n). Zero
   * changes are left out.
   */
  writers(): Record<DeltaTable, CopyWriter> {
    const row = (w: CopyWriter, fields: number, seg: number, first: number): Seg => {
      const s = this.segs[seg];
      const ae = this.dicts.appEnvs[s.appEnv];
      w.row(fields).raw(ae.head3).date(first);
      return s;
    };
    const active = new CopyWriter();
    for (const [k, n] of this.active) {
      if (n === 0) continue;
      const [seg, day, gap] = unpack2(k, DAY, GAP);
      const s = row(active, 8, seg, day);
      active.text(s.platform).text(s.country).int4(gap).int4(n);
    }
    const flag = new CopyWriter();
    this.flags.forEach((cells, bit) => {
      for (const [k, n] of cells) {
        if (n === 0) continue;
        const [seg, day, gap] = unpack2(k, DAY, GAP);
        const s = row(flag, 9, seg, day);
        flag
          .text(s.platform)
          .text(s.country)
          .int4(1 << bit)
          .int4(gap)
          .int4(n);
      }
    });
    const session = new CopyWriter();
    for (const [k, slot] of this.sessSlots) {
      const [n, dur] = [this.sessSums[2 * slot], this.sessSums[2 * slot + 1]];
      if (n === 0 && dur === 0) continue;
      const [seg, sd, ed] = unpack2(k, DAY, DAY);
      const s = row(session, 9, seg, sd);
      session.date(ed).text(s.platform).text(s.country).int4(n).float8(dur);
    }
    const perDevice = (cells: Cells, bits: number) => {
      const w = new CopyWriter();
      for (const [k, n] of cells) {
        if (n === 0) continue;
        const [seg, fd, v] = unpack2(k, DAY, bits);
        const s = row(w, 8, seg, fd);
        w.text(s.platform).text(s.country).int4(v).int4(n);
      }
      return w;
    };
    return {
      an_d_active: active,
      an_d_flag: flag,
      an_d_session: session,
      an_d_cohort: perDevice(this.cohort, MASK),
      an_d_onb: perDevice(this.onb, DAY),
    };
  }
}
