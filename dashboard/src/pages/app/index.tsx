// One app: its header (status, deploy, delete) and a tab per area. The tab is in the query
// (`?tab=logs`) so a tab can be linked and the browser's back button walks tabs; the heavy tabs
// (metrics with uPlot, the shell with xterm) load their libraries only when opened.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from '../../api';
import type { App, Deployment } from '../../api';
import { useTopic } from '../../ws';
import { useCan } from '../../access';
import { ownStatus } from '../../status';
import { useTitle } from '../../title';
import { ErrorNote, useLoad, useThrottled } from '../../ui';
import { AppHeader } from './header';
import { OverviewTab } from './overview';
import { LogsTab } from './logs';
import { MetricsTab } from './metrics';
import { DomainsTab } from './domains';
import { DatabasesTab } from './databases';
import { BackupsTab } from './backups';
import { GitTab } from './git';
import { BuildTab } from './build';
import { ShellTab } from './shell';
import { PreviewsTab } from './previews';
import { JobsTab } from './jobs';
import { SourceTab } from './source';

export const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'logs', label: 'Logs' },
  { id: 'metrics', label: 'Metrics' },
  { id: 'domains', label: 'Domains' },
  { id: 'databases', label: 'Databases' },
  { id: 'backups', label: 'Backups' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'source', label: 'Source' },
  { id: 'git', label: 'Webhook & key' },
  { id: 'build', label: 'Build' },
  { id: 'previews', label: 'Previews' },
  { id: 'shell', label: 'Shell' },
] as const;
export type TabId = (typeof TABS)[number]['id'];

function tabFromUrl(): TabId {
  const t = new URLSearchParams(location.search).get('tab');
  return (TABS.find((x) => x.id === t)?.id ?? 'overview') as TabId;
}

function useTab(): [TabId, (t: TabId) => void] {
  const [tab, setTab] = useState<TabId>(tabFromUrl);
  useEffect(() => {
    const l = () => setTab(tabFromUrl());
    addEventListener('popstate', l);
    return () => removeEventListener('popstate', l);
  }, []);
  const go = (t: TabId) => {
    if (t === tab) return;
    history.pushState(null, '', t === 'overview' ? location.pathname : `${location.pathname}?tab=${t}`);
    setTab(t);
  };
  return [tab, go];
}

export function AppPage({ id }: { id: string }) {
  const loaded = useLoad(() => api.getApp(id), [id]);
  const app = {
    data: loaded.data?.app ?? null,
    error: loaded.error,
    set: (a: App) => loaded.data && loaded.set({ ...loaded.data, app: a }),
  };
  useTitle(app.data?.name ?? 'App');
  const deployments = useLoad(() => api.listDeployments(id).then((r) => r.items), [id]);
  const [selected, setSelected] = useState<string | null>(null);
  // Bumped when a deployment ends: services and their state come from what it deployed.
  const [settled, setSettled] = useState(0);
  const [tab, setTab] = useTab();
  const can = useCan();
  useLiveApp(id, app, deployments, loaded.reload, () => setSettled((n) => n + 1));

  if (!app.data)
    return (
      <main>
        {app.error ? <h1>App</h1> : null}
        {app.error ? <ErrorNote error={app.error} /> : <p class="muted">Loading…</p>}
      </main>
    );
  const a = app.data;
  // Only a git app is built from source: the others have no Build tab, nor previews (built from
  // branches); the shell only for those who may open one.
  const tabs = TABS.filter(
    (t) =>
      ((t.id !== 'build' && t.id !== 'previews' && t.id !== 'git') || a.source.type === 'git') &&
      (t.id !== 'shell' || can('app.shell', a.id)),
  );
  const startDeploy = async () => {
    const r = await api.deploy(id);
    setSelected(r.deployment.id);
    setTab('overview');
    await deployments.reload();
  };

  return (
    <main>
      <AppHeader
        app={a}
        urls={loaded.data?.urls}
        proxy={loaded.data?.proxy}
        deployments={deployments.data}
        onDeploy={startDeploy}
        onChanged={loaded.reload}
      />
      <TabList tabs={tabs} tab={tab} onTab={setTab} />
      <div id="app-tabpanel" role="tabpanel" aria-labelledby={`tab-${tab}`} class="tabpanel">
        {tab === 'overview' && (
          <OverviewTab
            app={a}
            onSaved={app.set}
            onDeploy={startDeploy}
            urls={loaded.data?.urls ?? []}
            onChanged={loaded.reload}
            settled={settled}
            deployments={deployments}
            selected={selected}
            onSelect={setSelected}
          />
        )}
        {tab === 'logs' && <LogsTab id={id} />}
        {tab === 'metrics' && <MetricsTab id={id} />}
        {tab === 'domains' && <DomainsTab id={id} />}
        {tab === 'databases' && <DatabasesTab id={id} />}
        {tab === 'backups' && <BackupsTab id={id} />}
        {tab === 'jobs' && <JobsTab id={id} />}
        {tab === 'source' && (
          <SourceTab
            app={a}
            onSaved={app.set}
            onDeployed={(did) => {
              setSelected(did);
              setTab('overview');
              void deployments.reload();
            }}
          />
        )}
        {tab === 'git' && <GitTab id={id} source={a.source} />}
        {tab === 'build' && <BuildTab app={a} onSaved={app.set} />}
        {tab === 'previews' && <PreviewsTab app={a} />}
        {tab === 'shell' && <ShellTab id={id} />}
      </div>
    </main>
  );
}

type Loaded<T> = { data: T | null; set: (t: T) => void };

/**
 * Keeps the page in step with the topics: deployments as they move (`onSettled` when one ends),
 * and the app's own status on the badge; a container's or a database's event on the `apps` topic
 * (exited, error...) makes it ask the API for the app (status, URLs) instead, at most once a second.
 */
function useLiveApp(
  id: string,
  app: { data: App | null; set: (a: App) => unknown },
  deployments: Loaded<Deployment[]>,
  reload: () => Promise<void>,
  onSettled: () => void,
): void {
  const reloadSoon = useThrottled(() => void reload(), 1_000);
  useTopic('deployments', (d: any) => {
    if (d?.type !== 'status' || d.app_id !== id) return;
    const dep = d as Deployment;
    if (api.TERMINAL.includes(dep.status)) {
      onSettled();
      // A finished deployment may have given the app its URLs.
      reloadSoon();
    }
    const list = deployments.data ?? [];
    deployments.set(
      list.some((x) => x.id === dep.id)
        ? list.map((x) => (x.id === dep.id ? { ...x, ...dep } : x))
        : [dep, ...list],
    );
  });
  useTopic('apps', (d: any) => {
    if (d?.app_id !== id || !app.data) return;
    const status = ownStatus(d, id);
    if (status) app.set({ ...app.data, status });
    else reloadSoon();
  });
}

/** The tabs, in the address (`?tab=`); arrow keys move between them (the WAI-ARIA tabs pattern). */
function TabList({
  tabs,
  tab,
  onTab,
}: {
  tabs: ReadonlyArray<(typeof TABS)[number]>;
  tab: TabId;
  onTab: (t: TabId) => void;
}) {
  const refs = useRef<Record<string, HTMLAnchorElement | null>>({});
  // Tab leaves the tab list; arrows, Home and End move within it.
  const onKey = (e: KeyboardEvent) => {
    const i = tabs.findIndex((t) => t.id === tab);
    let next = -1;
    if (e.key === 'ArrowRight') next = (i + 1) % tabs.length;
    else if (e.key === 'ArrowLeft') next = (i - 1 + tabs.length) % tabs.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = tabs.length - 1;
    if (next < 0) return;
    e.preventDefault();
    onTab(tabs[next]!.id);
    refs.current[tabs[next]!.id]?.focus();
  };
  return (
    <div class="tabs" role="tablist" aria-label="App sections" onKeyDown={onKey}>
      {tabs.map((t) => (
        <a
          key={t.id}
          ref={(el) => void (refs.current[t.id] = el)}
          role="tab"
          id={`tab-${t.id}`}
          href={t.id === 'overview' ? location.pathname : `?tab=${t.id}`}
          aria-selected={tab === t.id}
          aria-controls="app-tabpanel"
          tabIndex={tab === t.id ? 0 : -1}
          onClick={(e) => {
            if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            onTab(t.id);
          }}
        >
          {t.label}
        </a>
      ))}
    </div>
  );
}
