// Overview, a summary: the first apps with status and URL (the Apps page has them all), the proxy's
// state when it does not serve them, deployments in flight (live), a new-app form for those who
// may create one, posture summary, host vitals as sparklines (live) and certificate warnings.
import * as api from '../api';
import type { Deployment, HostVital } from '../api';
import { Link, navigate } from '../router';
import { useTopic } from '../ws';
import { Sparkline, bytes } from '../spark';
import { Badge, ErrorNote, When, useLoad, useThrottled } from '../ui';
import { useCan } from '../access';
import { AppBadge, ownStatus } from '../status';
import { AppUrls, ProxyNotice } from '../proxy';
import { useTitle } from '../title';
import { NewApp } from './new-app';

// The overview's first data is requested by main.tsx before the first render (while the session
// is being checked), so the apps arrive one round trip earlier; each prefetched answer is used once.
let prefetched: {
  apps: Promise<api.AppsPage>;
  active: Promise<Deployment[]>;
  posture: Promise<api.PostureItem[]>;
} | null = null;
export function prefetchOverview(): void {
  const quiet = { quiet401: true };
  prefetched = {
    // The same request as index.html's preload (`/api/apps`, the default page), so it is reused.
    apps: api.run(() => api.client.GET('/api/apps'), quiet),
    active: (
      api.run(() => api.client.GET('/api/deployments/active'), quiet) as Promise<api.Items<Deployment>>
    ).then((r) => r.items),
    posture: api.run(() => api.client.GET('/api/security/posture'), quiet).then((r) => r.items),
  };
  // A failed one (signed out) is dropped, so the overview asks again once signed in.
  for (const [k, p] of Object.entries(prefetched))
    p.then(
      (v) => (settled[k] = v),
      () => {
        if (prefetched) prefetched = { ...prefetched, [k]: null } as typeof prefetched;
      },
    );
}
const settled: Record<string, unknown> = {};
/**
 * Resolves once the apps are in (at once when nothing was prefetched): the first render shows
 * them; the slower panels (posture reads the host) fill in when they answer.
 */
export function overviewReady(): Promise<unknown> {
  return prefetched?.apps ? prefetched.apps.catch(() => {}) : Promise.resolve();
}
/** A prefetched answer already in, for the first render (used once). */
function ready<T>(k: 'apps' | 'active' | 'posture'): T | undefined {
  const v = settled[k] as T | undefined;
  if (v !== undefined && prefetched) {
    delete settled[k];
    prefetched = { ...prefetched, [k]: null } as typeof prefetched;
  }
  return v;
}
function take<K extends 'apps' | 'active' | 'posture'>(k: K): NonNullable<typeof prefetched>[K] | null {
  const p = prefetched?.[k] ?? null;
  if (prefetched) prefetched = { ...prefetched, [k]: null } as typeof prefetched;
  return p;
}

/** How many apps the overview lists: it is a summary; the Apps page has them all. */
const SHOWN = 8;

export function OverviewPage() {
  useTitle('Overview');
  const can = useCan();
  const apps = useLoad(() => take('apps') ?? api.listApps(), [], ready<api.AppsPage>('apps'));
  const active = useLoad(
    () => take('active') ?? api.activeDeployments().then((r) => r.items),
    [],
    ready<Deployment[]>('active'),
  );
  const posture = useLoad(
    () => take('posture') ?? api.posture().then((r) => r.items),
    [],
    ready<api.PostureItem[]>('posture'),
  );

  useTopic('deployments', (d: any) => {
    if (d?.type !== 'status' || typeof d.id !== 'string') return;
    const dep = d as Deployment;
    const list = (active.data ?? []).filter((x) => x.id !== dep.id);
    active.set(api.TERMINAL.includes(dep.status) ? list : [...list, dep]);
  });
  // A status is applied in place; anything else (an app created, deleted, a URL) reloads, at most
  // once a second however many events arrive.
  const reloadSoon = useThrottled(() => void apps.reload(), 1_000);
  useTopic('apps', (d: any) => {
    if (!apps.data) return;
    const row = apps.data.items.find((a) => a.id === d?.app_id);
    const status = row ? ownStatus(d, row.id) : null;
    if (row && status)
      apps.set({ ...apps.data, items: apps.data.items.map((a) => (a === row ? { ...a, status } : a)) });
    else if (d?.type === 'status' && !d.parent_app_id) reloadSoon();
  });

  const items = apps.data?.items ?? [];
  const names = new Map(items.map((a) => [a.id, a.name]));

  return (
    <main>
      <h1>Overview</h1>
      <ProxyNotice proxy={apps.data?.proxy} />
      <AppsSummary apps={apps.data} error={apps.error} canCreate={can('app.admin')} />
      <div class="grid">
        <section class="card" aria-labelledby="active-h">
          <h2 id="active-h">Deployments in progress</h2>
          <ErrorNote error={active.error} />
          {active.data?.length === 0 && <p class="muted">None right now.</p>}
          <ul class="plain" data-testid="active-deployments">
            {(active.data ?? []).map((d) => (
              <li key={d.id}>
                <Link href={`/apps/${encodeURIComponent(d.app_id)}`}>
                  {d.app ?? names.get(d.app_id) ?? 'an app'}
                </Link>{' '}
                <Badge status={d.status} /> <When at={d.created_at} />
              </li>
            ))}
          </ul>
        </section>
        {can('instance.read') && (
          <PostureSummary
            items={posture.data}
            error={posture.error}
            proxyDown={!!apps.data && apps.data.proxy.state !== 'ok' && apps.data.proxy.state !== 'starting'}
          />
        )}
        {can('instance.read') && <HostVitals />}
        <CertWarnings />
        {can('app.admin') && <NewApp onCreated={(a) => navigate(`/apps/${encodeURIComponent(a.id)}`)} />}
      </div>
    </main>
  );
}

/** The first apps with status and URL, and the way to all of them. */
function AppsSummary({
  apps,
  error,
  canCreate,
}: {
  apps: api.AppsPage | null;
  error: unknown;
  canCreate: boolean;
}) {
  const items = apps?.items ?? [];
  const total = apps?.total ?? 0;
  return (
    <>
      <section class="card" aria-labelledby="apps-h">
        <h2 id="apps-h">Apps</h2>
        <ErrorNote error={error} />
        {apps && total === 0 && (
          <p class="muted">
            No apps yet.{canCreate ? ' Create one below, from an image or a repository.' : ''}
          </p>
        )}
        {items.length > 0 && (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Status</th>
                <th>URL</th>
              </tr>
            </thead>
            <tbody>
              {items.slice(0, SHOWN).map((a) => (
                <tr key={a.id} data-testid="app-row">
                  <td>
                    <Link href={`/apps/${encodeURIComponent(a.id)}`}>{a.name}</Link>
                  </td>
                  <td>
                    <AppBadge status={a.status} />
                  </td>
                  <td class="ellipsis">
                    <AppUrls urls={a.urls} first />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {total > 0 && (
          <p>
            <Link href="/apps">
              {total > SHOWN ? `All ${total} apps` : 'Apps, with search and deployments'}
            </Link>
          </p>
        )}
      </section>
    </>
  );
}

/** Posture findings counted (the proxy's absence is not one of them: it is said apart). */
function PostureSummary(props: { items: api.PostureItem[] | null; error: unknown; proxyDown: boolean }) {
  const counts = { warning: 0, error: 0 };
  for (const p of props.items ?? []) if (p.status === 'warning' || p.status === 'error') counts[p.status]++;
  return (
    <section class="card" aria-labelledby="posture-h">
      <h2 id="posture-h">Security posture</h2>
      <ErrorNote error={props.error} />
      {props.items && (
        <p>
          {counts.error} error{counts.error === 1 ? '' : 's'}, {counts.warning} warning
          {counts.warning === 1 ? '' : 's'}. <Link href="/security">Details</Link>
        </p>
      )}
      {props.proxyDown && <p class="warning small">The proxy is not serving the apps (see above).</p>}
    </section>
  );
}

const SPARK_POINTS = 120;

function HostVitals() {
  // The answer holds only steps that have a sample, so its last entry is the last real reading.
  const m = useLoad(() => api.hostMetrics('1h').then((r) => r.vitals.slice(-SPARK_POINTS)));
  useTopic('host', (d: any) => {
    if (!d || typeof d.cpu_percent !== 'number') return;
    // A part the sample could not read keeps the last real reading rather than showing zeros.
    const prev = m.data?.[m.data.length - 1];
    const v: HostVital = {
      t: d.at,
      cpu_percent: d.cpu_percent,
      mem_used_bytes: d.memory?.used_bytes ?? prev?.mem_used_bytes ?? 0,
      mem_total_bytes: d.memory?.total_bytes ?? prev?.mem_total_bytes ?? 0,
      disk_used_bytes: d.disk?.used_bytes ?? prev?.disk_used_bytes ?? 0,
      disk_total_bytes: d.disk?.total_bytes ?? prev?.disk_total_bytes ?? 0,
      load1: Array.isArray(d.load) ? d.load[0] : (prev?.load1 ?? 0),
    };
    m.set([...(m.data ?? []), v].slice(-SPARK_POINTS));
  });
  const vs = m.data ?? [];
  const last = vs[vs.length - 1];
  const pct = (u: number, t: number) => (t > 0 ? (u / t) * 100 : 0);
  return (
    <section class="card" aria-labelledby="vitals-h" data-testid="host-vitals">
      <h2 id="vitals-h">Host</h2>
      <ErrorNote error={m.error} />
      {m.data && vs.length === 0 && <p class="muted">No samples yet.</p>}
      {last && (
        <dl class="vitals">
          <dt>CPU</dt>
          <dd>
            <Sparkline
              values={vs.map((v) => v.cpu_percent)}
              max={100}
              label={`CPU over the last hour, now ${last.cpu_percent.toFixed(0)}%`}
            />{' '}
            {last.cpu_percent.toFixed(0)}%
          </dd>
          <dt>Memory</dt>
          <dd>
            <Sparkline
              values={vs.map((v) => pct(v.mem_used_bytes, v.mem_total_bytes))}
              max={100}
              label={`Memory over the last hour, now ${bytes(last.mem_used_bytes)}`}
            />{' '}
            {bytes(last.mem_used_bytes)} of {bytes(last.mem_total_bytes)}
          </dd>
          <dt>Disk</dt>
          <dd>
            <Sparkline
              values={vs.map((v) => pct(v.disk_used_bytes, v.disk_total_bytes))}
              max={100}
              label={`Disk use over the last hour, now ${bytes(last.disk_used_bytes)}`}
            />{' '}
            {bytes(last.disk_used_bytes)} of {bytes(last.disk_total_bytes)}
          </dd>
          <dt>Load</dt>
          <dd>
            <Sparkline
              values={vs.map((v) => v.load1)}
              label={`Load over the last hour, now ${last.load1.toFixed(2)}`}
            />{' '}
            {last.load1.toFixed(2)}
          </dd>
        </dl>
      )}
    </section>
  );
}

const CERT_WARN_DAYS = 14;

function CertWarnings() {
  const d = useLoad(() => api.listDomains().then((r) => r.items));
  const now = Date.now();
  const warn = (d.data ?? []).filter(
    (x) =>
      x.status === 'error' ||
      (x.certificate && Date.parse(x.certificate.not_after) - now < CERT_WARN_DAYS * 86_400_000),
  );
  return (
    <section class="card" aria-labelledby="certs-h" data-testid="cert-warnings">
      <h2 id="certs-h">Certificates</h2>
      <ErrorNote error={d.error} />
      {d.data && warn.length === 0 && <p class="muted">No certificate needs attention.</p>}
      {warn.length > 0 && (
        <ul class="plain">
          {warn.map((x) => (
            <li key={x.hostname}>
              <Badge status={x.status === 'error' ? 'error' : 'warning'} />{' '}
              <span class="mono">{x.hostname}</span>{' '}
              {x.certificate ? (
                <>
                  expires <When at={x.certificate.not_after} />
                </>
              ) : (
                x.status_detail
              )}
            </li>
          ))}
        </ul>
      )}
      <p>
        <Link href="/domains">All domains</Link>
      </p>
    </section>
  );
}
