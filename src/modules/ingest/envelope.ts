import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { findJsonViolation } from '../../http/json-bounds.js';

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const Uuid = Type.String({ pattern: UUID, maxLength: 36 });
const Short = (max = 64) => Type.String({ minLength: 1, maxLength: max });
const Opt = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

export const MAX_EVENT_BYTES = 32 * 1024;
export const MAX_FUTURE_MS = 24 * 3600 * 1000;
export const MAX_PAST_MS = 90 * 24 * 3600 * 1000;

/** The SDK event envelope, schema_version 1. Unknown fields pass through untouched. */
export const EventEnvelope = Type.Object(
  {
    schema_version: Type.Literal(1),
    event_id: Uuid,
    event_name: Type.String({ minLength: 1, maxLength: 128 }),
    ts_ms: Type.Number({ minimum: 0, maximum: 1e14 }),
    user: Type.Object({ anon_id: Uuid, user_id: Opt(Short(256)) }),
    device: Type.Object({
      platform: Type.Union([Type.Literal('ios'), Type.Literal('android')]),
      os: Short(),
      app_version: Short(),
      sdk_version: Short(),
      framework: Type.Optional(
        Type.Union([Type.Literal('native'), Type.Literal('flutter'), Type.Literal('react_native')]),
      ),
      framework_version: Opt(Short()),
      locale: Short(35),
      country: Type.String({ pattern: '^[A-Za-z]{2}$' }),
    }),
    context: Type.Object({
      session_id: Uuid,
      screen: Opt(Short(256)),
      experiment_exposures: Type.Optional(
        Type.Array(Type.Object({ exp: Short(128), variant: Short(128) }), { maxItems: 50 }),
      ),
      client_seq: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    }),
    properties: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.Unknown())),
    privacy: Type.Object({ consent: Type.Object({ analytics: Type.Boolean() }) }),
  },
  { $id: 'EventEnvelope', description: 'SDK event, schema_version 1. Unknown fields are kept and ignored.' },
);

export type Envelope = Static<typeof EventEnvelope>;

const checker = TypeCompiler.Compile(EventEnvelope);

export interface EventError {
  index: number;
  event_id?: string;
  code: 'missing_field' | 'invalid_field' | 'event_too_large' | 'ts_in_future' | 'ts_too_old';
  /** JSON pointer of the offending field inside the event ('' for the event as a whole). */
  path: string;
  message: string;
}

export type CheckResult = { ok: true; event: Envelope; json: string } | { ok: false; error: EventError };

/** Validates one event; a valid one comes back with its JSON text (measured for the size limit, reused for storage). */
export function checkEvent(raw: unknown, index: number, now: number): CheckResult {
  const eventId =
    raw && typeof raw === 'object' && typeof (raw as { event_id?: unknown }).event_id === 'string'
      ? String((raw as { event_id: string }).event_id).slice(0, 64)
      : undefined;
  const base = { index, ...(eventId ? { event_id: eventId } : {}) };
  const fail = (code: EventError['code'], path: string, message: string): CheckResult => ({
    ok: false,
    error: { ...base, code, path, message: path ? `${path}: ${message}` : message },
  });
  // Bounds and the text rule first: nothing below (schema check, JSON.stringify, PostgreSQL) then
  // meets a NUL, a lone surrogate or hostile nesting.
  const violation = findJsonViolation(raw);
  if (violation) return fail('invalid_field', violation.path, violation.message);
  if (!checker.Check(raw)) {
    const e = checker.Errors(raw).First()!;
    const missing =
      e.type === ValueErrorType.ObjectRequiredProperty || (e.value === undefined && e.type !== ValueErrorType.Object);
    return fail(missing ? 'missing_field' : 'invalid_field', e.path, missing ? 'is required' : e.message);
  }
  const ev = raw as Envelope;
  const json = JSON.stringify(ev);
  // Byte length only matters when the character count could be over the limit.
  if (json.length > MAX_EVENT_BYTES / 4 && Buffer.byteLength(json) > MAX_EVENT_BYTES)
    return fail('event_too_large', '', `event exceeds ${MAX_EVENT_BYTES} bytes`);
  if (ev.ts_ms > now + MAX_FUTURE_MS) return fail('ts_in_future', '/ts_ms', 'more than 24 h in the future');
  if (ev.ts_ms < now - MAX_PAST_MS) return fail('ts_too_old', '/ts_ms', 'more than 90 days in the past');
  return { ok: true, event: ev, json };
}
