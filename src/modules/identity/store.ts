import type { Queryable } from '../../db/pool.js';

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  password_hash: string | null;
}

export interface SigningKeyRow {
  kid: string;
  alg: string;
  private_jwk: Record<string, unknown>;
  public_jwk: Record<string, unknown>;
}

export function createIdentityStore(db: Queryable) {
  return {
    async findUserByEmail(email: string): Promise<UserRow | null> {
      const { rows } = await db.query<UserRow>(
        'SELECT id, email, name, password_hash FROM users WHERE lower(email) = lower($1)',
        [email],
      );
      return rows[0] ?? null;
    },
    async findUserById(id: string): Promise<UserRow | null> {
      const { rows } = await db.query<UserRow>('SELECT id, email, name, password_hash FROM users WHERE id = $1', [id]);
      return rows[0] ?? null;
    },
    /** Returns null when the email is already registered. */
    async insertUser(email: string, name: string | null, passwordHash: string | null): Promise<UserRow | null> {
      const { rows } = await db.query<UserRow>(
        `INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3)
         ON CONFLICT ((lower(email))) DO NOTHING RETURNING id, email, name, password_hash`,
        [email, name, passwordHash],
      );
      return rows[0] ?? null;
    },
    async getPlatformSetting<T>(key: string): Promise<T | undefined> {
      const { rows } = await db.query<{ value: T }>('SELECT value FROM platform_settings WHERE key = $1', [key]);
      return rows[0]?.value;
    },
    async setPlatformSetting(key: string, value: unknown): Promise<void> {
      await db.query(
        `INSERT INTO platform_settings (key, value) VALUES ($1, $2::jsonb)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
        [key, JSON.stringify(value)],
      );
    },
    async listSigningKeys(): Promise<SigningKeyRow[]> {
      const { rows } = await db.query<SigningKeyRow>(
        'SELECT kid, alg, private_jwk, public_jwk FROM signing_keys ORDER BY generation',
      );
      return rows;
    },
    /** Several instances may start together: the unique generation lets one insert win; the others read it. */
    async insertSigningKeyIfNone(key: SigningKeyRow): Promise<void> {
      await db.query(
        `INSERT INTO signing_keys (kid, generation, alg, private_jwk, public_jwk) VALUES ($1, 1, $2, $3, $4)
         ON CONFLICT (generation) DO NOTHING`,
        [key.kid, key.alg, key.private_jwk, key.public_jwk],
      );
    },
    /** Admits an attempt under every key, or answers the ms until the most closed one opens (migration 027). */
    async throttleAdmit(
      keys: { key: string; threshold: number }[],
      windowMs: number,
      lockMs: number,
      lockMaxMs: number,
    ): Promise<number> {
      const { rows } = await db.query<{ wait: string }>('SELECT sign_in_admit($1, $2, $3, $4, $5) AS wait', [
        keys.map((k) => k.key),
        keys.map((k) => k.threshold),
        windowMs,
        lockMs,
        lockMaxMs,
      ]);
      return Number(rows[0].wait);
    },
    /** A successful sign-in: the account's streak ends; the address gets its attempt back. */
    async throttleSucceeded(accountKey: string, addressKey: string): Promise<void> {
      await db.query(
        `WITH gone AS (DELETE FROM sign_in_throttle WHERE key = $1)
         UPDATE sign_in_throttle SET failures = greatest(0, failures - 1) WHERE key = $2`,
        [accountKey, addressKey],
      );
    },
    async throttleSweep(windowMs: number): Promise<void> {
      await db.query(
        'DELETE FROM sign_in_throttle WHERE last_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1',
        [windowMs],
      );
    },
    /** A new sign-in's refresh family and its first token; answers when the family ends. */
    async createRefreshFamily(userId: string, ttlS: number, tokenHash: Buffer): Promise<Date> {
      const { rows } = await db.query<{ expires_at: Date }>(
        `WITH f AS (
           INSERT INTO refresh_families (user_id, expires_at) VALUES ($1, now() + $2 * interval '1 second')
           RETURNING id, expires_at)
         INSERT INTO refresh_tokens (token_hash, family_id) SELECT $3, id FROM f
         RETURNING (SELECT expires_at FROM f)`,
        [userId, ttlS, tokenHash],
      );
      return rows[0].expires_at;
    },
    /** Uses a refresh token once (migration 027's refresh_rotate): 'ok' stored its successor. */
    async rotateRefreshToken(
      oldHash: Buffer,
      newHash: Buffer,
    ): Promise<{ status: RefreshStatus; userId: string | null; expiresAt: Date | null }> {
      const { rows } = await db.query<{ o_status: RefreshStatus; o_user_id: string | null; o_expires_at: Date | null }>(
        'SELECT o_status, o_user_id, o_expires_at FROM refresh_rotate($1, $2)',
        [oldHash, newHash],
      );
      return { status: rows[0].o_status, userId: rows[0].o_user_id, expiresAt: rows[0].o_expires_at };
    },
    /** Revokes the family of a token (any of its tokens, rotated or not). */
    async revokeRefreshFamily(tokenHash: Buffer, reason: string): Promise<void> {
      await db.query(
        `UPDATE refresh_families SET revoked_at = now(), revoked_reason = $2
          WHERE id = (SELECT family_id FROM refresh_tokens WHERE token_hash = $1) AND revoked_at IS NULL`,
        [tokenHash, reason],
      );
    },
    /** Forgets families that ended (their tokens go with them). */
    async sweepRefreshFamilies(): Promise<void> {
      await db.query(
        "DELETE FROM refresh_families WHERE expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day'",
      );
    },
  };
}

export type RefreshStatus = 'ok' | 'unknown' | 'revoked' | 'expired' | 'reused';

export type IdentityStore = ReturnType<typeof createIdentityStore>;
