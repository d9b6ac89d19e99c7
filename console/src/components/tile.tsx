import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Problem } from './problem';

/**
 * A dashboard tile: its own query, so tiles load in parallel and fail alone. `asOf` is the
 * freshness the endpoint reports (the rollups' date); the body renders only with data.
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
  asOf?: (d: T) => string | null | undefined;
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
      {query.data !== undefined && asOf && <p className="fresh">Data as of {fresh ?? 'no fold yet'}</p>}
    </section>
  );
}
