// Deployments: the list (live through the `deployments` topic, kept by the page) with the live one
// marked, who asked for each, cancel, rollback behind a confirmation, where a successful deploy
// answers, and the selected one's build log, which follows and can be paused.
import * as api from '../../api';
import type { Deployment } from '../../api';
import { BuildLog } from '../../buildlog';
import { useCan } from '../../access';
import { AppUrls, type AppUrl } from '../../proxy';
import { Badge, ErrorNote, When, useAction } from '../../ui';

function who(d: Deployment): string {
  if (d.created_by) return d.created_by;
  if (d.trigger === 'push' || d.trigger === 'tag') return `a ${d.trigger}`;
  return '—';
}

export function Deployments({
  id,
  urls,
  deployments,
  selected,
  onSelect,
}: {
  id: string;
  urls: AppUrl[];
  deployments: { data: Deployment[] | null; error: unknown; reload: () => Promise<void> };
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const act = useAction();
  const can = useCan();
  const shown = selected ?? deployments.data?.[0]?.id ?? null;
  // The newest succeeded deployment is what runs.
  const live = deployments.data?.find((d) => d.status === 'succeeded')?.id;
  const latest = deployments.data?.[0];
  const rollback = (d: Deployment) => {
    const what = d.commit ? `commit ${d.commit.slice(0, 7)}` : (d.image ?? 'its images');
    if (
      !confirm(
        `Roll back to the deployment of ${new Date(d.created_at).toLocaleString()} (${what})? Its kept images replace what runs now.`,
      )
    )
      return;
    void act.run(async () => {
      const r = await api.rollback(id, d.id);
      onSelect(r.deployment.id);
      await deployments.reload();
    });
  };
  return (
    <section class="card" aria-labelledby="dep-h">
      <h2 id="dep-h">Deployments</h2>
      <ErrorNote error={deployments.error ?? act.error} />
      {latest?.status === 'succeeded' && (
        <p class="ok" role="status" data-testid="deploy-live">
          Deployed.{' '}
          {urls.length ? (
            <>
              Live at <AppUrls urls={urls} />
            </>
          ) : (
            <span class="muted">No URL yet: see above the tabs for what gives it one.</span>
          )}
        </p>
      )}
      {deployments.data?.length === 0 && <p class="muted">Not deployed yet.</p>}
      {deployments.data && deployments.data.length > 0 && (
        <table class="stack-sm">
          <thead>
            <tr>
              <th>Started</th>
              <th>Status</th>
              <th>By</th>
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
                  {d.id === live && (
                    <span class="badge badge-live" data-testid="live-badge">
                      live
                    </span>
                  )}
                  {d.error && <div class="error small">{d.error}</div>}
                </td>
                <td>
                  {who(d)}
                  {d.trigger !== 'manual' && <div class="muted small">{d.trigger}</div>}
                </td>
                <td class="mono">
                  {d.commit ? d.commit.slice(0, 10) : '—'}{' '}
                  {d.commit_subject && <span class="muted">{d.commit_subject}</span>}
                  {d.config && <FromFile config={d.config} />}
                </td>
                <td class="row wrap">
                  <button type="button" onClick={() => onSelect(d.id)} aria-pressed={d.id === shown}>
                    Log
                  </button>
                  {!api.TERMINAL.includes(d.status) && can('app.deploy', id) && (
                    <button type="button" onClick={() => void act.run(() => api.cancelDeployment(id, d.id))}>
                      Cancel
                    </button>
                  )}
                  {d.status === 'succeeded' && d.id !== live && can('app.deploy', id) && (
                    <button type="button" disabled={act.busy} onClick={() => rollback(d)}>
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
          <BuildLog id={shown} deployment={deployments.data?.find((d) => d.id === shown) ?? null} />
        </>
      )}
    </section>
  );
}

/** What the repository's svc.yaml set for this deployment: the file wins for what it names. */
function FromFile({ config }: { config: NonNullable<Deployment['config']> }) {
  const names = Object.keys(config.applied);
  return (
    <div class="small muted" data-testid="deploy-config">
      {names.length
        ? `From ${config.file}: ${names.map((n) => n.replace(/^services\.[^.]+\./, '')).join(', ')}`
        : `${config.file} names no setting`}
    </div>
  );
}
