import type { Scope } from '../../types/domain.js';

/**
 * Durably sends one signed callback (the export completion callback) through the webhook
 * delivery machinery: same outbound client, private-target guard, Standard Webhooks signer and
 * retry schedule. Signed with `secret` alone; the body is sent exactly as given (not wrapped in
 * { type, timestamp, data }). Resolves once the delivery is recorded, not when it is sent.
 * The implementation is WebhookService.sendCallback (wired in compose.ts).
 */
export type SendCallback = (
  scope: Scope,
  input: { url: string; secret: string; eventType: string; body: object },
) => Promise<void>;
