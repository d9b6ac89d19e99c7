import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { FieldError } from '../components/field-error';
import { Problem } from '../components/problem';
import { ofMeta, Tile } from '../components/tile';
import { atLeast } from '../roles';
import { useScope, useScopeKey, useWorkspace } from '../session';
import { funnelListQuery } from './analytics-queries';

type Settings = paths['/api/v1/settings']['get']['responses'][200]['content']['application/json']['data'];
type Steps =
  paths['/api/v1/analytics/funnels/{funnelName}']['put']['requestBody']['content']['application/json']['steps'];
type Patch = NonNullable<paths['/api/v1/settings']['patch']['requestBody']>['content']['application/json'];

/** App settings (admin+), the rollup rebuild a timezone change starts, and funnel step overrides. */
export default function SettingsPage() {
  const qc = useQueryClient();
  const key = useScopeKey('settings');
  const settings = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/settings')) });
  return (
    <>
      <h1>Settings</h1>
      <Tile title="App settings" query={settings}>
        {(d) => <SettingsForm s={d.data} onSaved={() => qc.invalidateQueries({ queryKey: key })} />}
      </Tile>
      <RollupTimezone />
      <FunnelOverrides />
    </>
  );
}

function SettingsForm({ s, onSaved }: { s: Settings; onSaved(): void }) {
  const [f, setF] = useState({
    events_per_minute: String(s.events_per_minute),
    sampling_rate: String(s.sampling_rate),
    timezone: s.timezone,
    flushInterval: String(s.sdk_settings.flushInterval),
    batchSize: String(s.sdk_settings.batchSize),
    configTTL: String(s.sdk_settings.configTTL),
    retention_days: s.retention_days === null ? '' : String(s.retention_days),
  });
  const [showSecret, setShowSecret] = useState(false);
  const save = useMutation({
    mutationFn: (p: Patch) => unwrap(api.PATCH('/api/v1/settings', { body: p })),
    onSuccess: onSaved,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({
      events_per_minute: Number(f.events_per_minute),
      sampling_rate: Number(f.sampling_rate),
      timezone: f.timezone,
      sdk_settings: {
        flushInterval: Number(f.flushInterval),
        batchSize: Number(f.batchSize),
        configTTL: Number(f.configTTL),
      },
      retention_days: f.retention_days.trim() === '' ? null : Number(f.retention_days),
    });
  };
  const field = (k: keyof typeof f, label: string, type = 'number', step?: string) => (
    <label>
      {label}
      <input type={type} step={step} required value={f[k]} onChange={(e) => setF({ ...f, [k]: e.target.value })} />
    </label>
  );
  return (
    <form onSubmit={submit} className="stack">
      <div className="row">
        {field('events_per_minute', 'Events per minute')}
        {field('sampling_rate', 'Sampling rate', 'number', '0.01')}
        {field('timezone', 'Timezone', 'text')}
      </div>
      <h3>SDK settings</h3>
      <div className="row">
        {field('flushInterval', 'Flush interval (s)')}
        {field('batchSize', 'Batch size')}
        {field('configTTL', 'Config TTL (s)')}
      </div>
      <h3>Data retention</h3>
      <div className="row">
        <label>
          Keep raw events (days; empty: for ever)
          <input
            type="number"
            value={f.retention_days}
            onChange={(e) => setF({ ...f, retention_days: e.target.value })}
            placeholder="for ever"
          />
          <FieldError error={save.error} fields={['retention_days']} />
        </label>
      </div>
      <p className="muted">
        {f.retention_days.trim() === ''
          ? 'Raw events and completed exports are kept for ever.'
          : `Every night, raw events that arrived more than ${f.retention_days} days ago and exports completed before then are deleted. The dashboards keep their folded history, but a later rebuild (a timezone or definitions change, a privacy deletion) can only use the events that remain (docs/privacy.md).`}
      </p>
      <div className="row">
        <button type="submit" disabled={save.isPending}>
          Save settings
        </button>
        {save.isSuccess && <span role="status">Saved.</span>}
      </div>
      <Problem error={save.error} />
      <h3>Callback signing secret</h3>
      <p className="muted">Signs export completion callbacks (Standard Webhooks); verify them with it.</p>
      <div className="row">
        <code className="secret" aria-label="Callback signing secret">
          {showSecret ? s.callback_signing_secret : '•'.repeat(24)}
        </code>
        <button type="button" className="secondary" onClick={() => setShowSecret(!showSecret)}>
          {showSecret ? 'Hide secret' : 'Show secret'}
        </button>
        <button
          type="button"
          className="secondary"
          onClick={() => navigator.clipboard.writeText(s.callback_signing_secret)}
        >
          Copy secret
        </button>
      </div>
    </form>
  );
}

/** A timezone change rebuilds the app's rollups on the next fold; until then the old numbers show. */
function RollupTimezone() {
  const { environment } = useWorkspace();
  const q = useQuery({
    queryKey: useScopeKey('rollup-timezone'),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/analytics/kpis/timeseries', {
          params: { query: { metrics: 'new_users', period: '7d', environment } },
        }),
      ),
    refetchInterval: (query) => (query.state.data?.meta.rebuilding ? 5000 : false),
  });
  return (
    <Tile title="Analytics timezone" query={q} asOf={(d) => ofMeta(d.meta)}>
      {(d) =>
        d.meta.rebuilding ? (
          <p className="warning" role="status">
            Rebuilding the analytics in {d.meta.timezone}: the next fold recomputes this app's rollups; the dashboard
            shows the numbers of the previous timezone until it finishes.
          </p>
        ) : (
          <p role="status">
            Analytics days follow {d.meta.timezone}. Changing the timezone rebuilds this app's rollups from its raw
            events.
          </p>
        )
      }
    </Tile>
  );
}

function FunnelOverrides() {
  const { role } = useWorkspace();
  const list = funnelListQuery(useScope());
  const key = list.queryKey;
  const defs = useQuery({ ...list, refetchInterval: false }); // an editor: no refetch while typing
  return (
    <Tile title="Funnel steps" query={defs}>
      {(d) => (
        <div className="stack">
          <p className="muted">
            Each funnel's steps as JSON: {'{ name, event, match?, days?, source? }'} (see docs/metrics.md). Reset
            returns to the default.
          </p>
          {d.data.map((f) => (
            <FunnelEditor
              key={`${f.funnel_name}:${JSON.stringify(f.steps)}`}
              name={f.funnel_name}
              steps={f.steps}
              overridden={f.overridden}
              disabled={!atLeast(role, 'admin')}
              refreshKey={key}
            />
          ))}
        </div>
      )}
    </Tile>
  );
}

function FunnelEditor({
  name,
  steps,
  overridden,
  disabled,
  refreshKey,
}: {
  name: string;
  steps: unknown;
  overridden: boolean;
  disabled: boolean;
  refreshKey: unknown[];
}) {
  const qc = useQueryClient();
  const [text, setText] = useState(JSON.stringify(steps, null, 1));
  const [parseError, setParseError] = useState<string | null>(null);
  const done = () => qc.invalidateQueries({ queryKey: refreshKey });
  const save = useMutation({
    mutationFn: (s: Steps) =>
      unwrap(
        api.PUT('/api/v1/analytics/funnels/{funnelName}', {
          params: { path: { funnelName: name } },
          body: { steps: s },
        }),
      ),
    onSuccess: done,
  });
  const reset = useMutation({
    mutationFn: () =>
      unwrap(api.DELETE('/api/v1/analytics/funnels/{funnelName}', { params: { path: { funnelName: name } } })),
    onSuccess: done,
  });
  const onSave = () => {
    try {
      const parsed = JSON.parse(text) as Steps;
      setParseError(null);
      save.mutate(parsed);
    } catch (e) {
      setParseError((e as Error).message);
    }
  };
  return (
    <details>
      <summary>
        {name} {overridden && <span className="muted">(custom)</span>}
      </summary>
      <label>
        Steps of {name}
        <textarea rows={6} cols={80} value={text} disabled={disabled} onChange={(e) => setText(e.target.value)} />
      </label>
      <div className="row">
        <button type="button" disabled={disabled || save.isPending} onClick={onSave}>
          Save steps
        </button>
        <button type="button" className="secondary" disabled={disabled || !overridden} onClick={() => reset.mutate()}>
          Reset to default
        </button>
      </div>
      {parseError && (
        <p role="alert" className="problem">
          Not JSON: {parseError}
        </p>
      )}
      <Problem error={save.error ?? reset.error} />
    </details>
  );
}
