import { randomUUID } from 'node:crypto';

/** In-memory world of the fake ad network. Shapes follow Snap Marketing API v1 (see shared/adnetwork-api.md). */
export type Kind = 'campaign' | 'adsquad' | 'ad' | 'creative' | 'media';

export interface Account {
  id: string;
  name: string;
  organization_id: string;
  currency: string;
  timezone: string;
  status: string;
  test: boolean;
  type: 'PARTNER';
}

export interface Entity {
  id: string;
  kind: Kind;
  ad_account_id: string;
  created_at: string;
  updated_at: string;
  deleted?: boolean;
  /** Local days on which the entity was effectively delivering (drives stats). */
  activeDays?: Set<string>;
  /** Operator switch: daily cap exhausted (squads). */
  capHit?: boolean;
  fields: Record<string, any>;
}

export interface Grant {
  id: string;
  clientId: string;
  refreshToken: string;
  revoked: boolean;
  scope: string;
}

export interface FakeOptions {
  port?: number;
  host?: string;
  clientId?: string;
  clientSecret?: string;
  /** Access-token lifetime in seconds (default 3600). */
  expiresIn?: number;
  /** 'static' (default, like Snap) or 'rotating' refresh tokens. */
  refreshMode?: 'static' | 'rotating';
  tokenRps?: number;
  appRps?: number;
  /** Send Retry-After (seconds) with 429s; off by default. */
  retryAfterS?: number;
  /** Dedupe writes (POST, PUT, DELETE, upload) on Idempotency-Key (default off, like Snap). */
  idempotency?: boolean;
  /** Accept the spec's ad-squad/ad write paths under /adaccounts (default off: they are not documented). */
  specPaths?: boolean;
  /** Seed of the deterministic stats. */
  seed?: number;
  /** Use an empty body on 401 answers (one of the variants Snap shows). */
  empty401?: boolean;
  log?: boolean;
}

export function createWorld(opts: FakeOptions) {
  const orgId = '40d6719b-0000-4000-8000-000000000001';
  const accounts = new Map<string, Account>();
  const addAccount = (a: Partial<Account> = {}): Account => {
    const acc: Account = {
      id: a.id ?? randomUUID(),
      name: a.name ?? 'Hooli Test Ad Account',
      organization_id: orgId,
      currency: a.currency ?? 'USD',
      timezone: a.timezone ?? 'America/Los_Angeles',
      status: a.status ?? 'ACTIVE',
      test: a.test ?? false,
      type: 'PARTNER',
    };
    accounts.set(acc.id, acc);
    return acc;
  };
  addAccount({
    id: '8adc3db7-0000-4000-8000-0000000000a1',
    name: 'Hooli US',
    currency: 'USD',
    timezone: 'America/Los_Angeles',
  });
  addAccount({
    id: '8adc3db7-0000-4000-8000-0000000000e1',
    name: 'Hooli EU',
    currency: 'EUR',
    timezone: 'Europe/Berlin',
  });

  return {
    opts,
    organization: {
      id: orgId,
      name: 'Hooli Inc',
      country: 'US',
      type: 'ENTERPRISE',
      state: 'ACTIVE',
      roles: ['member'],
    },
    accounts,
    addAccount,
    entities: new Map<string, Entity>(),
    codes: new Map<
      string,
      {
        grantId?: string;
        clientId: string;
        redirectUri: string;
        challenge?: string;
        method?: string;
        expiresAt: number;
        used: boolean;
        scope: string;
      }
    >(),
    grants: new Map<string, Grant>(),
    tokens: new Map<string, { grantId: string; expiresAt: number }>(),
    idempotency: new Map<string, { status: number; payload: string }>(),
    lastAdByCreative: new Map<string, number>(),
    /** Every API request (not OAuth), for tests counting outbound calls. */
    requests: [] as {
      method: string;
      path: string;
      at: number;
      idempotencyKey?: string;
      status?: number;
      body?: any;
    }[],
    tokenRequests: [] as { grant_type: string; at: number; status: number }[],
    /** Which write path style the client used (documented vs the spec's aliases). */
    pathLog: [] as { path: string; style: 'documented' | 'spec' }[],
    switches: {
      force429: 0,
      dropResponses: 0,
      dropMatch: undefined as RegExp | undefined,
      failRequests: 0,
      failMatch: /$^/,
      failSkip: 0,
    },
  };
}

export type World = ReturnType<typeof createWorld>;

export const nowIso = () => new Date().toISOString();

/** Paging `limit` must be 50..1000 (§1 of the reference). */
export const limitInRange = (n: number) => Number.isInteger(n) && n >= 50 && n <= 1000;

/** Opaque paging cursor: the offset of the next page. */
export const encodeCursor = (offset: number) => Buffer.from(String(offset)).toString('base64url');
export const decodeCursor = (cursor: string | undefined) =>
  cursor ? Number(Buffer.from(cursor, 'base64url').toString()) || 0 : 0;

/** Local calendar parts of an instant in an IANA zone. */
export function localParts(ms: number, tz: string) {
  const f = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return { day: `${p.year}-${p.month}-${p.day}`, h: Number(p.hour), m: Number(p.minute), s: Number(p.second) };
}

export const localDay = (ms: number, tz: string) => localParts(ms, tz).day;

export const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * 86400_000).toISOString().slice(0, 10);

/** Offset of a zone at an instant, e.g. "-07:00". */
export function offsetOf(ms: number, tz: string): string {
  const p = localParts(ms, tz);
  const asUtc = Date.parse(
    `${p.day}T${String(p.h).padStart(2, '0')}:${String(p.m).padStart(2, '0')}:${String(p.s).padStart(2, '0')}Z`,
  );
  const mins = Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60000);
  const sign = mins < 0 ? '-' : '+';
  const a = Math.abs(mins);
  return `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

/** The instant of local midnight starting a day in a zone, as ISO with the zone's offset. */
export function midnightIso(day: string, tz: string): string {
  const guess = Date.parse(`${day}T00:00:00Z`);
  let off = offsetOf(guess, tz);
  let ms = guess - offsetMs(off);
  off = offsetOf(ms, tz);
  ms = guess - offsetMs(off);
  return `${day}T00:00:00.000${off}`;
}

function offsetMs(off: string): number {
  const sign = off.startsWith('-') ? -1 : 1;
  const [h, m] = off.slice(1).split(':').map(Number);
  return sign * (h * 60 + m) * 60_000;
}

/** FNV-1a based deterministic pseudo-random integer in [0, n). */
export function seeded(seed: number, ...parts: string[]): (n: number) => number {
  let h = 2166136261 ^ seed;
  for (const ch of parts.join('|')) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 16777619) >>> 0;
  }
  return (n: number) => {
    h ^= h << 13;
    h >>>= 0;
    h ^= h >>> 17;
    h ^= h << 5;
    h >>>= 0;
    return h % n;
  };
}
