import { useSyncExternalStore } from 'react';
import type { SentEvent, SentEventLog } from './sent-events.js';

/** Properties worth a glance in the list (the rest are in the devtools' network tab). */
const SHOWN = [
  'first_open',
  'step_id',
  'paywall_id',
  'experiment_id',
  'variant',
  'product_id',
  'is_trial',
  'duration_ms',
];

const summary = (e: SentEvent) =>
  SHOWN.filter((k) => e.properties?.[k] !== undefined)
    .map((k) => `${k}=${String(e.properties[k])}`)
    .join(' ');

/** The events the service acknowledged, oldest first. */
export function EventList({ log }: { log: SentEventLog }) {
  const events = useSyncExternalStore(log.subscribe, log.snapshot);
  return (
    <aside aria-labelledby="sent-title">
      <h2 id="sent-title">Events sent ({events.length})</h2>
      <ol id="sent-events">
        {events.map((e) => (
          <li key={e.event_id} data-event={e.event_name}>
            <code>{e.event_name}</code> <small>{summary(e)}</small>
          </li>
        ))}
      </ol>
    </aside>
  );
}
