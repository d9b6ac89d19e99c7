// Real processes (node --import tsx src/main.ts) on one database, each with its own ENCRYPTION_KEY
// (and ENCRYPTION_KEY_PREVIOUS): shared by the encryption key tests.
import assert from 'node:assert/strict';
import { createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import pg from 'pg';
import { client } from './client.js';
import { clusterEnv, makeInstance, startInstance, stopInstance, type Instance } from './processes.js';
import { createTestDatabase } from './server.js';

const started: Instance[] = [];
const pools: pg.Pool[] = [];

/** Stops every instance started here and closes the pools. */
export async function cleanUp() {
  await Promise.all(started.map((i) => stopInstance(i).catch(() => undefined)));
  await Promise.all(pools.map((p) => p.end()));
}

export const newKey = () => randomBytes(32).toString('hex');
/** The documented check value, computed here on its own: HMAC-SHA256 of the fixed label under the key. */
export const checkOf = (hex: string) =>
  createHmac('sha256', Buffer.from(hex, 'hex')).update('mobile-sdk-backend encryption key check').digest('hex');
export const kidOf = (hex: string) => checkOf(hex).slice(0, 8);
/** AES-256-GCM open of iv (12) | tag (16) | ciphertext, independent of src/lib/secret-box.ts. */
export function gcmOpen(hex: string, sealed: Buffer): string {
  const d = createDecipheriv('aes-256-gcm', Buffer.from(hex, 'hex'), sealed.subarray(0, 12));
  d.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([d.update(sealed.subarray(28)), d.final()]).toString('utf8');
}

/** A fresh database and the environment its instances share, but for their keys. */
export async function database(extra: Record<string, string> = {}) {
  const url = await createTestDatabase();
  const db = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(db);
  const env = clusterEnv(url, { WEBHOOK_POLL_MS: '100', ...extra });
  delete (env as Record<string, string | undefined>).ENCRYPTION_KEY;
  return { url, db, env };
}

export async function start(
  role: Instance['role'],
  env: Record<string, string>,
  keys: { key: string; previous?: string },
) {
  const inst = await makeInstance(role);
  started.push(inst);
  await startInstance(inst, {
    ...env,
    ENCRYPTION_KEY: keys.key,
    ...(keys.previous ? { ENCRYPTION_KEY_PREVIOUS: keys.previous } : {}),
  });
  return { inst, c: client(inst.url) };
}

/** Starts an instance that must refuse: exits non-zero with exactly one line naming ENCRYPTION_KEY. */
export async function refused(env: Record<string, string>, key: string): Promise<string> {
  const inst = await makeInstance('api');
  started.push(inst);
  await assert.rejects(startInstance(inst, { ...env, ENCRYPTION_KEY: key }), /exited 1/);
  assert.equal(inst.proc!.exitCode, 1);
  // Its last output may still be in the pipe when the exit is seen.
  if (!inst.proc!.stdout!.closed) await once(inst.proc!, 'close');
  const lines = inst.tail.filter((l) => l.includes('ENCRYPTION_KEY'));
  assert.equal(lines.length, 1, inst.tail.join('\n'));
  assert.match(lines[0], /start-up failed: ENCRYPTION_KEY is not the key this database's secrets are sealed with/);
  assert.match(lines[0], /ENCRYPTION_KEY_PREVIOUS/, 'names the rotation cure too');
  assert.doesNotMatch(lines[0], new RegExp(key), 'never prints the key');
  return lines[0];
}

export const recordedCheck = async (db: pg.Pool) =>
  (await db.query('SELECT check_value FROM encryption_key_check')).rows[0]?.check_value as string | undefined;

/** Every stored secret, as text (bytes as hex). */
export async function storedSecrets(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query(`
    SELECT secret AS v FROM webhook_endpoints UNION ALL SELECT previous_secret FROM webhook_endpoints
    UNION ALL SELECT secret FROM webhook_deliveries UNION ALL SELECT callback_signing_secret FROM app_settings
    UNION ALL SELECT encode(refresh_token_enc, 'hex') FROM ad_network_connections
    UNION ALL SELECT encode(access_token_enc, 'hex') FROM ad_network_connections
    UNION ALL SELECT encode(verifier_enc, 'hex') FROM ad_network_oauth_states`);
  return rows.map((r) => r.v).filter((v) => v !== null);
}

export const underKey = (v: string, kid: string) => v.startsWith(`sealed:v2:${kid}:`) || v.startsWith(`02${kid}`);
