import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Problem } from './problem';

/** How fresh a tile's numbers are: the rollups' day (app timezone) and the instant they were computed. */
export interface Freshness {
  /** YYYY-MM-DD, the app's day the rollups are folded to; null before the first fold. */
  date: string | null;
  /** ISO instant the numbers were computed (the last fold, or the funnel's count); null before it. */
  at: string | null;
}

/** To the minute, in the viewer's locale and time zone (the browser's). */
const MINUTE = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * A dashboard tile: its own query, so tiles load in parallel and fail alone. `asOf` is the
 * freshness the endpoint reports; the body renders only with data.
 */
export function Tile<T>({
  title,
  query,
  asOf,
  children,
  className,
  actions,
}: {
  title: string;
  query: UseQueryResult<T>;
  asOf?: (d: T) => Freshness;
  children: (d: T) => ReactNode;
  className?: string;
  actions?: ReactNode;
}) {
  const fresh = query.data !== undefined && asOf ? asOf(query.data) : undefined;
  return (
    <section className={`tile ${className ?? ''}`} aria-label={title} aria-busy={query.isPending}>
      <header>
        <h2>{title}</h2>
        {actions}
      </header>
      {query.isPending ? (
        <p className="muted">Loading…</p>
      ) : query.isError ? (
        <Problem error={query.error} />
      ) : (
        children(query.data as T)
      )}
      {fresh && (
        <p className="fresh">
          {fresh.date === null ? 'No fold yet' : `Data as of ${fresh.date}`}
          {fresh.at !== null && (
            <>
              , computed <time dateTime={fresh.at}>{MINUTE.format(new Date(fresh.at))}</time>
            </>
          )}
        </p>
      )}
    </section>
  );
}

/** The freshness of an analytics answer (its `meta`). */
export const ofMeta = (m: { as_of: string | null; folded_at: string | null }): Freshness => ({
  date: m.as_of,
  at: m.folded_at,
});
