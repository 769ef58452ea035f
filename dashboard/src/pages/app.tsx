// One app: status, services, environment (redacted), deployments with a live build log, rollback.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { Deployment, EnvVar, Service } from '../api';
import { navigate } from '../router';
import { useTopic } from '../ws';
import { LogView } from '../logview';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';

export function AppPage({ id }: { id: string }) {
  const app = useLoad(() => api.getApp(id).then((r) => r.app), [id]);
  const deployments = useLoad(() => api.listDeployments(id).then((r) => r.items), [id]);
  const [selected, setSelected] = useState<string | null>(null);
  // Bumped when a deployment ends: services and their state come from what it deployed.
  const [settled, setSettled] = useState(0);
  const act = useAction();

  useTopic('deployments', (d: any) => {
    if (d?.type !== 'status' || d.app_id !== id) return;
    const dep = d as Deployment;
    if (api.TERMINAL.includes(dep.status)) setSettled((n) => n + 1);
    const list = deployments.data ?? [];
    deployments.set(list.some((x) => x.id === dep.id) ? list.map((x) => (x.id === dep.id ? { ...x, ...dep } : x)) : [dep, ...list]);
  });
  useTopic('apps', (d: any) => {
    if (d?.app_id === id && typeof d.status === 'string' && app.data) app.set({ ...app.data, status: d.status });
  });

  if (app.error) return <main><h1>App</h1><ErrorNote error={app.error} /></main>;
  if (!app.data) return <main><p class="muted">Loading…</p></main>;
  const a = app.data;
  const shown = selected ?? deployments.data?.[0]?.id ?? null;
  const current = deployments.data?.find((d) => d.status === 'succeeded')?.id;

  return (
    <main>
      <div class="row spread">
        <h1>{a.name} <Badge status={a.status} /></h1>
        <div class="row">
          <button
            type="button"
            class="primary"
            disabled={act.busy}
            onClick={() => void act.run(async () => {
              const r = await api.deploy(id);
              setSelected(r.deployment.id);
              await deployments.reload();
            })}
          >
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
      <p class="muted mono">{a.source.type === 'git' ? `${a.source.repo_url} @ ${a.source.branch}` : a.source.image}</p>
      <ErrorNote error={act.error} />
      <div class="grid">
        <Services id={id} version={settled} />
        <Env id={id} />
      </div>
      <section class="card" aria-labelledby="dep-h">
        <h2 id="dep-h">Deployments</h2>
        <ErrorNote error={deployments.error} />
        {deployments.data?.length === 0 && <p class="muted">Not deployed yet.</p>}
        {deployments.data && deployments.data.length > 0 && (
          <table>
            <thead><tr><th>Started</th><th>Status</th><th>Trigger</th><th>Commit</th><th><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {deployments.data.map((d) => (
                <tr key={d.id} class={d.id === shown ? 'selected' : undefined} data-testid="deployment-row">
                  <td><When at={d.created_at} /></td>
                  <td><Badge status={d.status} />{d.error && <div class="error small">{d.error}</div>}</td>
                  <td>{d.trigger}</td>
                  <td class="mono">{d.commit ? d.commit.slice(0, 10) : '—'} {d.commit_subject && <span class="muted">{d.commit_subject}</span>}</td>
                  <td class="row">
                    <button type="button" onClick={() => setSelected(d.id)} aria-pressed={d.id === shown}>Log</button>
                    {!api.TERMINAL.includes(d.status) && (
                      <button type="button" onClick={() => void act.run(() => api.cancelDeployment(id, d.id))}>Cancel</button>
                    )}
                    {d.status === 'succeeded' && d.id !== current && (
                      <button
                        type="button"
                        onClick={() => void act.run(async () => {
                          const r = await api.rollback(id, d.id);
                          setSelected(r.deployment.id);
                          await deployments.reload();
                        })}
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
    </main>
  );
}

function Services({ id, version }: { id: string; version: number }) {
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id, version]);
  const act = useAction();
  return (
    <section class="card" aria-labelledby="svc-h">
      <h2 id="svc-h">Services</h2>
      <ErrorNote error={services.error ?? act.error} />
      {services.data?.length === 0 && <p class="muted">No services known yet: they appear after the first deployment.</p>}
      {services.data && services.data.length > 0 && (
        <table>
          <thead><tr><th>Name</th><th>Status</th><th>Port</th><th>Health path</th><th><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {services.data.map((s) => <ServiceRow key={s.name} s={s} onSave={(p) => act.run(async () => { await api.patchService(id, s.name, p); await services.reload(); })} onRestart={() => void act.run(async () => { await api.serviceAction(id, s.name, 'restart'); await services.reload(); })} />)}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ServiceRow({ s, onSave, onRestart }: { s: Service; onSave: (p: { port: number | null; health_path: string | null }) => Promise<boolean>; onRestart: () => void }) {
  const [port, setPort] = useState(s.port === null ? '' : String(s.port));
  const [health, setHealth] = useState(s.health_path ?? '');
  return (
    <tr data-testid="service-row">
      <td>{s.name}</td>
      <td><Badge status={s.status} />{s.health && <span class="muted small"> {s.health}</span>}</td>
      <td><input aria-label={`Port of ${s.name}`} class="short" inputMode="numeric" value={port} onInput={(e) => setPort((e.target as HTMLInputElement).value)} /></td>
      <td><input aria-label={`Health path of ${s.name}`} class="short" value={health} onInput={(e) => setHealth((e.target as HTMLInputElement).value)} /></td>
      <td class="row">
        <button type="button" onClick={() => void onSave({ port: port.trim() ? Number(port) : null, health_path: health.trim() || null })}>Save</button>
        <button type="button" onClick={onRestart}>Restart</button>
      </td>
    </tr>
  );
}

function Env({ id }: { id: string }) {
  const env = useLoad(() => api.getEnv(id).then((r) => r.items), [id]);
  const [revealed, setRevealed] = useState<Record<string, string>>({});
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [secret, setSecret] = useState(true);
  const act = useAction();
  // The whole set is replaced; `value: null` keeps a stored secret as it is.
  const keep = (items: EnvVar[]) => items.map((v) => ({ key: v.key, value: v.secret ? null : v.value, secret: v.secret }));
  return (
    <section class="card" aria-labelledby="env-h">
      <h2 id="env-h">Environment</h2>
      <ErrorNote error={env.error ?? act.error} />
      {env.data?.length === 0 && <p class="muted">No variables.</p>}
      {env.data && env.data.length > 0 && (
        <table>
          <thead><tr><th>Key</th><th>Value</th><th><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {env.data.map((v) => (
              <tr key={v.key} data-testid="env-row">
                <td class="mono">{v.key}</td>
                <td class="mono ellipsis narrow">{v.secret ? (revealed[v.key] ?? <span class="muted" aria-label="hidden value">••••••</span>) : v.value}</td>
                <td class="row">
                  {v.secret && revealed[v.key] === undefined && (
                    <button type="button" onClick={() => void act.run(async () => setRevealed({ ...revealed, [v.key]: (await api.revealEnv(id, v.key)).value }))}>Reveal</button>
                  )}
                  <button type="button" onClick={() => void act.run(async () => env.set((await api.putEnv(id, keep(env.data!.filter((x) => x.key !== v.key)))).items))}>Remove</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const rest = keep((env.data ?? []).filter((x) => x.key !== key.trim()));
            env.set((await api.putEnv(id, [...rest, { key: key.trim(), value, secret }])).items);
            setKey('');
            setValue('');
          });
        }}
      >
        <label>Key<input name="env_key" required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} /></label>
        <label>Value<input name="env_value" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} /></label>
        <label class="inline"><input type="checkbox" name="env_secret" checked={secret} onChange={(e) => setSecret((e.target as HTMLInputElement).checked)} /> Secret</label>
        <button type="submit" disabled={act.busy}>Set</button>
      </form>
    </section>
  );
}
