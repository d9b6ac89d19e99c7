import { FLAG } from './fold-sql.js';

/**
 * The flag histogram's in-order path. an_devices keeps, per flag bit, the device's latest day with
 * that bit (flag_last_<bit>). When every day of a batch that gains bit b for a device lies after
 * that day, no stored day's gap changes: the new flagged days enter the histogram with their gap
 * to the previous one (earlier in the batch, or the stored latest). Any other device with new bits
 * ("flag_slow", or a device whose platform/country moved) takes the full path (flagDelta in
 * fold-sql.ts: leave with its whole history, re-enter recomputed).
 */

const BITS: readonly number[] = Object.values(FLAG);

/** an_dd grouped per device: first and last day of the batch gaining each bit. */
export const FLAG_NEW_AGG = BITS.map(
  (b) => `min(day) FILTER (WHERE flags & ~old_flags & ${b} <> 0) AS nmin_${b}, max(day) FILTER (WHERE flags & ~old_flags & ${b} <> 0) AS nmax_${b}`,
).join(',\n               ');

/** an_dev columns from the stored device `o` and the batch aggregate `c`. */
export const FLAG_DEV_COLS = [
  ...BITS.map((b) => `o.flag_last_${b} AS old_fl_${b}, greatest(o.flag_last_${b}, c.nmax_${b}) AS flag_last_${b}`),
  `(${BITS.map((b) => `c.nmin_${b} <= o.flag_last_${b}`).join(' OR ')}) IS TRUE AS flag_slow`,
].join(',\n       ');

export const FLAG_LAST_COLS = BITS.map((b) => `flag_last_${b}`);

/** Flag-histogram rows of the in-order devices' newly flagged days; `moved` is the moved-device condition on `m`. */
export function flagFast(moved: string): string {
  const oldLast = `CASE f.bit ${BITS.map((b) => `WHEN ${b} THEN m.old_fl_${b}`).join(' ')} END`;
  return `
INSERT INTO an_d_flag (tenant_id, app_id, environment, day, platform, country, flag, gap, n)
SELECT tenant_id, app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), bit,
       coalesce(day - prev, 100000), count(*)::int
  FROM (SELECT v.tenant_id, v.app_id, v.environment, v.day, m.platform, m.country, f.bit,
               coalesce(lag(v.day) OVER (PARTITION BY v.anon_id, v.app_id, v.environment, f.bit ORDER BY v.day), ${oldLast}) AS prev
          -- Only the days gaining a bit are multiplied by the bits (most device-days have none).
          FROM (SELECT * FROM an_dd WHERE flags & ~old_flags <> 0) v
          JOIN an_dev m ON m.app_id = v.app_id AND m.environment = v.environment AND m.anon_id = v.anon_id
         CROSS JOIN unnest('{${BITS.join(',')}}'::int[]) AS f(bit)
         WHERE v.flags & ~v.old_flags & f.bit <> 0 AND NOT m.flag_slow AND NOT (${moved})) z
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`;
}
