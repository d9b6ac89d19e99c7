import type { FlowRun } from '@mobile-sdk-backend/sdk';
import { useEffect, useState } from 'react';

/** An Option Set item: what the bundle carries for the first page, and what a search answers. */
export interface Option {
  value: string;
  label: string;
  option_data?: Record<string, unknown> | null;
}

/**
 * A select control over the Option Set step `index` names: the bundle's first page at once, then the
 * service's search through the flow runtime (`flow.options(index, { q })`) as the user types.
 */
export function SelectStep(props: { flow: FlowRun; index: number; firstPage: Option[]; onPick: (o: Option) => void }) {
  const { flow, index, firstPage } = props;
  const [q, setQ] = useState('');
  const [items, setItems] = useState(firstPage);
  const [error, setError] = useState('');

  useEffect(() => {
    if (!q.trim()) return setItems(firstPage);
    let live = true;
    const timer = setTimeout(() => {
      flow.options(index, { q: q.trim() }).then(
        (page) => live && (setItems(page.items as Option[]), setError('')),
        (e: unknown) => live && setError(String(e)),
      );
    }, 150); // one search per pause in typing
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [flow, index, q, firstPage]);

  return (
    <div>
      <input
        type="search"
        aria-label="Search"
        placeholder="Search…"
        value={q}
        onChange={(e) => setQ(e.target.value)}
        autoFocus
      />
      {error && <p role="alert">{error}</p>}
      <ul className="options" aria-label="Options">
        {items.map((o) => (
          <li key={o.value}>
            <button type="button" onClick={() => props.onPick(o)}>
              {o.label}
              {typeof o.option_data?.country === 'string' && <small> {o.option_data.country}</small>}
            </button>
          </li>
        ))}
        {items.length === 0 && !error && <li className="muted">No match</li>}
      </ul>
    </div>
  );
}
