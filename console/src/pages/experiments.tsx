import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Tile } from '../components/tile';
import { atLeast } from '../roles';
import { useScopeKey, useWorkspace } from '../session';
import { ExperimentForm } from './experiment-form';
import { ExperimentResults } from './experiment-results';
import { type Experiment, ShipExperiment } from './experiment-ship';

/** Experiments: the list with status, a draft form, start / stop / ship, and the results of the one picked. */
export default function Experiments() {
  const qc = useQueryClient();
  const { role } = useWorkspace();
  const key = useScopeKey('experiments');
  const list = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/experiments')) });
  const [picked, setPicked] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const action = useMutation({
    mutationFn: ({ id, verb }: { id: string; verb: 'start' | 'stop' }) =>
      verb === 'start'
        ? unwrap(api.POST('/api/v1/experiments/{id}/start', { params: { path: { id } } }))
        : unwrap(api.POST('/api/v1/experiments/{id}/stop', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  const admin = atLeast(role, 'admin');
  const current = list.data?.data.find((e) => e.id === picked);
  return (
    <>
      <h1>Experiments</h1>
      {creating ? (
        <ExperimentForm
          onDone={(id) => {
            setCreating(false);
            if (id) setPicked(id);
            void refresh();
          }}
        />
      ) : (
        <div className="row">
          <button type="button" onClick={() => setCreating(true)} disabled={!atLeast(role, 'member')}>
            New experiment
          </button>
        </div>
      )}
      <Problem error={action.error} />
      <Tile title="All experiments" query={list}>
        {(d) =>
          d.data.length === 0 ? (
            <p className="muted">No experiment yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Name</th>
                  <th>Status</th>
                  <th>Variants</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.data.map((e) => (
                  <tr key={e.id} aria-label={`Experiment ${e.key}`} aria-selected={e.id === picked}>
                    <td>
                      <code>{e.key}</code>
                    </td>
                    <td>{e.name}</td>
                    <td>
                      {e.status}
                      {e.shipped_variant ? ` (${e.shipped_variant})` : ''}
                    </td>
                    <td>{e.variants.map((v) => `${v.key} ${v.weight}%`).join(', ')}</td>
                    <td className="row">
                      <button type="button" className="secondary" onClick={() => setPicked(e.id)}>
                        Open
                      </button>
                      {admin && e.status === 'draft' && (
                        <button type="button" onClick={() => action.mutate({ id: e.id, verb: 'start' })}>
                          Start
                        </button>
                      )}
                      {admin && e.status === 'running' && (
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => action.mutate({ id: e.id, verb: 'stop' })}
                        >
                          Stop
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Tile>
      {current && <ExperimentDetail experiment={current} admin={admin} onChanged={refresh} />}
    </>
  );
}

function ExperimentDetail({
  experiment,
  admin,
  onChanged,
}: {
  experiment: Experiment;
  admin: boolean;
  onChanged(): void;
}) {
  const canShip = admin && (experiment.status === 'running' || experiment.status === 'stopped');
  return (
    <section className="stack" aria-label={`Experiment ${experiment.key} details`}>
      <h2>
        {experiment.name} <code>{experiment.key}</code>
      </h2>
      {experiment.hypothesis && <p>{experiment.hypothesis}</p>}
      {experiment.status !== 'draft' && <ExperimentResults experiment={experiment} />}
      {canShip && <ShipExperiment experiment={experiment} onShipped={onChanged} />}
    </section>
  );
}
