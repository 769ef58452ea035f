// Overview: apps with their status, deployments in flight (live), a new-app form, posture summary,
// host vitals as sparklines (live from the host topic) and certificate warnings.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { App, Deployment, HostVital } from '../api';
import { Link, navigate } from '../router';
import { useTopic } from '../ws';
import { Sparkline, bytes } from '../spark';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';

// The overview's first data is requested by main.tsx before the first render (while the session
// is being checked), so the apps arrive one round trip earlier; each prefetched answer is used once.
let prefetched: {
  apps: Promise<App[]>;
  active: Promise<Deployment[]>;
  posture: Promise<api.PostureItem[]>;
} | null = null;
export function prefetchOverview(): void {
  const quiet = { quiet401: true };
  prefetched = {
    apps: api.run(() => api.client.GET('/api/apps'), quiet).then((r) => r.items),
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

export function OverviewPage() {
  const apps = useLoad(() => take('apps') ?? api.listApps().then((r) => r.items), [], ready<App[]>('apps'));
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
  useTopic('apps', (d: any) => {
    if (!d || (typeof d.app_id !== 'string' && typeof d.id !== 'string')) return;
    void apps.reload();
  });

  const names = new Map((apps.data ?? []).map((a) => [a.id, a.name]));
  const counts = { warning: 0, error: 0 };
  for (const p of posture.data ?? []) if (p.status === 'warning' || p.status === 'error') counts[p.status]++;

  return (
    <main>
      <h1>Overview</h1>
      <div class="grid">
        <section class="card" aria-labelledby="apps-h">
          <h2 id="apps-h">Apps</h2>
          <ErrorNote error={apps.error} />
          {apps.data && apps.data.length === 0 && <p class="muted">No apps yet.</p>}
          {apps.data && apps.data.length > 0 && (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Status</th>
                  <th>Source</th>
                </tr>
              </thead>
              <tbody>
                {apps.data.map((a) => (
                  <tr key={a.id} data-testid="app-row">
                    <td>
                      <Link href={`/apps/${encodeURIComponent(a.id)}`}>{a.name}</Link>
                    </td>
                    <td>
                      <Badge status={a.status} />
                    </td>
                    <td class="mono ellipsis">
                      {a.source.type === 'git'
                        ? `${a.source.repo_url} @ ${a.source.branch}`
                        : a.source.type === 'image'
                          ? a.source.image
                          : 'inline Compose'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <section class="card" aria-labelledby="active-h">
          <h2 id="active-h">Deployments in progress</h2>
          <ErrorNote error={active.error} />
          {active.data?.length === 0 && <p class="muted">None right now.</p>}
          <ul class="plain" data-testid="active-deployments">
            {(active.data ?? []).map((d) => (
              <li key={d.id}>
                <Link href={`/apps/${encodeURIComponent(d.app_id)}`}>
                  {d.app ?? names.get(d.app_id) ?? d.app_id}
                </Link>{' '}
                <Badge status={d.status} /> <When at={d.created_at} />
              </li>
            ))}
          </ul>
        </section>
        <section class="card" aria-labelledby="posture-h">
          <h2 id="posture-h">Security posture</h2>
          <ErrorNote error={posture.error} />
          {posture.data && (
            <p>
              {counts.error} error{counts.error === 1 ? '' : 's'}, {counts.warning} warning
              {counts.warning === 1 ? '' : 's'}. <Link href="/security">Details</Link>
            </p>
          )}
        </section>
        <HostVitals />
        <CertWarnings />
        <NewApp onCreated={(a) => navigate(`/apps/${encodeURIComponent(a.id)}`)} />
      </div>
    </main>
  );
}

function NewApp({ onCreated }: { onCreated: (a: App) => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'git' | 'image'>('git');
  const [repo, setRepo] = useState('');
  const [branch, setBranch] = useState('main');
  const [image, setImage] = useState('');
  const act = useAction();
  return (
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New app</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const source: api.AppSource =
              kind === 'git'
                ? { type: 'git', repo_url: repo.trim(), branch: branch.trim() }
                : { type: 'image', image: image.trim() };
            onCreated((await api.createApp(name.trim(), source)).app);
          });
        }}
      >
        <label>
          Name
          <input
            name="name"
            required
            pattern="[a-z0-9][a-z0-9\-]{0,62}"
            title="lower-case letters, digits and dashes"
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
        <fieldset class="row">
          <legend>Source</legend>
          <label class="inline">
            <input type="radio" name="kind" checked={kind === 'git'} onChange={() => setKind('git')} /> Git
            repository
          </label>
          <label class="inline">
            <input type="radio" name="kind" checked={kind === 'image'} onChange={() => setKind('image')} />{' '}
            Image
          </label>
        </fieldset>
        {kind === 'git' ? (
          <>
            <label>
              Repository URL
              <input
                name="repo_url"
                required
                value={repo}
                onInput={(e) => setRepo((e.target as HTMLInputElement).value)}
                placeholder="https://git.example.com/me/app.git"
              />
            </label>
            <label>
              Branch
              <input
                name="branch"
                required
                value={branch}
                onInput={(e) => setBranch((e.target as HTMLInputElement).value)}
              />
            </label>
          </>
        ) : (
          <label>
            Image
            <input
              name="image"
              required
              value={image}
              onInput={(e) => setImage((e.target as HTMLInputElement).value)}
            />
          </label>
        )}
        <ErrorNote error={act.error} />
        <button type="submit" class="primary" disabled={act.busy}>
          Create app
        </button>
      </form>
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
