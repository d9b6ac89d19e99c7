import { createHash, randomBytes } from 'node:crypto';
import { AppError } from '../../http/errors.js';
import type { IdentityStore } from './store.js';

/** The cookie that carries the refresh token, sent only to the auth routes (docs/auth.md). */
export const REFRESH_COOKIE = 'refresh_token';
export const REFRESH_PATH = '/api/v1/auth';
/** 32 random bytes, base64url. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const SWEEP_EVERY_MS = 3600_000;

const digest = (token: string) => createHash('sha256').update(token).digest();

export interface RefreshGrant {
  token: string;
  /** Seconds until the family's absolute end: the cookie's Max-Age. */
  maxAgeS: number;
}

/** The refresh token in a Cookie header, when well-formed. */
export function refreshTokenOf(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === REFRESH_COOKIE) {
      const v = part.slice(eq + 1).trim();
      return TOKEN.test(v) ? v : undefined;
    }
  }
  return undefined;
}

/** Set-Cookie for a grant, or one that clears the cookie. Secure when the service is reached over https. */
export function refreshCookie(grant: RefreshGrant | null, secure: boolean): string {
  const attrs = [`Path=${REFRESH_PATH}`, 'HttpOnly', 'SameSite=Strict', `Max-Age=${grant ? grant.maxAgeS : 0}`];
  if (secure) attrs.push('Secure');
  return [`${REFRESH_COOKIE}=${grant?.token ?? ''}`, ...attrs].join('; ');
}

/**
 * Refresh tokens: one family per sign-in with an absolute end (REFRESH_TTL_S), rotated on each
 * use, stored as SHA-256 digests. A rotated token used again revokes its family.
 */
export function createRefreshTokens({
  store,
  ttlS,
}: {
  store: Pick<
    IdentityStore,
    'createRefreshFamily' | 'rotateRefreshToken' | 'revokeRefreshFamily' | 'sweepRefreshFamilies'
  >;
  ttlS: number;
}) {
  let lastSweep = 0;
  const fresh = () => randomBytes(32).toString('base64url');
  const maxAge = (end: Date) => Math.max(1, Math.floor((end.getTime() - Date.now()) / 1000));

  return {
    async start(userId: string): Promise<RefreshGrant> {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await store.sweepRefreshFamilies();
      }
      const token = fresh();
      return { token, maxAgeS: maxAge(await store.createRefreshFamily(userId, ttlS, digest(token))) };
    },

    /** Uses the token once: its user and the successor, or a 401 (unknown, expired, revoked, reused). */
    async rotate(token: string | undefined): Promise<{ userId: string; grant: RefreshGrant }> {
      if (!token) throw new AppError('missing_credentials', 'No refresh token: sign in again');
      const next = fresh();
      const r = await store.rotateRefreshToken(digest(token), digest(next));
      if (r.status !== 'ok')
        throw new AppError(
          'invalid_credentials',
          r.status === 'reused'
            ? 'This refresh token was already used: the sign-in is revoked, sign in again'
            : 'The refresh token is invalid, expired or revoked: sign in again',
        );
      return { userId: r.userId!, grant: { token: next, maxAgeS: maxAge(r.expiresAt!) } };
    },

    async revoke(token: string): Promise<void> {
      await store.revokeRefreshFamily(digest(token), 'logout');
    },
  };
}

export type RefreshTokens = ReturnType<typeof createRefreshTokens>;
