// NUL and lone surrogates cannot be stored or compared by PostgreSQL (text or jsonb): such input
// is refused up front with a 400, never left to fail in the database as a 500.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const unstorable = (s: string): boolean => UNSTORABLE.test(s);
