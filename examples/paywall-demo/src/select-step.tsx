import type { Client } from '@mobile-sdk-backend/sdk';
import { useEffect, useState } from 'react';

/** An Option Set item as the service answers it. */
export interface Option {
  value: string;
  label: string;
  option_data?: Record<string, unknown> | null;
}

interface OptionPage {
  items: Option[];
  next_cursor: string | null;
}

/**
 * A select control over an Option Set: the bundle's first page at once, then the service's search
 * (`client.optionSet(setId, { q })`) as the user types.
 */
export function SelectStep(props: { client: Client; setId: string; firstPage: Option[]; onPick: (o: Option) => void }) {
  const { client, setId, firstPage } = props;
  const [q, setQ] = useState('');
  const [items, setItems] = useState(firstPage);
  const [error, setError] = useState('');

  useEffect(() => {
    if (!q.trim()) return setItems(firstPage);
    let live = true;
    const timer = setTimeout(() => {
      client.optionSet(setId, { q: q.trim() }).then(
        (page) => live && (setItems((page as OptionPage).items), setError('')),
        (e: unknown) => live && setError(String(e)),
      );
    }, 150); // one search per pause in typing
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [client, setId, q, firstPage]);

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
