// Overview: apps with their status, deployments in flight (live), a new-app form, posture summary.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { App, Deployment } from '../api';
import { Link, navigate } from '../router';
import { useTopic } from '../ws';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';

export function OverviewPage() {
  const apps = useLoad(() => api.listApps().then((r) => r.items));
  const active = useLoad(() => api.activeDeployments().then((r) => r.items));
  const posture = useLoad(() => api.posture().then((r) => r.items));

  useTopic('deployments', (d: any) => {
    if (d?.type !== 'status' || typeof d.id !== 'string') return;
    const dep = d as Deployment;
    const list = (active.data ?? []).filter((x) => x.id !== dep.id);
    active.set(api.TERMINAL.includes(dep.status) ? list : [...list, dep]);
  });
  useTopic('apps', (d: any) => {
    if (!d || typeof d.app_id !== 'string' && typeof d.id !== 'string') return;
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
              <thead><tr><th>Name</th><th>Status</th><th>Source</th></tr></thead>
              <tbody>
                {apps.data.map((a) => (
                  <tr key={a.id} data-testid="app-row">
                    <td><Link href={`/apps/${encodeURIComponent(a.id)}`}>{a.name}</Link></td>
                    <td><Badge status={a.status} /></td>
                    <td class="mono ellipsis">{a.source.type === 'git' ? `${a.source.repo_url} @ ${a.source.branch}` : a.source.image}</td>
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
                <Link href={`/apps/${encodeURIComponent(d.app_id)}`}>{d.app ?? names.get(d.app_id) ?? d.app_id}</Link> <Badge status={d.status} /> <When at={d.created_at} />
              </li>
            ))}
          </ul>
        </section>
        <section class="card" aria-labelledby="posture-h">
          <h2 id="posture-h">Security posture</h2>
          <ErrorNote error={posture.error} />
          {posture.data && (
            <p>
              {counts.error} error{counts.error === 1 ? '' : 's'}, {counts.warning} warning{counts.warning === 1 ? '' : 's'}. <Link href="/security">Details</Link>
            </p>
          )}
        </section>
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
            const source: api.AppSource = kind === 'git' ? { type: 'git', repo_url: repo.trim(), branch: branch.trim() } : { type: 'image', image: image.trim() };
            onCreated((await api.createApp(name.trim(), source)).app);
          });
        }}
      >
        <label>Name<input name="name" required pattern="[a-z0-9][a-z0-9\-]{0,62}" title="lower-case letters, digits and dashes" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
        <fieldset class="row">
          <legend>Source</legend>
          <label class="inline"><input type="radio" name="kind" checked={kind === 'git'} onChange={() => setKind('git')} /> Git repository</label>
          <label class="inline"><input type="radio" name="kind" checked={kind === 'image'} onChange={() => setKind('image')} /> Image</label>
        </fieldset>
        {kind === 'git' ? (
          <>
            <label>Repository URL<input name="repo_url" required value={repo} onInput={(e) => setRepo((e.target as HTMLInputElement).value)} placeholder="https://git.example.com/me/app.git" /></label>
            <label>Branch<input name="branch" required value={branch} onInput={(e) => setBranch((e.target as HTMLInputElement).value)} /></label>
          </>
        ) : (
          <label>Image<input name="image" required value={image} onInput={(e) => setImage((e.target as HTMLInputElement).value)} /></label>
        )}
        <ErrorNote error={act.error} />
        <button type="submit" class="primary" disabled={act.busy}>Create app</button>
      </form>
    </section>
  );
}
