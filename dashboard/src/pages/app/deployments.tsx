// Deployments: the list (live through the `deployments` topic, kept by the page), cancel,
// rollback, and the selected one's build log, which follows and can be paused.
import * as api from '../../api';
import type { Deployment } from '../../api';
import { LogView } from '../../logview';
import { Badge, ErrorNote, When, useAction } from '../../ui';

export function Deployments({
  id,
  deployments,
  selected,
  onSelect,
}: {
  id: string;
  deployments: { data: Deployment[] | null; error: unknown; reload: () => Promise<void> };
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const act = useAction();
  const shown = selected ?? deployments.data?.[0]?.id ?? null;
  const current = deployments.data?.find((d) => d.status === 'succeeded')?.id;
  return (
    <section class="card" aria-labelledby="dep-h">
      <h2 id="dep-h">Deployments</h2>
      <ErrorNote error={deployments.error ?? act.error} />
      {deployments.data?.length === 0 && <p class="muted">Not deployed yet.</p>}
      {deployments.data && deployments.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Started</th>
              <th>Status</th>
              <th>Trigger</th>
              <th>Commit</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deployments.data.map((d) => (
              <tr key={d.id} class={d.id === shown ? 'selected' : undefined} data-testid="deployment-row">
                <td>
                  <When at={d.created_at} />
                </td>
                <td>
                  <Badge status={d.status} />
                  {d.error && <div class="error small">{d.error}</div>}
                </td>
                <td>{d.trigger}</td>
                <td class="mono">
                  {d.commit ? d.commit.slice(0, 10) : '—'}{' '}
                  {d.commit_subject && <span class="muted">{d.commit_subject}</span>}
                </td>
                <td class="row">
                  <button type="button" onClick={() => onSelect(d.id)} aria-pressed={d.id === shown}>
                    Log
                  </button>
                  {!api.TERMINAL.includes(d.status) && (
                    <button type="button" onClick={() => void act.run(() => api.cancelDeployment(id, d.id))}>
                      Cancel
                    </button>
                  )}
                  {d.status === 'succeeded' && d.id !== current && (
                    <button
                      type="button"
                      onClick={() =>
                        void act.run(async () => {
                          const r = await api.rollback(id, d.id);
                          onSelect(r.deployment.id);
                          await deployments.reload();
                        })
                      }
                    >
                      Roll back
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {shown && (
        <>
          <h3>Build log</h3>
          <LogView topic={`build:${shown}`} label="Build log" />
        </>
      )}
    </section>
  );
}
