import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new Standard Webhooks secret (`whsec_` + base64 of 24 random bytes). */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * Standard Webhooks headers for one attempt. `msgId` stays the same across retries so receivers
 * can deduplicate; with several secrets (rotation overlap) one signature per secret is sent.
 */
export function signedHeaders(secrets: string[], msgId: string, body: string, at = new Date()): Record<string, string> {
  const signatures = secrets.map((s) => new Webhook(s).sign(msgId, at, body));
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
