import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import type { paths } from '../api/schema';
import { AnalyticsHead } from '../components/page-head';
import { LineChart, type Line } from '../components/chart';
import { Select } from '../components/select';
import { Sparkline } from '../components/sparkline';
import { ofMeta, Tile } from '../components/tile';
import { addDays } from '../dates';
import { formatChange, formatValue, GROUPS, METRIC_VIEW, viewOf } from '../metrics';
import { useScope } from '../session';
import { ActivityFeed } from './activity';
import {
  type Compare,
  DEFAULT_COMPARE,
  DEFAULT_SERIES,
  type KpiQuery,
  kpisQuery,
  type SeriesQuery,
  seriesQuery,
} from './analytics-queries';

type Kpi = paths['/api/v1/analytics/kpis']['get']['responses'][200]['content']['application/json']['kpis'][number];

const PRESETS = [7, 30, 90];
const COMPARES: [Compare, string][] = [
  ['previous_period', 'Previous period'],
  ['previous_month', 'Previous month'],
  ['previous_year', 'Previous year'],
];
// The platforms an event envelope accepts (docs/ingestion.md).
const PLATFORMS = [
  ['', 'All platforms'],
  ['ios', 'ios'],
  ['android', 'android'],
] as const;

interface Filters {
  start?: string;
  end?: string;
  compare: Compare;
  platform?: string;
}

export default function Dashboard() {
  const scope = useScope();
  const { environment } = scope;
  const [f, setF] = useState<Filters>({ compare: DEFAULT_COMPARE });
  const q: KpiQuery = { start_date: f.start, end_date: f.end, compare: f.compare, platform: f.platform, environment };
  const kpis = useQuery(kpisQuery(scope, q));
  const period = kpis.data?.period;
  // Presets count back from the end shown (today in the app's timezone unless a custom end was set).
  const preset = (days: number) => {
    const end = f.end ?? period?.end;
    if (end) setF({ ...f, end, start: addDays(end, -(days - 1)) });
  };
  const days = period ? Math.round((Date.parse(period.end) - Date.parse(period.start)) / 86_400_000) + 1 : 30;

  return (
    <>
      <AnalyticsHead title="Dashboard" />
      <div className="filters" role="group" aria-label="Filters">
        <label>
          Range
          <select
            value={PRESETS.includes(days) ? String(days) : 'custom'}
            onChange={(e) => e.target.value !== 'custom' && preset(Number(e.target.value))}
          >
            {PRESETS.map((d) => (
              <option key={d} value={d}>
                Last {d} days
              </option>
            ))}
            <option value="custom">Custom</option>
          </select>
        </label>
        <label>
          From
          <input
            type="date"
            value={f.start ?? period?.start ?? ''}
            onChange={(e) => e.target.value && setF({ ...f, start: e.target.value, end: f.end ?? period?.end })}
          />
        </label>
        <label>
          To
          <input
            type="date"
            value={f.end ?? period?.end ?? ''}
            onChange={(e) => e.target.value && setF({ ...f, end: e.target.value, start: f.start ?? period?.start })}
          />
        </label>
        <Select
          label="Compare to"
          value={f.compare}
          options={COMPARES}
          onChange={(compare) => setF({ ...f, compare })}
        />
        <Select
          label="Platform"
          value={f.platform ?? ''}
          options={PLATFORMS}
          onChange={(p) => setF({ ...f, platform: p || undefined })}
        />
      </div>
      <Tile
        title="Key metrics"
        query={kpis}
        asOf={(d) => ofMeta(d.meta)}
        actions={
          kpis.data && (
            <span className="muted">
              {kpis.data.period.start} to {kpis.data.period.end} vs {kpis.data.compared_to.start} to{' '}
              {kpis.data.compared_to.end}
            </span>
          )
        }
      >
        {(d) => <KpiGroups kpis={d.kpis} />}
      </Tile>
      <SeriesTile start={f.start} end={f.end} compare={f.compare} />
      <ActivityFeed />
    </>
  );
}

function KpiGroups({ kpis }: { kpis: Kpi[] }) {
  return (
    <>
      {GROUPS.map((g) => {
        const inGroup = kpis.filter((k) => viewOf(k.metric).group === g);
        if (inGroup.length === 0) return null;
        return (
          <div key={g} className="group">
            <h3>{g}</h3>
            <div className="tiles">
              {inGroup.map((k) => (
                <KpiCard key={k.metric} kpi={k} />
              ))}
            </div>
          </div>
        );
      })}
    </>
  );
}

const ARROW = { up: '▲', down: '▼', flat: '▬' };

function KpiCard({ kpi }: { kpi: Kpi }) {
  const v = viewOf(kpi.metric);
  return (
    <section className="card" aria-label={kpi.metric} data-testid={`kpi-${kpi.metric}`}>
      <span className="label">{v.label}</span>
      <span className="value" data-value={kpi.current ?? ''}>
        {formatValue(kpi.metric, kpi.current)}
      </span>
      <span className={kpi.trend}>
        <span aria-hidden="true">{ARROW[kpi.trend]}</span> {formatChange(kpi.change_pct)}
        <span className="muted"> (was {formatValue(kpi.metric, kpi.previous)})</span>
      </span>
      <Sparkline values={kpi.sparkline} label={v.label} />
    </section>
  );
}

const GRANULARITIES = ['daily', 'weekly', 'monthly'] as const;
const SEGMENTS = ['overall', 'platform', 'country'] as const;

function SeriesTile({ start, end, compare }: { start?: string; end?: string; compare: Compare }) {
  const scope = useScope();
  const { environment } = scope;
  const [metrics, setMetrics] = useState(DEFAULT_SERIES.metrics);
  const [granularity, setGranularity] = useState(DEFAULT_SERIES.granularity);
  const [segment, setSegment] = useState(DEFAULT_SERIES.segment);
  const [overlay, setOverlay] = useState(false);
  const q: SeriesQuery = {
    metrics: metrics.join(','),
    start_date: start,
    end_date: end,
    granularity,
    segment,
    compare: overlay ? compare : undefined,
    environment,
  };
  const series = useQuery({ ...seriesQuery(scope, q), enabled: metrics.length > 0 });
  const chart = useMemo(() => {
    if (!series.data) return null;
    const dates = [...new Set(series.data.metrics[0]?.data.map((p) => p.date) ?? [])];
    const lines: Line[] = [];
    for (const m of series.data.metrics) {
      const name = viewOf(m.metric).label;
      const keys = [...new Set(m.data.map((p) => p.breakdown_value ?? ''))];
      for (const k of keys) {
        const byDate = new Map(m.data.filter((p) => (p.breakdown_value ?? '') === k).map((p) => [p.date, p.value]));
        lines.push({ label: k ? `${name} · ${k}` : name, values: dates.map((d) => byDate.get(d) ?? null) });
      }
    }
    // The compare period's buckets overlay the current ones in order (bucket i on bucket i).
    for (const m of series.data.metrics) {
      if (!m.compare_data || segment !== 'overall') continue;
      lines.push({
        label: `${viewOf(m.metric).label} · ${m.compare_label}`,
        values: dates.map((_, i) => m.compare_data![i]?.value ?? null),
        dashed: true,
      });
    }
    return { dates, lines };
  }, [series.data, segment]);

  return (
    <Tile
      title="Trends"
      query={series}
      asOf={(d) => ofMeta(d.meta)}
      actions={
        <div className="row">
          <label>
            Metrics
            <select
              multiple
              size={3}
              value={metrics}
              onChange={(e) => setMetrics([...e.target.selectedOptions].map((o) => o.value))}
            >
              {Object.entries(METRIC_VIEW).map(([id, v]) => (
                <option key={id} value={id}>
                  {v.label}
                </option>
              ))}
            </select>
          </label>
          <Select label="Granularity" value={granularity} options={GRANULARITIES} onChange={setGranularity} />
          <Select label="Segment" value={segment} options={SEGMENTS} onChange={setSegment} />
          <label className="inline">
            <input type="checkbox" checked={overlay} onChange={(e) => setOverlay(e.target.checked)} /> Compare overlay
          </label>
        </div>
      }
    >
      {() =>
        chart && chart.dates.length > 0 ? (
          <LineChart dates={chart.dates} lines={chart.lines} label="Trends chart" />
        ) : (
          <p className="muted">No data in this period.</p>
        )
      }
    </Tile>
  );
}
