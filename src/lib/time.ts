/** Calendar arithmetic in an IANA time zone (app days, ad-account stats days), DST aware. */
function parts(ms: number, tz: string) {
  const f = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return { day: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}:${p.second}` };
}

export const localDay = (ms: number, tz: string) => parts(ms, tz).day;

export const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

function offsetMinutes(ms: number, tz: string): number {
  const p = parts(ms, tz);
  return Math.round((Date.parse(`${p.day}T${p.time}Z`) - Math.floor(ms / 1000) * 1000) / 60_000);
}

/** Local midnight that starts `day` in `tz`, as ISO-8601 with that instant's UTC offset (DST aware). */
export function midnightIso(day: string, tz: string): string {
  const guess = Date.parse(`${day}T00:00:00Z`);
  let off = offsetMinutes(guess, tz);
  off = offsetMinutes(guess - off * 60_000, tz);
  const a = Math.abs(off);
  return `${day}T00:00:00.000${off < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

/** Whether the runtime knows this IANA zone name. */
export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
