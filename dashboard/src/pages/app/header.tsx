// An app's header: its name and status, where it answers (its URLs with their HTTPS state, or why
// it has none), the proxy's state when it does not serve, and the controls this operator may use:
// Deploy (busy while a deployment is queued or runs), Stop or Start, Export, Delete.
import * as api from '../../api';
import type { App, Deployment } from '../../api';
import { navigate } from '../../router';
import { useCan } from '../../access';
import { AppBadge } from '../../status';
import { AppUrls, NoUrlHint, ProxyNotice, type AppUrl, type ProxyHealth } from '../../proxy';
import { ErrorNote, useAction, useLoad } from '../../ui';

/** Statuses in which the app has containers to stop. */
const UP: ReadonlySet<App['status']> = new Set(['running', 'degraded', 'crash_loop', 'oom']);

function sourceText(a: App): string {
  if (a.source.type === 'git') return `${a.source.repo_url} @ ${a.source.branch}`;
  if (a.source.type === 'image') return a.source.image;
  return 'inline Compose';
}

/** Saves the app's portable description (no secret values) as `<name>.json`. */
async function download(a: App): Promise<void> {
  const spec = await api.exportApp(a.id);
  const url = URL.createObjectURL(new Blob([JSON.stringify(spec, null, 2)], { type: 'application/json' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = `${a.name}.json`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function AppHeader(props: {
  app: App;
  urls: AppUrl[] | undefined;
  proxy: ProxyHealth | undefined;
  deployments: Deployment[] | null;
  onDeploy: () => Promise<unknown>;
  onChanged: () => Promise<unknown>;
}) {
  const a = props.app;
  const can = useCan();
  const act = useAction();
  // Without a URL: is a service missing its port? (Asked only then.)
  const noUrl = props.urls !== undefined && props.urls.length === 0;
  const services = useLoad(
    () => (noUrl ? api.listServices(a.id).then((r) => r.items) : Promise.resolve(null)),
    [a.id, noUrl, a.status, props.deployments?.[0]?.status],
  );
  const inFlight = props.deployments?.find((d) => !api.TERMINAL.includes(d.status));
  const control = (action: 'start' | 'stop') =>
    void act.run(async () => {
      await api.appAction(a.id, action);
      await props.onChanged();
    });
  return (
    <>
      <div class="row spread wrap">
        <h1>
          {a.name} <AppBadge status={a.status} />
        </h1>
        <div class="row wrap" role="group" aria-label="App actions">
          {can('app.deploy', a.id) && (
            <button
              type="button"
              class="primary"
              disabled={act.busy || !!inFlight}
              aria-busy={inFlight ? true : undefined}
              onClick={() => void act.run(props.onDeploy)}
            >
              {inFlight ? (inFlight.status === 'queued' ? 'Queued…' : 'Deploying…') : 'Deploy'}
            </button>
          )}
          {can('app.deploy', a.id) &&
            (UP.has(a.status) ? (
              <button
                type="button"
                disabled={act.busy}
                onClick={() =>
                  confirm(`Stop every container of ${a.name}? It stops answering.`) && control('stop')
                }
              >
                Stop
              </button>
            ) : a.status === 'stopped' || a.status === 'failed' || a.status === 'sleeping' ? (
              <button type="button" disabled={act.busy} onClick={() => control('start')}>
                Start
              </button>
            ) : null)}
          <button type="button" disabled={act.busy} onClick={() => void act.run(() => download(a))}>
            Export
          </button>
          {can('app.admin', a.id) && (
            <button
              type="button"
              class="danger"
              onClick={() => {
                if (!confirm(`Delete ${a.name} with its containers, networks and secrets?`)) return;
                void act.run(async () => {
                  await api.deleteApp(a.id);
                  navigate('/apps');
                });
              }}
            >
              Delete
            </button>
          )}
        </div>
      </div>
      <p class="muted mono ellipsis-wrap">{sourceText(a)}</p>
      <p data-testid="app-where">
        {props.urls === undefined ? null : props.urls.length ? (
          <AppUrls urls={props.urls} />
        ) : (
          <NoUrlHint services={services.data} />
        )}
      </p>
      <ProxyNotice proxy={props.proxy} />
      <ErrorNote error={act.error} />
    </>
  );
}
