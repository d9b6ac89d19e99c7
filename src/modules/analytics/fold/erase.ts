import type { Conn } from '../../../db/pool.js';
import type { Scope } from '../../../types/domain.js';
import { bumpAppVersions, dropAppAnswers } from '../funnel-store.js';
import { type HistogramCells, leaveAll } from './device-cells.js';
import { UNKNOWN } from './deltas.js';
import { ALL, lockState } from './round.js';
import {
  APPLY_HIST_DELTAS,
  CREATE_HIST_DELTAS,
  DROP_HIST_DELTAS,
  ERASE_DEVICE_DELTAS,
  ERASE_LOAD_DEVICES,
  ERASE_ROWS,
} from './sql.js';

/** What an erasure removed: rows of each kind (devices, sessions, purchases, funnel steps). */
export interface ErasedRows {
  devices: number;
  sessions: number;
  purchases: number;
  steps: number;
}

type Columns = Record<string, (string | number)[]>;

/**
 * Collects the erased devices' cells as columns of the delta tables (erase.ts writes them with one
 * statement each). A segment is an environment, platform and country.
 */
class ErasedCells implements HistogramCells {
  readonly segs: { environment: string; platform: string; country: string }[] = [];
  readonly active: Columns = cols('day', 'gap', 'n');
  readonly flag: Columns = cols('day', 'flag', 'gap', 'n');
  readonly cohort: Columns = cols('day', 'ret_mask', 'n');
  readonly onb: Columns = cols('day', 'onb_off', 'n');

  active1(seg: number, day: number, gap: number, n: number): void {
    push(this.active, seg, { day, gap, n });
  }
  flag1(seg: number, bit: number, day: number, gap: number, n: number): void {
    push(this.flag, seg, { day, flag: 1 << bit, gap, n });
  }
  cohort1(seg: number, day: number, mask: number, n: number): void {
    push(this.cohort, seg, { day, ret_mask: mask, n });
  }
  onb1(seg: number, day: number, offset: number, n: number): void {
    push(this.onb, seg, { day, onb_off: offset, n });
  }

  /** The statement's array arguments: environment, day, platform, country, then the cell's own columns. */
  args(c: Columns): (string | number)[][] {
    const s = c.seg.map((i) => this.segs[i as number]);
    const rest = Object.keys(c).filter((k) => k !== 'seg' && k !== 'day');
    return [
      s.map((x) => x.environment),
      c.day,
      s.map((x) => x.platform),
      s.map((x) => x.country),
      ...rest.map((k) => c[k]),
    ];
  }
}

const cols = (...names: string[]): Columns => Object.fromEntries(['seg', ...names].map((n) => [n, []]));

function push(c: Columns, seg: number, v: Record<string, number>): void {
  c.seg.push(seg);
  for (const [k, x] of Object.entries(v)) c[k].push(x);
}

/**
 * Takes devices out of the app's rollups (a privacy erasure, docs/privacy.md): each device's
 * contribution leaves every histogram cell (computed from its stored days by the fold's own cell
 * rules, device-cells.ts `leaveAll`; its sessions and purchases by the fold's delta statements),
 * then its rows go. The rollups then equal a fold of the app's other devices' events, without a
 * rebuild. Runs in the caller's transaction, under every partition's state row lock (no fold
 * writes meanwhile).
 *
 * `folded`: the erasure waits for the fold to pass this seq (the device's last deleted event): a
 * round that read those events before they were deleted has then committed, or will find its
 * watermark moved and fold nothing. Below it, answers null and erases nothing (fold, then retry).
 */
export async function eraseDevices(
  tx: Conn,
  scope: Scope,
  anonIds: string[],
  folded: number,
): Promise<ErasedRows | null> {
  const marks = await lockState(tx, ALL);
  if (marks.some((w) => w < folded)) return null;
  const params = [scope.tenantId, scope.appId, anonIds];
  const devices = await tx.query<{
    environment: string;
    platform: string | null;
    country: string | null;
    first_day: number;
    days: number[];
  }>(ERASE_LOAD_DEVICES, params);
  const cells = new ErasedCells();
  for (const d of devices.rows) {
    const seg = cells.segs.push({
      environment: d.environment,
      platform: d.platform ?? UNKNOWN,
      country: d.country ?? UNKNOWN,
    });
    leaveAll(cells, Int32Array.from(d.days), 0, d.days.length, d.first_day, seg - 1);
  }
  await tx.query(CREATE_HIST_DELTAS);
  for (const [table, sql] of Object.entries(ERASE_DEVICE_DELTAS)) {
    const c = cells[table as keyof typeof ERASE_DEVICE_DELTAS];
    if (c.n.length > 0) await tx.query(sql, [scope.tenantId, scope.appId, ...cells.args(c)]);
  }
  const counts: number[] = [];
  for (const sql of ERASE_ROWS) counts.push((await tx.query<{ n: number }>(sql, params)).rows[0].n);
  const [sessions, purchases, steps, gone] = counts;
  for (const sql of APPLY_HIST_DELTAS) await tx.query(sql);
  await tx.query(DROP_HIST_DELTAS);
  // Stored funnel answers of the app counted the devices: forgotten, so the next read computes them
  // without them (a moved version alone lets a young answer be served a while, funnel-answers.ts).
  await dropAppAnswers(tx, scope);
  const envs = [...new Set(devices.rows.map((d) => d.environment))];
  await bumpAppVersions(
    tx,
    envs.map((environment) => ({ tenantId: scope.tenantId, appId: scope.appId, environment })),
  );
  return { devices: gone, sessions, purchases, steps };
}
