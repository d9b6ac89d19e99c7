import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

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

/** Marks a text column's value as sealed (the rest is base64 of seal()). */
export const SEALED_PREFIX = 'sealed:v1:';

/** Seals signing secrets kept in text columns with ENCRYPTION_KEY (webhook and export-callback secrets). */
export interface SecretBox {
  seal(plain: string): string;
  /** A value without the prefix predates sealing (sealStoredSecrets converts those at start-up). */
  open(stored: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal: (plain) => SEALED_PREFIX + seal(key, plain).toString('base64'),
    open: (stored) =>
      stored.startsWith(SEALED_PREFIX) ? open(key, Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64')) : stored,
  };
}
