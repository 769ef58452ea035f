// The control plane's own backup (its database, keys and settings): its schedule in words with the
// next run, where it goes (this disk or S3), its last runs, a run now; and what the last restore
// onto this host (`svc restore-instance`) brought back. Changes for those who may change them.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { InstanceBackup } from '../api';
import { bytes } from '../spark';
import { formErrors } from '../form-errors';
import { DestinationFields, destinationOf, draftOf } from '../destination';
import { Badge, ErrorNote, Field, FormNote, When, useAction, useLoad } from '../ui';
import { Schedule } from './app/backups';

const LABELS = {
  schedule: 'Schedule',
  keep_last: 'Keep last',
  'destination.endpoint': 'Endpoint',
  'destination.region': 'Region',
  'destination.bucket': 'Bucket',
  'destination.prefix': 'Folder in the bucket',
  'destination.access_key_id': 'Access key ID',
  'destination.secret_access_key': 'Secret access key',
} as const;

export function InstanceBackupCard({ writable }: { writable: boolean }) {
  const cfg = useLoad(() => api.instanceBackup());
  const runs = useLoad(() => api.instanceBackupRuns().then((r) => r.items.slice(0, 5)));
  // Wrapped: "none ran" (null) is an answer, told apart from "not loaded yet".
  const recovery = useLoad(() => api.instanceRecovery().then((r) => ({ r })));
  const [editing, setEditing] = useState(false);
  const act = useAction();
  const c = cfg.data;
  return (
    <section class="card" aria-labelledby="ibackup-h" data-testid="instance-backup">
      <h2 id="ibackup-h">Instance backup</h2>
      <ErrorNote error={cfg.error ?? runs.error ?? act.error} />
      {c && !editing && (
        <p>
          {c.enabled ? <Schedule expr={c.schedule} /> : <span class="warning">Off.</span>}{' '}
          <span class="muted">
            · keeps {c.keep_last} ·{' '}
            {c.destination.type === 's3' ? `S3 bucket ${c.destination.bucket}` : 'this host'}
          </span>
        </p>
      )}
      {c && editing && (
        <BackupSettings
          c={c}
          onSaved={async () => {
            setEditing(false);
            await cfg.reload();
          }}
          onCancel={() => setEditing(false)}
        />
      )}
      {writable && !editing && (
        <div class="row wrap">
          <button type="button" onClick={() => setEditing(true)}>
            Change
          </button>
          <button
            type="button"
            disabled={act.busy}
            onClick={() =>
              void act.run(async () => {
                await api.runInstanceBackup();
                await runs.reload();
              })
            }
          >
            Back up now
          </button>
        </div>
      )}
      <Runs runs={runs.data} />
      <h3>Last restore onto this host</h3>
      {recovery.data && <LastRestore recovery={recovery.data.r} />}
    </section>
  );
}

function Runs({ runs }: { runs: api.InstanceBackupRun[] | null }) {
  if (!runs) return null;
  if (runs.length === 0) return <p class="muted small">No run yet.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Started</th>
          <th>Status</th>
          <th>Size</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id}>
            <td>
              <When at={r.started_at} />
            </td>
            <td>
              <Badge status={r.status} />
              {r.error && <div class="error small">{r.error}</div>}
              {r.notes && <div class="muted small">{r.notes}</div>}
            </td>
            <td>{r.size_bytes === null ? '—' : bytes(r.size_bytes)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

type Recovery = Awaited<ReturnType<typeof api.instanceRecovery>>;

function LastRestore({ recovery }: { recovery: Recovery }) {
  if (!recovery) return <p class="muted small">None: this instance was not restored from a backup.</p>;
  return (
    <div data-testid="instance-recovery">
      <p class="small">
        Started <When at={recovery.started_at} />;{' '}
        {recovery.finished_at ? (
          <>
            finished <When at={recovery.finished_at} />.
          </>
        ) : (
          'still running.'
        )}
      </p>
      <ul class="plain">
        {recovery.items.map((i) => (
          <li key={`${i.kind}-${i.id}`}>
            <Badge status={i.outcome === 'failed' ? 'failed' : i.outcome === 'skipped' ? 'warning' : 'ok'} />{' '}
            {i.kind} <strong>{i.name}</strong>: {i.outcome}
            {i.detail && <span class="muted small"> ({i.detail})</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

function BackupSettings(props: { c: InstanceBackup; onSaved: () => Promise<void>; onCancel: () => void }) {
  const [schedule, setSchedule] = useState(props.c.schedule);
  const [keep, setKeep] = useState(String(props.c.keep_last));
  const [enabled, setEnabled] = useState(props.c.enabled);
  const [dest, setDest] = useState(draftOf(props.c.destination));
  const act = useAction();
  const errors = formErrors(act.error, LABELS);
  const secretSet = props.c.destination.type === 's3' && props.c.destination.secret_set === true;
  return (
    <form
      class="stack"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          await api.putInstanceBackup({
            schedule: schedule.trim(),
            keep_last: Number(keep),
            enabled,
            destination: destinationOf(dest),
          });
          await props.onSaved();
        });
      }}
    >
      <label class="inline">
        <input
          type="checkbox"
          checked={enabled}
          onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)}
        />{' '}
        Back up on a schedule
      </label>
      <div class="row wrap top">
        <Field
          id="ibackup-schedule"
          label="Schedule (cron, UTC)"
          mono
          value={schedule}
          onInput={setSchedule}
          error={errors.field('schedule')}
        />
        <Field
          id="ibackup-keep"
          label="Keep last"
          inputMode="numeric"
          value={keep}
          onInput={setKeep}
          error={errors.field('keep_last')}
        />
      </div>
      <DestinationFields
        idPrefix="ibackup-dest"
        value={dest}
        onChange={setDest}
        secretSet={secretSet}
        error={errors.field}
      />
      <FormNote errors={errors} />
      <div class="row">
        <button type="submit" class="primary" disabled={act.busy}>
          Save backup settings
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
