import { stringify } from 'csv-stringify/sync';

/**
 * CSV columns: the envelope's fields flattened with dots (decisions.md section 7), `properties`
 * and the exposure list as JSON strings, then `received_at`. Fixed, so every file of every app
 * has the same header; envelope fields outside schema_version 1 are left out of CSV (JSON keeps them).
 */
export const CSV_COLUMNS = [
  'schema_version',
  'event_id',
  'event_name',
  'ts_ms',
  'user.anon_id',
  'user.user_id',
  'device.platform',
  'device.os',
  'device.app_version',
  'device.sdk_version',
  'device.framework',
  'device.framework_version',
  'device.locale',
  'device.country',
  'context.session_id',
  'context.screen',
  'context.experiment_exposures',
  'context.client_seq',
  'properties',
  'privacy.consent.analytics',
  'received_at',
] as const;

const JSON_VALUED = new Set(['properties', 'context.experiment_exposures']);

/** received_at as ISO 8601 UTC with milliseconds, formatted by Postgres so Node never builds a Date per row. */
export const RECEIVED_AT_SQL = `to_char(e.received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const csvHeader = () => stringify([CSV_COLUMNS as unknown as string[]]);

const NEEDS_QUOTES = /[",\r\n]/;

/** Reads one column's value out of a parsed envelope: nested objects by dotted path. */
const ACCESSORS: ((e: Record<string, any>, receivedAt: string) => unknown)[] = CSV_COLUMNS.map((c) => {
  if (c === 'received_at') return (_e, r) => r;
  const [a, b, d] = c.split('.');
  if (JSON_VALUED.has(c)) return b ? (e) => { const v = e[a]?.[b]; return v === undefined ? undefined : JSON.stringify(v); } : (e) => (e[a] === undefined ? undefined : JSON.stringify(e[a]));
  if (d) return (e) => e[a]?.[b]?.[d];
  if (b) return (e) => e[a]?.[b];
  return (e) => e[a];
});

function csvField(v: unknown): string {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/**
 * One CSV chunk for a batch of stored envelopes (text) with their received_at. RFC 4180 quoting
 * exactly as csv-stringify's defaults produce it (quote a field holding a comma, quote, CR or LF;
 * double the quotes), inlined because csv-stringify measured 4-5x slower than the rest of the
 * download pipeline; the tests check the output against csv-stringify and csv-parse.
 */
export function csvChunk(rows: { p: string; r: string }[]): string {
  let out = '';
  for (const row of rows) {
    const e = JSON.parse(row.p) as Record<string, any>;
    for (let i = 0; i < ACCESSORS.length; i++) {
      if (i > 0) out += ',';
      out += csvField(ACCESSORS[i](e, row.r));
    }
    out += '\n';
  }
  return out;
}

/**
 * One exported event object as JSON text: the stored envelope text plus received_at, spliced
 * without parsing (the envelope is stored compact, as received). Parsed only in the rare case
 * that the envelope itself already carries a received_at key, which ours must replace.
 */
export function eventJson(payload: string, receivedAt: string): string {
  const body = payload.trimEnd();
  if (body.includes('"received_at"')) {
    const o = JSON.parse(body) as Record<string, unknown>;
    o.received_at = receivedAt;
    return JSON.stringify(o);
  }
  const inner = body.slice(0, -1).trimEnd();
  return inner.endsWith('{') ? `${inner}"received_at":"${receivedAt}"}` : `${inner},"received_at":"${receivedAt}"}`;
}

/** The exported event object (paged read). */
export function eventObject(payload: string, receivedAt: string): Record<string, unknown> {
  const o = JSON.parse(payload) as Record<string, unknown>;
  o.received_at = receivedAt;
  return o;
}
