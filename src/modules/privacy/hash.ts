import { createHmac } from 'node:crypto';

/** A subject of a deletion request: a user id, or an install's anonymous id. */
export type Subject = { user_id: string } | { anon_id: string };
export type SubjectKind = 'user_id' | 'anon_id';

export const kindOf = (s: Subject): SubjectKind => ('user_id' in s ? 'user_id' : 'anon_id');
/** Anonymous ids are UUIDs, compared lowercase everywhere (ingestion stores them so). */
export const valueOf = (s: Subject): string => ('user_id' in s ? s.user_id : s.anon_id.toLowerCase());

/**
 * The keyed hash that names a subject wherever a clear identifier must not be kept (receipts,
 * suppressions): HMAC-SHA256 under the app's own key, over the kind and the value.
 */
export function subjectHash(key: Buffer, kind: SubjectKind, value: string): string {
  return createHmac('sha256', key).update(`${kind}:${value}`).digest('hex');
}
