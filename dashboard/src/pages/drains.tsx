// Log drains, on the instance page: each drain with its delivery state (idle, sending, failing),
// the last delivery, lines delivered, dropped and waiting; enable, disable, test, delete; a form
// for a new one. Shown to those who may change instance settings.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api';
import * as api from '../api';
import {
  createDrain,
  deleteDrain,
  listDrains,
  patchDrain,
  testDrain,
  type LogDrain,
  type NewLogDrain,
} from '../observe-api';
import {
  Badge,
  ErrorNote,
  Field,
  SaveForm,
  SelectField,
  When,
  fieldErrors,
  useAction,
  useLoad,
  useSaving,
} from '../ui';

const KINDS: ReadonlyArray<readonly [NewLogDrain['kind'], string]> = [
  ['syslog', 'Syslog (RFC 5424)'],
  ['otlp_http', 'OpenTelemetry (OTLP/HTTP)'],
  ['http_json', 'HTTP (JSON lines)'],
];

const PLACEHOLDER: Record<NewLogDrain['kind'], string> = {
  syslog: 'syslog+tls://logs.example.com:6514',
  otlp_http: 'https://otel.example.com/v1/logs',
  http_json: 'https://logs.example.com/ingest',
};

export function DrainsSection() {
  const drains = useLoad(() => listDrains());
  // Refreshed while the page is open: delivery state and counters move.
  useEffect(() => {
    const t = setInterval(() => void drains.reload(), 10_000);
    return () => clearInterval(t);
  }, [drains.reload]);
  if (drains.error instanceof ApiError && drains.error.status === 403) return null;
  return (
    <section class="card" aria-labelledby="drains-h" data-testid="drains">
      <h2 id="drains-h">Log drains</h2>
      <ErrorNote error={drains.error} />
      {drains.data?.items.length === 0 && <p class="muted">No drains: app logs stay on this host.</p>}
      <ul class="plain">
        {(drains.data?.items ?? []).map((d) => (
          <Drain key={d.id} d={d} onChange={drains.reload} />
        ))}
      </ul>
      <h3>New drain</h3>
      <NewDrain onCreated={drains.reload} />
    </section>
  );
}

function Drain({ d, onChange }: { d: LogDrain; onChange: () => Promise<void> }) {
  const act = useAction();
  const [test, setTest] = useState<{ ok: boolean; status: number | null; error?: string } | null>(null);
  const step = (fn: () => Promise<unknown>) =>
    act.run(async () => {
      await fn();
      await onChange();
    });
  return (
    <li class="channel" data-testid="drain">
      <div class="row">
        <strong>{d.name}</strong>{' '}
        <span class="muted">
          {d.kind} · <span class="mono">{d.url_hint}</span> ·{' '}
          {d.app_ids ? `${d.app_ids.length} app(s)` : 'every app'}
        </span>
        <Badge status={d.state} />
      </div>
      <p class="small" data-testid="drain-counts">
        {d.delivered} delivered, <strong>{d.dropped} dropped</strong>, {d.buffered} waiting
        {d.last_delivery && (
          <>
            {' '}
            · last {d.last_delivery.ok ? 'ok' : 'failed'} <When at={d.last_delivery.at} />
            {d.last_delivery.error ? ` — ${d.last_delivery.error}` : ''}
          </>
        )}
      </p>
      <div class="row">
        <button
          type="button"
          disabled={act.busy}
          onClick={() => act.run(async () => setTest(await testDrain(d.id)))}
        >
          Send a test line <span class="sr-only">to {d.name}</span>
        </button>
        <button
          type="button"
          disabled={act.busy}
          onClick={() => step(() => patchDrain(d.id, { enabled: !d.enabled }))}
        >
          {d.enabled ? 'Disable' : 'Enable'} <span class="sr-only">{d.name}</span>
        </button>
        <button
          type="button"
          class="danger"
          disabled={act.busy}
          onClick={() => confirm(`Delete the drain ${d.name}?`) && step(() => deleteDrain(d.id))}
        >
          Delete <span class="sr-only">{d.name}</span>
        </button>
      </div>
      <ErrorNote error={act.error} />
      {test && (
        <p role="status" class={test.ok ? 'notice' : 'error'}>
          Test {test.ok ? 'delivered' : 'failed'}
          {test.status !== null ? ` (${test.status})` : ''}
          {test.error ? `: ${test.error}` : ''}
        </p>
      )}
    </li>
  );
}

function NewDrain({ onCreated }: { onCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<NewLogDrain['kind']>('syslog');
  const [url, setUrl] = useState('');
  const [app, setApp] = useState('');
  const [header, setHeader] = useState('');
  const apps = useLoad(() => api.allApps());
  const saving = useSaving();
  const errs = fieldErrors(saving.error, '');
  return (
    <SaveForm
      saving={saving}
      label="Add drain"
      onSave={async () => {
        const h = /^([^:]+):\s*(.*)$/.exec(header.trim());
        await createDrain({
          name: name.trim(),
          kind,
          url: url.trim(),
          app_ids: app ? [app] : null,
          ...(h ? { headers: { [h[1]!.trim()]: h[2]! } } : {}),
        });
        setName('');
        setUrl('');
        setHeader('');
        await onCreated();
      }}
    >
      <Field id="drain-name" label="Name" value={name} onInput={setName} error={errs.name} />
      <SelectField id="drain-kind" label="Kind" value={kind} options={KINDS} onChange={setKind} />
      <Field
        id="drain-url"
        label="URL"
        value={url}
        onInput={setUrl}
        mono
        error={errs.url}
        placeholder={PLACEHOLDER[kind]}
        hint="Sealed once saved; only its host is shown."
      />
      <SelectField
        id="drain-app"
        label="Apps"
        value={app}
        options={[['', 'Every app'], ...(apps.data ?? []).map((a) => [a.id, a.name] as const)]}
        onChange={setApp}
      />
      {kind !== 'syslog' && (
        <Field
          id="drain-header"
          label="Header (optional)"
          value={header}
          onInput={setHeader}
          mono
          placeholder="Authorization: Bearer …"
          hint="Sent with every request; sealed, never shown again."
        />
      )}
      <ErrorNote error={saving.error} />
    </SaveForm>
  );
}
