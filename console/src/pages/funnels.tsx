import { useQuery } from '@tanstack/react-query';
import { AnalyticsHead } from '../components/page-head';
import { Tile } from '../components/tile';
import { useScope } from '../session';
import { funnelListQuery, funnelQuery } from './analytics-queries';

const pct = (v: number | null) => (v === null ? '—' : `${v}%`);

/** The nine named funnels, each in its own tile (own query: they load in parallel and fail alone). */
export default function Funnels() {
  const defs = useQuery(funnelListQuery(useScope()));
  return (
    <>
      <AnalyticsHead title="Funnels" />
      <p className="muted">
        Users entering in the 30 days up to the date shown; each later step within 7 days of entry.
      </p>
      <Tile title="Funnel list" query={defs}>
        {(d) => (
          <div className="funnels">
            {d.data.map((f) => (
              <FunnelTile key={f.funnel_name} name={f.funnel_name} overridden={f.overridden} />
            ))}
          </div>
        )}
      </Tile>
    </>
  );
}

function FunnelTile({ name, overridden }: { name: string; overridden: boolean }) {
  const q = useQuery(funnelQuery(useScope(), name));
  return (
    <Tile
      title={name}
      query={q}
      asOf={(d) => ({ date: d.meta.as_of, at: d.computed_at })}
      actions={overridden && <span className="muted">custom steps</span>}
    >
      {(d) => {
        // Bars are relative to the largest step (an ad-stats step may be 0 and a later one not).
        const top = Math.max(1, ...d.steps.map((s) => s.users));
        return (
          <ol className="bars" aria-label={`${name} steps`}>
            {d.steps.map((s) => (
              <li key={s.step_order} className="bar" aria-label={s.step_name}>
                <span>
                  {s.step_order}. {s.step_name}
                </span>
                <span className="track">
                  <span className="fill" style={{ width: `${(s.users / top) * 100}%` }} />
                </span>
                <span>
                  <strong data-users={s.users}>{s.users.toLocaleString()}</strong> users ·{' '}
                  {s.step_order === 1
                    ? 'entry'
                    : `${pct(s.conversion_rate)} converted, ${pct(s.drop_off_rate)} dropped`}
                </span>
              </li>
            ))}
          </ol>
        );
      }}
    </Tile>
  );
}
