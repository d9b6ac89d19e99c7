import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/** AES-256-GCM sealing for secrets at rest: iv (12) | tag (16) | ciphertext. */
export function seal(key: Buffer, plain: string): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]);
}

export function open(key: Buffer, sealed: Buffer): string {
  const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  d.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([d.update(sealed.subarray(28)), d.final()]).toString('utf8');
}

/** Check value of a key: HMAC-SHA256 of a fixed label under it (64 hex digits). Says which key, never what it is. */
export function keyCheck(key: Buffer): string {
  return createHmac('sha256', key).update('mobile-sdk-backend encryption key check').digest('hex');
}

/** Key id carried by sealed values: the check value's first 8 hex digits. */
export const KEY_ID_LENGTH = 8;
export const keyId = (key: Buffer) => keyCheck(key).slice(0, KEY_ID_LENGTH);

/** Every sealed text value starts so; anything else predates sealing (migration 018) and is clear. */
export const SEALED_PREFIX = 'sealed:';
/** v1 (before key ids): 'sealed:v1:' + base64; opened by trying the keys in turn. */
const V1 = 'sealed:v1:';
/** v2: 'sealed:v2:<key id>:' + base64 of seal(). */
const V2 = 'sealed:v2:';
export const sealedTextPrefix = (kid: string) => `${V2}${kid}:`;
/** Sealed bytes (ad-network tokens): this byte, the key id's 4 bytes, then seal(). Older ones are seal() alone. */
const BYTES_V2 = 0x02;
export const sealedBytesHeader = (kid: string) => Buffer.concat([Buffer.of(BYTES_V2), Buffer.from(kid, 'hex')]);

/** A sealed value none of this instance's keys opens: the message names the setting to fix. */
export class UnknownKeyError extends Error {}

/**
 * Seals secrets with ENCRYPTION_KEY and opens those sealed under it or under ENCRYPTION_KEY_PREVIOUS
 * (key rotation, docs/operations.md). Text columns: webhook and export-callback signing secrets; bytes:
 * ad-network tokens and PKCE verifiers.
 */
export interface SecretBox {
  /** Key id of ENCRYPTION_KEY: every value sealed from now on carries it. */
  readonly kid: string;
  seal(plain: string): string;
  /** A value without SEALED_PREFIX predates sealing and is returned as is. */
  open(stored: string): string;
  sealBytes(plain: string): Buffer;
  openBytes(stored: Buffer): string;
}

export function createSecretBox(current: Buffer, previous?: Buffer): SecretBox {
  const keys = new Map<string, Buffer>([[keyId(current), current]]);
  if (previous) keys.set(keyId(previous), previous);
  const kid = keyId(current);
  const header = sealedBytesHeader(kid);
  const ids = () => [...keys.keys()].join(' and ');
  const unknown = (what: string) =>
    new UnknownKeyError(
      `a secret sealed ${what} cannot be opened with this instance's keys (key ids ${ids()}): every instance on this database needs its ENCRYPTION_KEY (docs/operations.md, encryption key)`,
    );
  /** Tries each key: v1 text and older bytes do not say which key sealed them. */
  const tryAll = (sealed: Buffer, what: string) => {
    for (const key of keys.values()) {
      try {
        return open(key, sealed);
      } catch {}
    }
    throw unknown(what);
  };
  return {
    kid,
    seal: (plain) => sealedTextPrefix(kid) + seal(current, plain).toString('base64'),
    open(stored) {
      if (stored.startsWith(V1)) return tryAll(Buffer.from(stored.slice(V1.length), 'base64'), 'without key id');
      if (!stored.startsWith(V2)) return stored;
      const id = stored.slice(V2.length, V2.length + KEY_ID_LENGTH);
      const key = keys.get(id);
      if (!key) throw unknown(`under key id ${id}`);
      return open(key, Buffer.from(stored.slice(V2.length + KEY_ID_LENGTH + 1), 'base64'));
    },
    sealBytes: (plain) => Buffer.concat([header, seal(current, plain)]),
    openBytes(stored) {
      const id = stored.subarray(1, 5).toString('hex');
      const key = stored[0] === BYTES_V2 ? keys.get(id) : undefined;
      if (key) {
        try {
          return open(key, stored.subarray(header.length));
        } catch {
          // An older value whose random iv happens to start like a header: tried as such below.
        }
      }
      return tryAll(stored, stored[0] === BYTES_V2 ? `under key id ${id}` : 'without key id');
    },
  };
}
