import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { Config } from '../../config.js';
import { AppError } from '../../http/errors.js';
import type { IdentityStore } from './store.js';

/** How often an instance forgets streaks that ended (a sweep is one indexed DELETE). */
const SWEEP_EVERY_MS = 60_000;

/**
 * The key of a client address: an IPv6 client usually holds a whole /64, so its addresses count
 * as one; an IPv4-mapped IPv6 address counts as its IPv4 address.
 */
export function addressKey(ip: string): string {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4) return v4[1];
  if (!isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** Emails are kept hashed: the table holds no address a guesser typed. */
const accountKey = (email: string) =>
  `account:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;

/**
 * Slows password guessing (docs/auth.md): failed sign-ins per account and per client address,
 * signups per address. Every check runs before any password hash, so a refused attempt costs one
 * query and no hash; the state is in PostgreSQL, so every instance agrees.
 */
export function createSignInThrottle({
  store,
  config,
}: {
  store: Pick<IdentityStore, 'throttleAdmit' | 'throttleSucceeded' | 'throttleSweep'>;
  config: Config['signInThrottle'];
}) {
  const windowMs = config.windowS * 1000;
  let lastSweep = 0;

  async function admit(keys: { key: string; threshold: number }[]): Promise<void> {
    const now = Date.now();
    if (now - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = now;
      await store.throttleSweep(windowMs);
    }
    const waitMs = await store.throttleAdmit(keys, windowMs, config.lockS * 1000, config.lockMaxS * 1000);
    if (waitMs > 0) {
      const retryAfter = String(Math.max(1, Math.ceil(waitMs / 1000)));
      throw new AppError('rate_limited', `Too many attempts; try again in ${retryAfter} s`, undefined, {
        'retry-after': retryAfter,
      });
    }
  }

  return {
    /** Counts a sign-in attempt before its password is checked; throws the 429 when the account or address is closed. */
    async signIn(email: string, ip: string): Promise<{ succeeded(): Promise<void> }> {
      const account = accountKey(email);
      const address = `address:${addressKey(ip)}`;
      await admit([
        { key: account, threshold: config.accountFailures },
        { key: address, threshold: config.addressFailures },
      ]);
      return { succeeded: () => store.throttleSucceeded(account, address) };
    },
    /** Counts a signup from the address; throws the 429 past the address's allowance. */
    async signup(ip: string): Promise<void> {
      await admit([{ key: `signup:${addressKey(ip)}`, threshold: config.signupsPerAddress }]);
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
