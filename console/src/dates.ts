/** Calendar arithmetic on YYYY-MM-DD (no timezone: the API's dates are already the app's days). */
export function addDays(date: string, n: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}
