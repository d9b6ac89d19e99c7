import type { KeyContext } from '../../http/auth.js';
import { invalid } from '../../http/errors.js';
import { checkRate, type RateDecision, type RateLimiter } from '../../http/rate-limit.js';
import type { SuppressionCheck } from '../privacy/suppression.js';
import type { SettingsService } from '../settings/service.js';
import { checkEvent, type Envelope, type EventError } from './envelope.js';
import type { GroupCommit } from './group-commit.js';
import { keepBySampling } from './sampling.js';
import type { EventRow, IngestStore, OptionLock } from './store.js';

export const MAX_TRAITS_BYTES = 16 * 1024;

export interface IngestResult {
  accepted: number;
  rejected: number;
  sampled: number;
  consent_declined: number;
  /** Events of suppressed subjects (privacy deletions): dropped, never stored nor forwarded. */
  suppressed: number;
  errors?: EventError[];
}

function optionLocks(ev: Envelope): OptionLock[] {
  const setId = ev.properties?.option_set_id;
  const value = ev.properties?.option_value;
  if (typeof setId !== 'string' || setId.length === 0 || setId.length > 128) return [];
  const values = Array.isArray(value) ? value.slice(0, 100) : [value];
  return values
    .filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 512)
    .map((v) => ({ set_id: setId, value: v }));
}

export function createIngestService({
  store,
  writer,
  settings,
  limiter,
  suppression,
}: {
  store: IngestStore;
  writer: Pick<GroupCommit, 'write'>;
  settings: SettingsService;
  limiter: RateLimiter;
  suppression: SuppressionCheck;
}) {
  return {
    /**
     * Valid events are stored (once), invalid ones reported by index. Consent-declined events are
     * kept for audit only; sampling applies to consented events and never to purchases.
     */
    async ingest(key: KeyContext, batch: unknown[]): Promise<{ result: IngestResult; rate: RateDecision | null }> {
      const now = Date.now();
      const errors: EventError[] = [];
      const valid: { event: Envelope; json: string }[] = [];
      batch.forEach((raw, index) => {
        const r = checkEvent(raw, index, now);
        if (r.ok) valid.push(r);
        else errors.push(r.error);
      });

      const [s, suppressed] = await Promise.all([settings.get(key), suppression.forApp(key)]);
      // Counted in events; an over-limit batch is refused whole, before anything is stored.
      const rate =
        valid.length > 0
          ? await checkRate(limiter, `ingest:${key.appId}`, valid.length, s.events_per_minute, 'events')
          : null;

      let sampled = 0;
      let consentDeclined = 0;
      let dropped = 0;
      const seen = new Set<string>();
      const rows: EventRow[] = [];
      const locks: OptionLock[] = [];
      for (const { event: ev, json } of valid) {
        if (suppressed?.(ev.user.anon_id, ev.user.user_id)) {
          dropped++;
          continue;
        }
        const consent = ev.privacy.consent.analytics;
        if (!consent) consentDeclined++;
        else if (!keepBySampling(ev.user.anon_id, ev.event_name, s.sampling_rate)) {
          sampled++;
          continue;
        }
        locks.push(...optionLocks(ev));
        const id = ev.event_id.toLowerCase();
        if (seen.has(id)) continue;
        seen.add(id);
        rows.push({
          event_id: id,
          event_name: ev.event_name,
          ts_ms: ev.ts_ms,
          anon_id: ev.user.anon_id,
          user_id: ev.user.user_id ?? null,
          session_id: ev.context.session_id,
          platform: ev.device.platform,
          country: ev.device.country.toUpperCase(),
          consent,
          payloadJson: json,
        });
      }
      // Committed with other requests' events (group-commit.ts); resolves once the commit is done.
      if (rows.length > 0) await writer.write({ scope: key, environment: key.environment, rows, locks });
      const result = {
        accepted: valid.length,
        rejected: errors.length,
        sampled,
        consent_declined: consentDeclined,
        suppressed: dropped,
        ...(errors.length ? { errors } : {}),
      };
      return { result, rate };
    },

    async identify(
      key: KeyContext,
      body: { anon_id: string; user_id: string; ts_ms: number; traits?: Record<string, unknown> },
    ) {
      if (body.traits && Buffer.byteLength(JSON.stringify(body.traits)) > MAX_TRAITS_BYTES) {
        throw invalid(`traits exceed ${MAX_TRAITS_BYTES} bytes`, '/body/traits');
      }
      // A suppressed subject's identify is answered like any other (an SDK must not retry it) and dropped.
      if ((await suppression.forApp(key))?.(body.anon_id, body.user_id))
        return { linked: false, duplicate: false, suppressed: true };
      const now = Date.now();
      if (body.ts_ms > now + 24 * 3600 * 1000) throw invalid('ts_ms is more than 24 h in the future', '/body/ts_ms');
      const { newLink } = await store.identify(key, key.environment, {
        anon_id: body.anon_id.toLowerCase(),
        user_id: body.user_id,
        ts_ms: body.ts_ms,
        traits: body.traits ?? null,
      });
      return { linked: true, duplicate: !newLink, suppressed: false };
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
