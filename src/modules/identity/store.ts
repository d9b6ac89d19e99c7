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
  };
}

export type IdentityStore = ReturnType<typeof createIdentityStore>;
