import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { Tile } from '../components/tile';
import { useScopeKey, useWorkspace } from '../session';
import type { Experiment } from './experiment-ship';

type Interval = number[] | null | undefined;

const fmt = (x: number | null | undefined, digits = 4) =>
  x === null || x === undefined ? '—' : Number(x.toPrecision(digits)).toString();
const fmtInterval = (ci: Interval) => (ci ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : '—');
const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${fmt(x * 100, 3)}%`);

/** The two 95% intervals of an effect, drawn around zero on the metric's own scale. */
function IntervalBars({ fixed, sequential, extent }: { fixed: Interval; sequential: Interval; extent: number }) {
  const W = 160;
  const x = (v: number) => W / 2 + (v / extent) * (W / 2 - 4);
  const bar = (ci: Interval, y: number, cls: string) =>
    ci && <line className={cls} x1={x(ci[0])} x2={x(ci[1])} y1={y} y2={y} strokeWidth={y === 6 ? 5 : 3} />;
  return (
    <svg
      width={W}
      height={18}
      className="ci-bars"
      role="img"
      aria-label={`fixed ${fmtInterval(fixed)}, sequential ${fmtInterval(sequential)}`}
    >
      <line className="ci-zero" x1={W / 2} x2={W / 2} y1={0} y2={18} />
      {bar(fixed, 6, 'ci-fixed')}
      {bar(sequential, 13, 'ci-sequential')}
    </svg>
  );
}

/** The results of an experiment (decisions §10): health first, then one row per variant and metric. */
export function ExperimentResults({ experiment }: { experiment: Experiment }) {
  const { environment } = useWorkspace();
  const results = useQuery({
    queryKey: useScopeKey('experiment-results', experiment.id),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/experiments/{id}/results', {
          params: { path: { id: experiment.id }, query: { environment } },
        }),
      ),
  });
  return (
    <Tile
      title="Results"
      query={results}
      asOf={(r) => ({ date: r.data.as_of?.slice(0, 10) ?? null, at: r.data.as_of })}
      actions={
        <button type="button" className="secondary" onClick={() => void results.refetch()}>
          Refresh
        </button>
      }
    >
      {({ data: r }) => {
        const { srm } = r.health;
        return (
          <div className="stack">
            {srm.flagged && (
              <p role="alert" className="problem">
                Sample ratio mismatch: the devices per variant differ from the weights (chi² {fmt(srm.chi2)}, p ={' '}
                {fmt(srm.p_value, 2)}). Find the cause before trusting or shipping these results.
              </p>
            )}
            <p>
              Devices that saw more than one variant (excluded): {r.health.multiple_variant_devices}. Exposures whose
              variant differs from the recomputed assignment: {r.health.assignment_mismatches}.
            </p>
            <table aria-label="Devices per variant">
              <thead>
                <tr>
                  <th>Variant</th>
                  <th>Weight</th>
                  <th>Devices</th>
                </tr>
              </thead>
              <tbody>
                {r.variants.map((v) => (
                  <tr key={v.key}>
                    <td>{v.key}</td>
                    <td>{v.weight}%</td>
                    <td>{v.devices}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.metrics.map((m) => {
              const extent =
                Math.max(
                  ...m.comparisons.flatMap((c) =>
                    [...(c.absolute.ci_95 ?? []), ...(c.sequential.ci_95 ?? [])].map(Math.abs),
                  ),
                  1e-9,
                ) * 1.05;
              return (
                <table key={m.metric} aria-label={`Metric ${m.metric}`}>
                  <caption>
                    {m.metric} ({m.role}, {m.kind}): bars show the 95% interval of the difference with{' '}
                    {m.comparisons[0]?.baseline ?? 'control'}, fixed-sample (thick) and always-valid (thin), around zero
                  </caption>
                  <thead>
                    <tr>
                      <th>Variant</th>
                      <th>Devices</th>
                      <th>Mean</th>
                      <th>Difference</th>
                      <th>Relative</th>
                      <th>Intervals</th>
                      <th>Sequential 95%</th>
                      <th>p-value</th>
                    </tr>
                  </thead>
                  <tbody>
                    {m.variants.map((v) => {
                      const c = m.comparisons.find((x) => x.variant === v.key);
                      return (
                        <tr key={v.key} aria-label={`${m.metric} ${v.key}`}>
                          <td>{v.key}</td>
                          <td>{v.n}</td>
                          <td>{fmt(v.mean)}</td>
                          <td>{c ? `${fmt(c.absolute.estimate)} ${fmtInterval(c.absolute.ci_95)}` : 'baseline'}</td>
                          <td>{c ? `${pct(c.relative.estimate)}` : ''}</td>
                          <td>
                            {c && (
                              <IntervalBars fixed={c.absolute.ci_95} sequential={c.sequential.ci_95} extent={extent} />
                            )}
                          </td>
                          <td>{c ? fmtInterval(c.sequential.ci_95) : ''}</td>
                          <td>{c ? fmt(c.absolute.p_value, 3) : ''}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              );
            })}
          </div>
        );
      }}
    </Tile>
  );
}
