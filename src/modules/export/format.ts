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

/** received_at as ISO 8601 UTC with milliseconds, formatted by Postgres so Node never builds a Date per row. */
export const RECEIVED_AT_SQL = `to_char(e.received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const csvHeader = () => stringify([CSV_COLUMNS as unknown as string[]]);

const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV cell: missing/null empty, objects as JSON, other scalars as JS prints them; RFC 4180 quoting. */
function cell(v: unknown): string {
  if (typeof v !== 'string') {
    if (v === undefined || v === null) return '';
    v = typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  const s = v as string;
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** A JSON-valued cell (properties, exposures): JSON text whenever the key is present, null included. */
const jsonCell = (v: unknown): string => (v === undefined ? '' : cell(JSON.stringify(v)));

/**
 * One CSV line (with its newline) for a stored envelope (text) and its received_at, in CSV_COLUMNS
 * order: one JSON.parse (about half of the ~5 us per row), then the cells. The per-event hot path
 * of CSV downloads; test/export-format.test.ts checks it against csv-stringify.
 */
export function csvLine(payload: string, receivedAt: string): string {
  const e = JSON.parse(payload) as Record<string, any>;
  const u = e.user;
  const d = e.device;
  const c = e.context;
  const pv = e.privacy;
  return (
    `${cell(e.schema_version)},${cell(e.event_id)},${cell(e.event_name)},${cell(e.ts_ms)},${cell(u?.anon_id)},${cell(u?.user_id)},` +
    `${cell(d?.platform)},${cell(d?.os)},${cell(d?.app_version)},${cell(d?.sdk_version)},${cell(d?.framework)},${cell(d?.framework_version)},` +
    `${cell(d?.locale)},${cell(d?.country)},${cell(c?.session_id)},${cell(c?.screen)},${jsonCell(c?.experiment_exposures)},${cell(c?.client_seq)},` +
    `${jsonCell(e.properties)},${cell(pv?.consent?.analytics)},${cell(receivedAt)}\n`
  );
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
