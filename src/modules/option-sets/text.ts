import { storableText } from '../../http/json-bounds.js';

// NUL and lone surrogates cannot be stored or compared by PostgreSQL (text or jsonb): such input
// is refused up front with a 400, never left to fail in the database as a 500 (src/http/json-bounds.ts).
export const unstorable = (s: string): boolean => !storableText(s);
