/** Calendar-date arithmetic on 'YYYY-MM-DD' strings (no time of day, no timezone). */

const DAY_MS = 86_400_000;

const toMs = (d: string) => Date.UTC(+d.slice(0, 4), +d.slice(5, 7) - 1, +d.slice(8, 10));
const fromMs = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function isDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const ms = toMs(s);
  return Number.isFinite(ms) && fromMs(ms) === s;
}

export const addDays = (d: string, n: number) => fromMs(toMs(d) + n * DAY_MS);
export const diffDays = (a: string, b: string) => Math.round((toMs(b) - toMs(a)) / DAY_MS);

/** Adds calendar months; a day past the target month's end clamps to its last day. */
export function addMonths(d: string, n: number): string {
  const y = +d.slice(0, 4);
  const m = +d.slice(5, 7) - 1 + n;
  const ty = y + Math.floor(m / 12);
  const tm = ((m % 12) + 12) % 12;
  const last = new Date(Date.UTC(ty, tm + 1, 0)).getUTCDate();
  return fromMs(Date.UTC(ty, tm, Math.min(+d.slice(8, 10), last)));
}

/** Monday of the ISO week containing d. */
export function mondayOf(d: string): string {
  const wd = (new Date(toMs(d)).getUTCDay() + 6) % 7;
  return addDays(d, -wd);
}

export const monthStart = (d: string) => `${d.slice(0, 7)}-01`;

export type Granularity = 'daily' | 'weekly' | 'monthly';

/** Buckets of the range, clipped to it, each dated by its day / Monday / 1st. */
export function buckets(start: string, end: string, g: Granularity): { date: string; s: string; e: string }[] {
  const out: { date: string; s: string; e: string }[] = [];
  let cur = start;
  while (cur <= end) {
    const date = g === 'daily' ? cur : g === 'weekly' ? mondayOf(cur) : monthStart(cur);
    const next = g === 'daily' ? addDays(cur, 1) : g === 'weekly' ? addDays(date, 7) : addMonths(date, 1);
    const e = addDays(next, -1) < end ? addDays(next, -1) : end;
    out.push({ date, s: cur, e });
    cur = next;
  }
  return out;
}

export type CompareMode = 'previous_period' | 'previous_month' | 'previous_year';

/** The comparison window of [start, end] (decisions.md 4). */
export function compareWindow(start: string, end: string, mode: CompareMode): { start: string; end: string } {
  if (mode === 'previous_period') {
    const n = diffDays(start, end) + 1;
    return { start: addDays(start, -n), end: addDays(start, -1) };
  }
  const months = mode === 'previous_month' ? -1 : -12;
  return { start: addMonths(start, months), end: addMonths(end, months) };
}
