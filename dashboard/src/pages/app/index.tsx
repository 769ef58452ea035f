// One app: its header (status, deploy, delete) and a tab per area. The tab is in the query
// (`?tab=logs`) so a tab can be linked and the browser's back button walks tabs; the heavy tabs
// (metrics with uPlot, the shell with xterm) load their libraries only when opened.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from '../../api';
import type { Deployment } from '../../api';
import { navigate } from '../../router';
import { useTopic } from '../../ws';
import { Badge, ErrorNote, useAction, useLoad } from '../../ui';
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

export const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'logs', label: 'Logs' },
  { id: 'metrics', label: 'Metrics' },
  { id: 'domains', label: 'Domains' },
  { id: 'databases', label: 'Databases' },
  { id: 'backups', label: 'Backups' },
  { id: 'jobs', label: 'Jobs' },
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
  const app = useLoad(() => api.getApp(id).then((r) => r.app), [id]);
  const deployments = useLoad(() => api.listDeployments(id).then((r) => r.items), [id]);
  const [selected, setSelected] = useState<string | null>(null);
  // Bumped when a deployment ends: services and their state come from what it deployed.
  const [settled, setSettled] = useState(0);
  const [tab, setTab] = useTab();
  const tabRefs = useRef<Record<string, HTMLAnchorElement | null>>({});
  const act = useAction();

  useTopic('deployments', (d: any) => {
    if (d?.type !== 'status' || d.app_id !== id) return;
    const dep = d as Deployment;
    if (api.TERMINAL.includes(dep.status)) setSettled((n) => n + 1);
    const list = deployments.data ?? [];
    deployments.set(
      list.some((x) => x.id === dep.id)
        ? list.map((x) => (x.id === dep.id ? { ...x, ...dep } : x))
        : [dep, ...list],
    );
  });
  useTopic('apps', (d: any) => {
    if (d?.app_id === id && typeof d.status === 'string' && app.data)
      app.set({ ...app.data, status: d.status });
  });

  if (app.error)
    return (
      <main>
        <h1>App</h1>
        <ErrorNote error={app.error} />
      </main>
    );
  if (!app.data)
    return (
      <main>
        <p class="muted">Loading…</p>
      </main>
    );
  const a = app.data;
  // Only a git app is built from source: the others have no Build tab, nor previews (built from branches).
  const tabs = TABS.filter((t) => (t.id !== 'build' && t.id !== 'previews') || a.source.type === 'git');
  const startDeploy = async () => {
    const r = await api.deploy(id);
    setSelected(r.deployment.id);
    setTab('overview');
    await deployments.reload();
  };

  // Arrow keys move between tabs (the WAI-ARIA tabs pattern); Tab leaves the tab list.
  const onKey = (e: KeyboardEvent) => {
    const i = tabs.findIndex((t) => t.id === tab);
    let next = -1;
    if (e.key === 'ArrowRight') next = (i + 1) % tabs.length;
    else if (e.key === 'ArrowLeft') next = (i - 1 + tabs.length) % tabs.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = tabs.length - 1;
    if (next < 0) return;
    e.preventDefault();
    setTab(tabs[next]!.id);
    tabRefs.current[tabs[next]!.id]?.focus();
  };

  return (
    <main>
      <div class="row spread">
        <h1>
          {a.name} <Badge status={a.status} />
        </h1>
        <div class="row">
          <button type="button" class="primary" disabled={act.busy} onClick={() => void act.run(startDeploy)}>
            Deploy
          </button>
          <button
            type="button"
            class="danger"
            onClick={() => {
              if (!confirm(`Delete ${a.name} with its containers, networks and secrets?`)) return;
              void act.run(async () => {
                await api.deleteApp(id);
                navigate('/');
              });
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <p class="muted mono">
        {a.source.type === 'git'
          ? `${a.source.repo_url} @ ${a.source.branch}`
          : a.source.type === 'image'
            ? a.source.image
            : 'inline Compose'}
      </p>
      <ErrorNote error={act.error} />
      <div class="tabs" role="tablist" aria-label="App sections" onKeyDown={onKey}>
        {tabs.map((t) => (
          <a
            key={t.id}
            ref={(el) => void (tabRefs.current[t.id] = el)}
            role="tab"
            id={`tab-${t.id}`}
            href={t.id === 'overview' ? location.pathname : `?tab=${t.id}`}
            aria-selected={tab === t.id}
            aria-controls="app-tabpanel"
            tabIndex={tab === t.id ? 0 : -1}
            onClick={(e) => {
              if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
              e.preventDefault();
              setTab(t.id);
            }}
          >
            {t.label}
          </a>
        ))}
      </div>
      <div id="app-tabpanel" role="tabpanel" aria-labelledby={`tab-${tab}`} class="tabpanel">
        {tab === 'overview' && (
          <OverviewTab
            app={a}
            onSaved={app.set}
            onDeploy={startDeploy}
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
        {tab === 'git' && <GitTab id={id} source={a.source} />}
        {tab === 'build' && <BuildTab app={a} onSaved={app.set} />}
        {tab === 'previews' && <PreviewsTab app={a} />}
        {tab === 'shell' && <ShellTab id={id} />}
      </div>
    </main>
  );
}
