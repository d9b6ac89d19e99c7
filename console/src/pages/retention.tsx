import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { AnalyticsHead } from '../components/page-head';
import { Select } from '../components/select';
import { ofMeta, Tile } from '../components/tile';
import { useScope } from '../session';
import { type RetentionSegment, retentionQuery } from './analytics-queries';

const DAYS = ['d1', 'd3', 'd7', 'd14', 'd30', 'd60', 'd90'] as const;
const SEGMENTS: RetentionSegment[] = ['overall', 'platform', 'country'];

/** Cohorts by first day; a day not reached yet (null) stays blank, not 0. */
export default function Retention() {
  const [segment, setSegment] = useState<RetentionSegment>('overall');
  const q = useQuery(retentionQuery(useScope(), segment));
  return (
    <>
      <AnalyticsHead title="Retention" />
      <Tile
        title="Retention cohorts"
        query={q}
        asOf={(d) => ofMeta(d.meta)}
        actions={<Select label="Segment" value={segment} options={SEGMENTS} onChange={setSegment} />}
      >
        {(d) =>
          d.cohorts.length === 0 ? (
            <p className="muted">
              No cohorts in {d.period.start} to {d.period.end}.
            </p>
          ) : (
            <table className="heat" aria-label="Retention heatmap">
              <thead>
                <tr>
                  <th>Cohort</th>
                  {segment !== 'overall' && <th>{segment}</th>}
                  <th>Users</th>
                  {DAYS.map((k) => (
                    <th key={k}>Day {k.slice(1)}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {d.cohorts.map((c) => (
                  <tr key={`${c.cohort_date}/${c.segment}`}>
                    <th scope="row">{c.cohort_date}</th>
                    {segment !== 'overall' && <td>{c.segment}</td>}
                    <td>{c.cohort_size}</td>
                    {DAYS.map((k) => {
                      const v = c.retention[k];
                      return (
                        <td
                          key={k}
                          style={
                            v === null
                              ? undefined
                              : {
                                  background: `rgba(53, 89, 199, ${0.08 + (v / 100) * 0.8})`,
                                  color: v > 55 ? '#fff' : undefined,
                                }
                          }
                        >
                          {v === null ? '' : `${v}%`}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Tile>
    </>
  );
}
