// Services with status, CPU and memory from the `stats:<appId>` topic (sampled by the control
// plane only while someone listens), their port and health path (saved for the next deployment),
// and restart, stop or start one service, for those who may.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { Service, ServiceStats } from '../../api';
import { useTopic } from '../../ws';
import { useCan } from '../../access';
import { formErrors } from '../../form-errors';
import { Badge, ErrorNote, useAction, useLoad } from '../../ui';
import { bytes, percent } from './format';

type Usage = { cpu: number; mem: number; limit: number | null; replicas: number };

export function Services({
  id,
  version,
  onChanged,
}: {
  id: string;
  version: number;
  onChanged?: () => Promise<unknown>;
}) {
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id, version]);
  const [usage, setUsage] = useState<Record<string, Usage>>({});
  const act = useAction();
  const can = useCan();
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
  const control = (name: string, action: 'start' | 'stop' | 'restart') =>
    void act.run(async () => {
      await api.serviceAction(id, name, action);
      await services.reload();
    });
  return (
    <section class="card" aria-labelledby="svc-h">
      <h2 id="svc-h">Services</h2>
      <ErrorNote error={services.error ?? act.error} />
      {services.data?.length === 0 && (
        <p class="muted">No services known yet: they appear after the first deployment.</p>
      )}
      {services.data && services.data.length > 0 && (
        <table class="services stack-sm">
          <thead>
            <tr>
              <th>Service</th>
              <th>Usage</th>
              {clustered && <th>Tasks</th>}
              <th>Port and health path</th>
              {can('app.deploy', id) && (
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {services.data.map((s) => (
              <ServiceRow
                key={s.name}
                id={id}
                s={s}
                usage={usage[s.name]}
                clustered={clustered}
                onSaved={async () => {
                  await services.reload();
                  await onChanged?.();
                }}
                onControl={can('app.deploy', id) ? (a) => control(s.name, a) : null}
                busy={act.busy}
              />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ServiceRow({
  id,
  s,
  usage,
  clustered,
  onSaved,
  onControl,
  busy,
}: {
  id: string;
  s: Service;
  usage: Usage | undefined;
  clustered: boolean;
  onSaved: () => Promise<void>;
  onControl: ((a: 'start' | 'stop' | 'restart') => void) | null;
  busy: boolean;
}) {
  const can = useCan();
  const running = s.status === 'running';
  return (
    <tr data-testid="service-row">
      <td>
        <strong>{s.name}</strong> <Badge status={s.status} />
        {s.health && s.health !== 'none' && <div class="muted small">health: {s.health}</div>}
      </td>
      <td class="mono small">
        <span data-testid="service-cpu">{usage ? percent(usage.cpu) : '—'}</span> CPU
        <div data-testid="service-memory">
          {usage ? bytes(usage.mem) : '—'}
          {usage?.limit ? <span class="muted"> / {bytes(usage.limit)}</span> : null}
        </div>
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
        {can('app.admin', id) ? (
          <ServiceSettings id={id} s={s} onSaved={onSaved} />
        ) : (
          <span class="mono small">
            {s.port ?? 'no port'} · {s.health_path ?? 'no health path'}
          </span>
        )}
        {s.port === null && <div class="muted small">No port: the app gets no URL until it has one.</div>}
      </td>
      {onControl && (
        <td>
          <div class="row wrap">
            <button type="button" disabled={busy} onClick={() => onControl('restart')}>
              Restart <span class="sr-only">{s.name}</span>
            </button>
            {running ? (
              <button type="button" disabled={busy} onClick={() => onControl('stop')}>
                Stop <span class="sr-only">{s.name}</span>
              </button>
            ) : (
              <button type="button" disabled={busy} onClick={() => onControl('start')}>
                Start <span class="sr-only">{s.name}</span>
              </button>
            )}
          </div>
        </td>
      )}
    </tr>
  );
}

/** Port and health path: saved now, used from the next deployment on (the answer says so). */
function ServiceSettings({ id, s, onSaved }: { id: string; s: Service; onSaved: () => Promise<void> }) {
  const [port, setPort] = useState(s.port === null ? '' : String(s.port));
  const [health, setHealth] = useState(s.health_path ?? '');
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const errors = formErrors(act.error, { port: 'Port', health_path: 'Health path' });
  return (
    <form
      class="row wrap compact"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        void act.run(async () => {
          await api.patchService(id, s.name, {
            port: port.trim() ? Number(port) : null,
            health_path: health.trim() || null,
          });
          setSaved(true);
          await onSaved();
        });
      }}
    >
      <label class="inline">
        <span class="sr-only">Port of {s.name}</span>
        <input
          aria-label={`Port of ${s.name}`}
          class="tiny"
          inputMode="numeric"
          placeholder="port"
          value={port}
          aria-invalid={errors.field('port') ? true : undefined}
          onInput={(e) => {
            setSaved(false);
            setPort((e.target as HTMLInputElement).value);
          }}
        />
      </label>
      <label class="inline">
        <span class="sr-only">Health path of {s.name}</span>
        <input
          aria-label={`Health path of ${s.name}`}
          class="short"
          placeholder="/health"
          value={health}
          aria-invalid={errors.field('health_path') ? true : undefined}
          onInput={(e) => {
            setSaved(false);
            setHealth((e.target as HTMLInputElement).value);
          }}
        />
      </label>
      <button type="submit" disabled={act.busy}>
        Save <span class="sr-only">{s.name}</span>
      </button>
      {saved && (
        <span role="status" class="ok small" data-testid="service-saved">
          Saved: the next deployment uses it.
        </span>
      )}
      {(errors.field('port') ?? errors.field('health_path') ?? errors.note) && (
        <span class="error small" data-testid="field-error">
          {errors.field('port') ?? errors.field('health_path') ?? errors.note}
        </span>
      )}
    </form>
  );
}
