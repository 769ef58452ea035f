// Services with status, port, health path, restart, and CPU/memory from the `stats:<appId>` topic
// (sampled by the control plane only while someone listens).
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { Service, ServiceStats } from '../../api';
import { useTopic } from '../../ws';
import { Badge, ErrorNote, useAction, useLoad } from '../../ui';
import { bytes, percent } from './format';

type Usage = { cpu: number; mem: number; limit: number | null; replicas: number };

export function Services({ id, version }: { id: string; version: number }) {
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id, version]);
  const [usage, setUsage] = useState<Record<string, Usage>>({});
  const act = useAction();
  useTopic(`stats:${id}`, (d: any) => {
    if (!Array.isArray(d?.items)) return;
    const next: Record<string, Usage> = {};
    for (const s of d.items as ServiceStats[]) {
      if (typeof s?.service !== 'string') continue;
      const u = (next[s.service] ??= { cpu: 0, mem: 0, limit: null, replicas: 0 });
      u.cpu += Number(s.cpu_percent) || 0;
      u.mem += Number(s.memory_bytes) || 0;
      u.limit = typeof s.memory_limit_bytes === 'number' ? (u.limit ?? 0) + s.memory_limit_bytes : u.limit;
      u.replicas++;
    }
    setUsage(next);
  });
  // Cluster mode lists each service's tasks and the node each runs on.
  const clustered = services.data?.some((s) => s.tasks !== undefined) ?? false;
  return (
    <section class="card" aria-labelledby="svc-h">
      <h2 id="svc-h">Services</h2>
      <ErrorNote error={services.error ?? act.error} />
      {services.data?.length === 0 && (
        <p class="muted">No services known yet: they appear after the first deployment.</p>
      )}
      {services.data && services.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>CPU</th>
              <th>Memory</th>
              {clustered && <th>Tasks</th>}
              <th>Port</th>
              <th>Health path</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {services.data.map((s) => (
              <ServiceRow
                key={s.name}
                s={s}
                usage={usage[s.name]}
                clustered={clustered}
                onSave={(p) =>
                  act.run(async () => {
                    await api.patchService(id, s.name, p);
                    await services.reload();
                  })
                }
                onRestart={() =>
                  void act.run(async () => {
                    await api.serviceAction(id, s.name, 'restart');
                    await services.reload();
                  })
                }
              />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ServiceRow({
  s,
  usage,
  clustered,
  onSave,
  onRestart,
}: {
  s: Service;
  usage: Usage | undefined;
  clustered: boolean;
  onSave: (p: { port: number | null; health_path: string | null }) => Promise<boolean>;
  onRestart: () => void;
}) {
  const [port, setPort] = useState(s.port === null ? '' : String(s.port));
  const [health, setHealth] = useState(s.health_path ?? '');
  return (
    <tr data-testid="service-row">
      <td>{s.name}</td>
      <td>
        <Badge status={s.status} />
        {s.health && <span class="muted small"> {s.health}</span>}
      </td>
      <td class="mono" data-testid="service-cpu">
        {usage ? percent(usage.cpu) : '—'}
      </td>
      <td class="mono" data-testid="service-memory">
        {usage ? bytes(usage.mem) : '—'}
        {usage?.limit ? <span class="muted small"> / {bytes(usage.limit)}</span> : null}
      </td>
      {clustered && (
        <td data-testid="service-tasks">
          {(s.tasks ?? []).length === 0 ? (
            <span class="muted">none</span>
          ) : (
            <ul class="plain">
              {(s.tasks ?? []).map((t, i) => (
                <li key={t.container_id ?? `${t.node}-${i}`}>
                  <span class="mono">{t.node}</span> <Badge status={t.state} />
                </li>
              ))}
            </ul>
          )}
        </td>
      )}
      <td>
        <input
          aria-label={`Port of ${s.name}`}
          class="short"
          inputMode="numeric"
          value={port}
          onInput={(e) => setPort((e.target as HTMLInputElement).value)}
        />
      </td>
      <td>
        <input
          aria-label={`Health path of ${s.name}`}
          class="short"
          value={health}
          onInput={(e) => setHealth((e.target as HTMLInputElement).value)}
        />
      </td>
      <td class="row">
        <button
          type="button"
          onClick={() =>
            void onSave({ port: port.trim() ? Number(port) : null, health_path: health.trim() || null })
          }
        >
          Save
        </button>
        <button type="button" onClick={onRestart}>
          Restart
        </button>
      </td>
    </tr>
  );
}
