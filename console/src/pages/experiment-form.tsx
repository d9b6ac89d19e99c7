import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../api/client';
import { FieldError, JsonField } from '../components/field-error';
import { Problem } from '../components/problem';
import { useScopeKey } from '../session';

type Kind = 'paywall' | 'flow' | 'json';
interface VariantDraft {
  key: string;
  weight: number;
  kind: Kind;
  ref: string;
  json: unknown;
}

/** Suggestions only: the server names the metrics it accepts (decisions §10) and refuses others by field. */
const METRIC_SUGGESTIONS = ['paid_conversion', 'trial_started', 'revenue', 'onboarding_completed', 'refund_rate'];

/** A variant's value as the bundle carries it: a published paywall or flow by id, or remote-config JSON. */
function valueOf(v: VariantDraft): unknown {
  if (v.kind === 'paywall') return { paywall_id: v.ref };
  if (v.kind === 'flow') return { flow_id: v.ref };
  return v.json;
}

const blank = (key: string): VariantDraft => ({ key, weight: 50, kind: 'paywall', ref: '', json: {} });

/** The published items of one content kind (id and name), for a variant's value. */
function usePublished(kind: 'paywalls' | 'onboarding-flows') {
  const query = { params: { query: { status: 'published' as const, limit: 100 } } };
  return useQuery({
    queryKey: useScopeKey('published', kind),
    queryFn: async (): Promise<{ id: string; name: string }[]> =>
      (kind === 'paywalls'
        ? (await unwrap(api.GET('/api/v1/paywalls', query))).data
        : (await unwrap(api.GET('/api/v1/onboarding-flows', query))).data
      ).map((i) => ({ id: i.id, name: i.name })),
  });
}

/** A new experiment (a draft): variants whose values pick a published paywall or flow, or hold JSON. */
export function ExperimentForm({ onDone }: { onDone(id?: string): void }) {
  const paywalls = usePublished('paywalls');
  const flows = usePublished('onboarding-flows');
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [hypothesis, setHypothesis] = useState('');
  const [metric, setMetric] = useState('paid_conversion');
  const [days, setDays] = useState(14);
  const [variants, setVariants] = useState<VariantDraft[]>([blank('control'), blank('treatment')]);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/experiments', {
          body: {
            key,
            name,
            ...(hypothesis ? { hypothesis } : {}),
            primary_metric: metric,
            attribution_days: days,
            variants: variants.map((v) => ({ key: v.key, weight: v.weight, value: valueOf(v) })),
          },
        }),
      ),
    onSuccess: (r) => onDone(r.data.id),
  });
  const edit = (i: number, patch: Partial<VariantDraft>) =>
    setVariants(variants.map((v, j) => (j === i ? { ...v, ...patch } : v)));
  const onSubmit = (e: FormEvent) => (e.preventDefault(), create.mutate());
  const options = (k: Kind) => (k === 'paywall' ? paywalls.data : flows.data) ?? [];
  return (
    <form className="tile stack" aria-label="New experiment" onSubmit={onSubmit}>
      <div className="row">
        <label>
          Key
          <input value={key} onChange={(e) => setKey(e.target.value)} placeholder="paywall_q4" />
          <FieldError error={create.error} fields={['key']} />
        </label>
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} />
          <FieldError error={create.error} fields={['name']} />
        </label>
      </div>
      <label>
        Hypothesis
        <input value={hypothesis} onChange={(e) => setHypothesis(e.target.value)} />
      </label>
      <div className="row">
        <label>
          Primary metric
          <input list="experiment-metrics" value={metric} onChange={(e) => setMetric(e.target.value)} />
          <datalist id="experiment-metrics">
            {METRIC_SUGGESTIONS.map((m) => (
              <option key={m} value={m} />
            ))}
          </datalist>
          <FieldError error={create.error} fields={['primary_metric']} />
        </label>
        <label>
          Attribution days
          <input type="number" value={days} onChange={(e) => setDays(Number(e.target.value))} />
          <FieldError error={create.error} fields={['attribution_days']} />
        </label>
      </div>
      {variants.map((v, i) => (
        <fieldset key={i} className="stack" aria-label={`Variant ${i + 1}`}>
          <legend>{i === 0 ? 'Variant 1 (control)' : `Variant ${i + 1}`}</legend>
          <div className="row">
            <label>
              Variant key
              <input value={v.key} onChange={(e) => edit(i, { key: e.target.value })} />
            </label>
            <label>
              Weight
              <input type="number" value={v.weight} onChange={(e) => edit(i, { weight: Number(e.target.value) })} />
            </label>
            <label>
              Value
              <select
                aria-label="Value"
                value={v.kind}
                onChange={(e) => edit(i, { kind: e.target.value as Kind, ref: '' })}
              >
                <option value="paywall">a published paywall</option>
                <option value="flow">a published onboarding flow</option>
                <option value="json">remote-config JSON</option>
              </select>
            </label>
            {v.kind !== 'json' && (
              <label>
                {v.kind === 'paywall' ? 'Paywall' : 'Flow'}
                <select
                  aria-label={v.kind === 'paywall' ? 'Paywall' : 'Flow'}
                  value={v.ref}
                  onChange={(e) => edit(i, { ref: e.target.value })}
                >
                  <option value="">choose…</option>
                  {options(v.kind).map((c) => (
                    <option key={c.id} value={c.id}>
                      {c.name}
                    </option>
                  ))}
                </select>
              </label>
            )}
          </div>
          {v.kind === 'json' && (
            <JsonField label="JSON value" initial={v.json} onValue={(json) => edit(i, { json })} fields={[]} rows={3} />
          )}
          <FieldError error={create.error} fields={[`variants/${i}`]} />
        </fieldset>
      ))}
      <FieldError error={create.error} fields={['variants']} />
      <div className="row">
        <button
          type="button"
          className="secondary"
          onClick={() => setVariants([...variants, blank(`v${variants.length}`)])}
        >
          Add variant
        </button>
        <button type="submit" disabled={create.isPending}>
          Create experiment
        </button>
        <button type="button" className="secondary" onClick={() => onDone()}>
          Cancel
        </button>
      </div>
      <Problem error={create.error} />
    </form>
  );
}
