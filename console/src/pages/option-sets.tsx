import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useDeferredValue, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

/**
 * Option sets: browse a set's items in the SDK's order with the SDK's own search (the same
 * endpoint, so accents and case are ignored exactly as on devices), read with one of the app's
 * public keys.
 */
export default function OptionSets() {
  const keys = useQuery({ queryKey: useScopeKey('api-keys'), queryFn: () => unwrap(api.GET('/api/v1/sdk/api-keys')) });
  const sets = useQuery({
    queryKey: useScopeKey('option-sets'),
    queryFn: () => unwrap(api.GET('/api/v1/option-sets')),
  });
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
      {keys.data && active.length === 0 && (
        <p className="warning">Reading a set needs an active API key: create one on the API keys page.</p>
      )}
      <form className="tile row" aria-label="Open a set" onSubmit={onOpen}>
        <label>
          Set id
          <input value={setId} onChange={(e) => setSetId(e.target.value)} />
        </label>
        {active.length > 1 && (
          <Select
            label="Read with key"
            value={publicKey}
            options={active.map((k) => k.public_key)}
            onChange={setPicked}
          />
        )}
        <button type="submit" disabled={!publicKey || !setId.trim()}>
          Open
        </button>
      </form>
      <Tile title="Sets" query={sets}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Set</th>
                <th>Version</th>
                <th>Items</th>
                <th>Archived</th>
                <th>Last sync</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((x) => (
                <tr key={x.set_id} aria-label={`Set ${x.set_id}`}>
                  <td>
                    <code>{x.set_id}</code>
                  </td>
                  <td>{x.version}</td>
                  <td>{x.item_count}</td>
                  <td>{x.archived_count}</td>
                  <td>{new Date(x.updated_at).toLocaleString()}</td>
                  <td>
                    <button type="button" className="secondary" onClick={() => (setSetId(x.set_id), setOpen(x.set_id))}>
                      Open {x.set_id}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Tile>
      {open && publicKey && <Items key={`${open}/${publicKey}`} setId={open} publicKey={publicKey} />}
      {open && <Overview key={open} setId={open} />}
    </>
  );
}

function useOverview(setId: string) {
  return useQuery({
    queryKey: useScopeKey('option-set-overview', setId),
    queryFn: () => unwrap(api.GET('/api/v1/option-sets/{setId}', { params: { path: { setId } } })),
  });
}

function Items({ setId, publicKey }: { setId: string; publicKey: string }) {
  const locked = new Set(useOverview(setId).data?.data.locked_values ?? []);
  const [q, setQ] = useState('');
  const search = useDeferredValue(q.trim());
  const items = useInfiniteQuery({
    queryKey: useScopeKey('option-set', setId, search),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/sdk/option-sets/{setId}', {
          headers: { 'x-api-key': publicKey },
          params: { path: { setId }, query: { q: search || undefined, cursor: pageParam, limit: 50 } },
        }),
      ),
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
        <label>
          Search
          <input
            type="search"
            value={q}
            onChange={(e) => setQ(e.target.value)}
            placeholder="any word, accents ignored"
          />
        </label>
      </header>
      {items.isPending ? (
        <p className="muted">Loading…</p>
      ) : items.isError ? (
        <Problem error={items.error} />
      ) : (
        <>
          <table>
            <thead>
              <tr>
                <th>Value</th>
                <th>Label</th>
                <th>Id</th>
                <th>Order</th>
                <th>Data</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((it) => (
                <tr key={it.value} aria-label={`Option ${it.value}`}>
                  <td>
                    <code>{it.value}</code>
                    {locked.has(it.value) && (
                      <span className="badge" title="Recorded by an answer: a sync cannot change it">
                        {' '}
                        locked
                      </span>
                    )}
                  </td>
                  <td>{it.label}</td>
                  <td>{it.id ?? '—'}</td>
                  <td>{it.sort_order}</td>
                  <td>{it.option_data ? <code>{JSON.stringify(it.option_data)}</code> : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length === 0 && <p className="muted">No item matches.</p>}
          {items.hasNextPage && (
            <button
              type="button"
              className="secondary"
              disabled={items.isFetchingNextPage}
              onClick={() => items.fetchNextPage()}
            >
              More
            </button>
          )}
        </>
      )}
    </section>
  );
}

/** Archived items apart (the SDK does not serve them) and the sync history. */
function Overview({ setId }: { setId: string }) {
  const o = useOverview(setId);
  return (
    <Tile title={`Archived and syncs of ${setId}`} query={o}>
      {({ data }) => (
        <div className="row">
          <section aria-label="Archived items">
            <h3>Archived items</h3>
            {data.archived.length === 0 ? (
              <p className="muted">None.</p>
            ) : (
              <ul>
                {data.archived.map((a) => (
                  <li key={a.value}>
                    <code>{a.value}</code> {a.label}
                  </li>
                ))}
              </ul>
            )}
          </section>
          <section aria-label="Sync history">
            <h3>Sync history</h3>
            <ul className="feed">
              {data.syncs.map((x, i) => (
                <li key={i}>
                  {x.description}
                  <time>{new Date(x.at).toLocaleString()}</time>
                </li>
              ))}
            </ul>
          </section>
        </div>
      )}
    </Tile>
  );
}
