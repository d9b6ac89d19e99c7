import { createHash } from 'node:crypto';

/**
 * The ENCRYPTION_KEY of every instance a test starts on one database, in-process or spawned: derived
 * from the database, so they share it as production instances must (another key is refused at start).
 */
export const testEncryptionKey = (databaseUrl: string): Buffer => createHash('sha256').update(databaseUrl).digest();

/**
 * Every test client is 127.0.0.1: one address signs up hundreds of tenants. The throttle's own tests
 * (test/auth-throttle.test.ts) set these back to small numbers.
 */
export const ONE_CLIENT_ADDRESS = { SIGNUP_ADDRESS_LIMIT: '10000', SIGN_IN_ADDRESS_FAILURES: '10000' };
