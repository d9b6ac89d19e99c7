import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useDeferredValue, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { useScopeKey } from '../session';

/**
 * Option sets: browse a set's items in the SDK's order with the SDK's own search (the same
 * endpoint, so accents and case are ignored exactly as on devices), read with one of the app's
 * public keys.
 */
export default function OptionSets() {
  const keys = useQuery({ queryKey: useScopeKey('api-keys'), queryFn: () => unwrap(api.GET('/api/v1/sdk/api-keys')) });
  const active = keys.data?.data.filter((k) => k.status === 'active') ?? [];
  const [picked, setPicked] = useState('');
  const [setId, setSetId] = useState('');
  const [open, setOpen] = useState('');
  const publicKey = picked || active[0]?.public_key || '';
  const onOpen = (e: FormEvent) => (e.preventDefault(), setOpen(setId.trim()));
  return (
    <>
      <h1>Option sets</h1>
      <Problem error={keys.error} />
      {keys.data && active.length === 0 && <p className="warning">Reading a set needs an active API key: create one on the API keys page.</p>}
      <form className="tile row" aria-label="Open a set" onSubmit={onOpen}>
        <label>Set id<input value={setId} onChange={(e) => setSetId(e.target.value)} /></label>
        {active.length > 1 && <Select label="Read with key" value={publicKey} options={active.map((k) => k.public_key)} onChange={setPicked} />}
        <button type="submit" disabled={!publicKey || !setId.trim()}>Open</button>
      </form>
      {open && publicKey && <Items key={`${open}/${publicKey}`} setId={open} publicKey={publicKey} />}
    </>
  );
}

function Items({ setId, publicKey }: { setId: string; publicKey: string }) {
  const [q, setQ] = useState('');
  const search = useDeferredValue(q.trim());
  const items = useInfiniteQuery({
    queryKey: useScopeKey('option-set', setId, search),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/sdk/option-sets/{setId}', {
        headers: { 'x-api-key': publicKey },
        params: { path: { setId }, query: { q: search || undefined, cursor: pageParam, limit: 50 } },
      })),
    getNextPageParam: (last) => last.data.next_cursor ?? undefined,
    placeholderData: keepPreviousData, // the last answer stays on screen while the next search runs
  });
  const first = items.data?.pages[0]?.data;
  const rows = items.data?.pages.flatMap((p) => p.data.items) ?? [];
  return (
    <section className="tile" aria-label={`Set ${setId}`}>
      <header className="row">
        <h2>{setId}</h2>
        {first && <span className="badge">version {first.version}</span>}
        <label>Search<input type="search" value={q} onChange={(e) => setQ(e.target.value)} placeholder="any word, accents ignored" /></label>
      </header>
      {items.isPending ? <p className="muted">Loading…</p> : items.isError ? <Problem error={items.error} /> : (
        <>
          <table>
            <thead><tr><th>Value</th><th>Label</th><th>Id</th><th>Order</th><th>Data</th></tr></thead>
            <tbody>
              {rows.map((it) => (
                <tr key={it.value} aria-label={`Option ${it.value}`}>
                  <td><code>{it.value}</code></td><td>{it.label}</td><td>{it.id ?? '—'}</td><td>{it.sort_order}</td>
                  <td>{it.option_data ? <code>{JSON.stringify(it.option_data)}</code> : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length === 0 && <p className="muted">No item matches.</p>}
          {items.hasNextPage && <button type="button" className="secondary" disabled={items.isFetchingNextPage} onClick={() => items.fetchNextPage()}>More</button>}
        </>
      )}
    </section>
  );
}
