import { session } from './api/client';
import type { paths } from './api/schema';

/**
 * The ID token's renewal (docs/auth.md). No React here: the first load's calls (first-load.ts)
 * renew through it before the app has loaded. The refresh token is an HttpOnly cookie the
 * browser sends to /api/v1/auth only; the console never sees it.
 */

/** Where the tab keeps its ID token (sessionStorage), with its expiry and lifetime beside it. */
export const TOKEN = 'console.token';
/** The token is renewed after this share of its lifetime (the rest covers a slow or failed try). */
export const RENEW_AT = 0.8;
const EXP = `${TOKEN}.exp`;
const TTL = `${TOKEN}.ttl`;

type Listener = (token: string | null) => void;
const listeners = new Set<Listener>();

/** Called with the new token after each renewal (and null on sign-out). */
export function onToken(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The user a token names (its `sub`), read without verifying: only to tell one user from another. */
export function subjectOf(token: string | null): string | undefined {
  try {
    const part = token?.split('.')[1];
    if (!part) return undefined;
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    const sub = (JSON.parse(json) as { sub?: unknown }).sub;
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

export function saveToken(token: string, expiresInS: number): void {
  sessionStorage.setItem(TOKEN, token);
  sessionStorage.setItem(EXP, String(Date.now() + expiresInS * 1000));
  sessionStorage.setItem(TTL, String(expiresInS));
  session.token = token;
  ended = false;
  for (const l of listeners) l(token);
}

export function forgetToken(): void {
  for (const k of [TOKEN, EXP, TTL]) sessionStorage.removeItem(k);
  session.token = null;
  for (const l of listeners) l(null);
}

/** Milliseconds until the saved token should be renewed (negative: overdue); undefined without one. */
export function renewDueInMs(): number | undefined {
  const exp = Number(sessionStorage.getItem(EXP));
  const ttl = Number(sessionStorage.getItem(TTL));
  if (!exp || !ttl) return undefined;
  return exp - ttl * 1000 * (1 - RENEW_AT) - Date.now();
}

type TokenAnswer = paths['/api/v1/auth/refresh']['post']['responses'][200]['content']['application/json'];

/** Set when the server refused a renewal (revoked, expired): no further try until the next sign-in. */
let ended = false;

async function refresh(): Promise<boolean> {
  const before = session.token;
  const res = await fetch('/api/v1/auth/refresh', { method: 'POST', credentials: 'same-origin' });
  if (res.status === 401) ended = true;
  if (!res.ok) return false;
  const answer = (await res.json()) as TokenAnswer;
  // Another tab may have signed in as someone else (the cookie is the browser's): never switch users silently.
  const was = subjectOf(before);
  if (was && answer.user.id !== was) return false;
  saveToken(answer.token, answer.expires_in);
  return true;
}

let inFlight: Promise<boolean> | undefined;

/**
 * Renews the ID token; true when a new one is saved. One renewal at a time in the tab, and one at
 * a time across the browser's tabs (Web Locks): each use rotates the cookie, and two tabs sending
 * the same cookie at once would look like a stolen token being reused, revoking the sign-in.
 */
export function renew(): Promise<boolean> {
  if (ended) return Promise.resolve(false);
  inFlight ??= (async () => {
    const locks = (navigator as Navigator & { locks?: LockManager }).locks;
    return locks ? locks.request('console-token-renewal', refresh) : refresh();
  })()
    .catch(() => false)
    .finally(() => {
      inFlight = undefined;
    });
  return inFlight;
}
session.renew = renew;

/** Ends the sign-in on the server (its refresh tokens) and in the tab. */
export function logout(): void {
  void fetch('/api/v1/auth/logout', { method: 'POST', credentials: 'same-origin' }).catch(() => undefined);
  forgetToken();
}
