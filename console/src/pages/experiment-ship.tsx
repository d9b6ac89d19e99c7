import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ApiError, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import type { paths } from '../api/schema';

type Read = paths['/api/v1/experiments/{id}']['get']['responses'][200]['content']['application/json'];
export type Experiment = Read['data'];

/** What a variant's value gives devices, in words: the paywall or flow it names, or its JSON. */
export function describeValue(value: unknown): string {
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v.paywall_id === 'string') return `paywall ${v.paywall_id}`;
    if (typeof v.flow_id === 'string') return `onboarding flow ${v.flow_id}`;
  }
  return `the value ${JSON.stringify(value)}`;
}

/**
 * Ship a variant: names what every device will get before anything happens; a sample ratio mismatch
 * (the server's 409 `srm_detected`) must be acknowledged in words before the same ship is sent again.
 */
export function ShipExperiment({ experiment, onShipped }: { experiment: Experiment; onShipped(): void }) {
  const [variant, setVariant] = useState<string | null>(null);
  const [acknowledge, setAcknowledge] = useState(false);
  const ship = useMutation({
    mutationFn: (v: string) =>
      unwrap(
        api.POST('/api/v1/experiments/{id}/ship', {
          params: { path: { id: experiment.id } },
          body: { variant: v, ...(acknowledge ? { acknowledge_srm: true } : {}) },
        }),
      ),
    onSuccess: () => (setVariant(null), onShipped()),
  });
  const srm = ship.error instanceof ApiError && ship.error.code === 'srm_detected';
  const chosen = experiment.variants.find((v) => v.key === variant);
  return (
    <section className="tile stack" aria-label="Ship">
      <h2>Ship a variant</h2>
      <div className="row">
        {experiment.variants.map((v) => (
          <button key={v.key} type="button" className="secondary" onClick={() => setVariant(v.key)}>
            Ship {v.key}
          </button>
        ))}
      </div>
      {chosen && (
        <div className="stack" role="dialog" aria-label={`Confirm ship ${chosen.key}`}>
          <p>
            Ship <strong>{chosen.key}</strong> of <code>{experiment.key}</code>? Every device, in or out of the
            experiment, will get {describeValue(chosen.value)} from the next bundle on, and no more exposures are
            recorded.
          </p>
          {srm && (
            <label className="inline">
              <input type="checkbox" checked={acknowledge} onChange={(e) => setAcknowledge(e.target.checked)} /> Ship
              despite the sample ratio mismatch
            </label>
          )}
          <Problem error={ship.error} />
          <div className="row">
            <button
              type="button"
              className="danger"
              disabled={ship.isPending || (srm && !acknowledge)}
              onClick={() => ship.mutate(chosen.key)}
            >
              Confirm ship
            </button>
            <button type="button" className="secondary" onClick={() => (setVariant(null), ship.reset())}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
