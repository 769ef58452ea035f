// Alerts: the rules with their state (ok or firing, since when, the last value), enable and
// disable, delete; a form for a new rule on the host or an app; the history of every time a rule
// fired or resolved and whether its notification went out.
import { useState } from 'preact/hooks';
import * as api from '../api';
import { useCan } from '../access';
import { useTitle } from '../title';
import {
  alertEvents,
  createAlert,
  deleteAlert,
  listAlerts,
  patchAlert,
  type AlertEvent,
  type AlertMetric,
  type AlertRule,
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

const METRICS: ReadonlyArray<readonly [AlertMetric, string]> = [
  ['cpu_percent', 'CPU (% of one core)'],
  ['memory_percent', 'Memory (% of its limit)'],
  ['disk_percent', 'Disk (% used, host only)'],
  ['restarts', 'Restarts (within for_s)'],
  ['unhealthy', 'Unhealthy containers'],
  ['http_5xx_rate', '5xx answers (% of requests within for_s)'],
  ['p95_latency_ms', 'p95 latency (ms within for_s)'],
  ['certificate_days_left', 'Certificate days left'],
  ['backup_age_hours', 'Hours since the last backup'],
  ['backup_age_schedules', 'Backup age (in schedule intervals)'],
];
const label = (m: AlertMetric) => METRICS.find(([k]) => k === m)?.[1] ?? m;

export function AlertsPage() {
  useTitle('Alerts');
  const rules = useLoad(() => listAlerts());
  const apps = useLoad(() => api.allApps());
  const can = useCan();
  const names = new Map((apps.data ?? []).map((a) => [a.id, a.name]));
  const history = useLoad(() => alertEvents());
  const reload = async () => {
    await rules.reload();
    await history.reload();
  };
  return (
    <main>
      <h1>Alerts</h1>
      <section class="card" aria-labelledby="rules-h">
        <h2 id="rules-h">Rules</h2>
        <ErrorNote error={rules.error} />
        <table class="stack-sm" data-testid="alert-rules">
          <caption class="sr-only">Alert rules and their state</caption>
          <thead>
            <tr>
              <th>Rule</th>
              <th>On</th>
              <th>Condition</th>
              <th>State</th>
              <th>Last value</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {(rules.data?.items ?? []).map((r) => (
              <Rule
                key={r.id}
                r={r}
                app={r.app_id ? (names.get(r.app_id) ?? r.app_id) : null}
                writable={can('instance.admin')}
                onChange={reload}
              />
            ))}
          </tbody>
        </table>
      </section>
      {can('instance.admin') && <NewRule apps={apps.data ?? []} onCreated={reload} />}
      <History events={history.data?.items ?? null} error={history.error} />
    </main>
  );
}

function Rule({
  r,
  app,
  writable,
  onChange,
}: {
  r: AlertRule;
  app: string | null;
  writable: boolean;
  onChange: () => Promise<void>;
}) {
  const act = useAction();
  return (
    <tr data-testid="alert-rule">
      <td>{r.name}</td>
      <td>{app ?? 'the host'}</td>
      <td>
        {label(r.metric)} {r.op} {r.threshold}
        {r.for_s ? <span class="muted"> for {r.for_s} s</span> : null}
      </td>
      <td>
        <Badge status={r.enabled ? r.state : 'disabled'} />{' '}
        <span class="small muted">
          since <When at={r.since} />
        </span>
      </td>
      <td>{r.value ?? <span class="muted">—</span>}</td>
      <td class="row">
        {writable && (
          <>
            <button
              type="button"
              disabled={act.busy}
              onClick={() =>
                act.run(async () => {
                  await patchAlert(r.id, { enabled: !r.enabled });
                  await onChange();
                })
              }
            >
              {r.enabled ? 'Disable' : 'Enable'} <span class="sr-only">{r.name}</span>
            </button>
            <button
              type="button"
              class="danger"
              disabled={act.busy}
              onClick={() =>
                confirm(`Delete the rule ${r.name}?`) &&
                act.run(async () => {
                  await deleteAlert(r.id);
                  await onChange();
                })
              }
            >
              Delete <span class="sr-only">{r.name}</span>
            </button>
          </>
        )}
        <ErrorNote error={act.error} />
      </td>
    </tr>
  );
}

function NewRule({
  apps,
  onCreated,
}: {
  apps: Array<{ id: string; name: string }>;
  onCreated: () => Promise<void>;
}) {
  const [name, setName] = useState('');
  const [appId, setAppId] = useState('');
  const [metric, setMetric] = useState<AlertMetric>('cpu_percent');
  const [op, setOp] = useState<'>' | '<'>('>');
  const [threshold, setThreshold] = useState('80');
  const [forS, setForS] = useState('300');
  const saving = useSaving();
  const errs = fieldErrors(saving.error, '');
  return (
    <section class="card" aria-labelledby="new-rule-h">
      <h2 id="new-rule-h">New rule</h2>
      <SaveForm
        saving={saving}
        label="Add rule"
        onSave={async () => {
          await createAlert({
            name: name.trim(),
            app_id: appId || null,
            metric,
            op,
            threshold: Number(threshold),
            for_s: Number(forS),
          });
          setName('');
          await onCreated();
        }}
      >
        <Field id="rule-name" label="Name" value={name} onInput={setName} error={errs.name} />
        <SelectField
          id="rule-app"
          label="On"
          value={appId}
          options={[['', 'The host (every app)'], ...apps.map((a) => [a.id, a.name] as const)]}
          onChange={setAppId}
          error={errs.app_id}
        />
        <SelectField
          id="rule-metric"
          label="Metric"
          value={metric}
          options={METRICS}
          onChange={setMetric}
          error={errs.metric}
        />
        <SelectField
          id="rule-op"
          label="Fires when the value is"
          value={op}
          options={[
            ['>', 'above'],
            ['<', 'below'],
          ]}
          onChange={setOp}
        />
        <Field
          id="rule-threshold"
          label="Threshold"
          value={threshold}
          onInput={setThreshold}
          inputMode="decimal"
          error={errs.threshold}
        />
        <Field
          id="rule-for"
          label="For (seconds)"
          value={forS}
          onInput={setForS}
          inputMode="numeric"
          hint="How long the condition must hold before the rule fires (and be gone before it resolves); the window of counted metrics."
          error={errs.for_s}
        />
        <ErrorNote error={saving.error} />
      </SaveForm>
    </section>
  );
}

function History({ events, error }: { events: AlertEvent[] | null; error: unknown }) {
  return (
    <section class="card" aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <ErrorNote error={error} />
      {events?.length === 0 && <p class="muted">No rule has fired yet.</p>}
      {!!events?.length && (
        <table class="stack-sm" data-testid="alert-history">
          <caption class="sr-only">Every time a rule fired or resolved</caption>
          <thead>
            <tr>
              <th>When</th>
              <th>Rule</th>
              <th>What</th>
              <th>Value</th>
              <th>Notified</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.id}>
                <td>
                  <When at={e.at} />
                </td>
                <td>{e.rule}</td>
                <td>
                  <Badge status={e.kind} />
                  {e.detail ? <span class="small muted"> {e.detail}</span> : null}
                </td>
                <td>{e.value ?? '—'}</td>
                <td>{e.notified ? <When at={e.notified_at} /> : 'pending'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
