// Backups: configurations (a database or a named volume, on a schedule, kept N times), run one
// now, list its runs, download an artifact (decrypted by the API, still compressed), restore one
// (confirmation, then the API's step-up; the restore's progress is polled).
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { BackupConfig, BackupRun, Restore } from '../../api';
import { Badge, ErrorNote, Field, FormNote, SelectField, When, useAction, useLoad } from '../../ui';
import { useCan } from '../../access';
import { formErrors } from '../../form-errors';
import { describeCron, nextRun } from '../../cron';
import { DestinationFields, destinationOf, draftOf, type DestinationDraft } from '../../destination';
import { bytes } from './format';

export function BackupsTab({ id }: { id: string }) {
  const configs = useLoad(() => api.appBackups(id).then((r) => r.items), [id]);
  const dbs = useLoad(() => api.appDatabases(id).then((r) => r.items), [id]);
  const can = useCan();
  return (
    <section class="card" aria-labelledby="backups-h">
      <h2 id="backups-h">Backups</h2>
      <ErrorNote error={configs.error} />
      {configs.data?.length === 0 && <p class="muted">No backups configured.</p>}
      {configs.data?.map((c) => (
        <BackupCard key={c.id} id={id} c={c} dbs={dbs.data ?? []} onChanged={configs.reload} />
      ))}
      {can('app.admin', id) && <NewBackup id={id} dbs={dbs.data ?? []} onAdded={configs.reload} />}
    </section>
  );
}

const LABELS = {
  'source.database_id': 'Database',
  'source.volume': 'Volume',
  schedule: 'Schedule',
  keep_last: 'Keep last',
  'destination.endpoint': 'Endpoint',
  'destination.region': 'Region',
  'destination.bucket': 'Bucket',
  'destination.prefix': 'Folder in the bucket',
  'destination.access_key_id': 'Access key ID',
  'destination.secret_access_key': 'Secret access key',
} as const;

/** The app's named volumes no backup covers yet (the API's fleet overview knows them). */
function useFreeVolumes(id: string) {
  return useLoad(
    () =>
      api
        .backupsOverview()
        .then((o) => o.uncovered.filter((u) => u.app_id === id && !u.database_id).map((u) => u.volume)),
    [id],
  );
}

function NewBackup({ id, dbs, onAdded }: { id: string; dbs: api.Database[]; onAdded: () => Promise<void> }) {
  // A database that failed (or is still being made) has nothing to back up.
  const ready = dbs.filter((d) => d.status === 'ready');
  const volumes = useFreeVolumes(id);
  const [kind, setKind] = useState<'database' | 'volume'>('database');
  const [dbId, setDbId] = useState('');
  const [volume, setVolume] = useState('');
  const [schedule, setSchedule] = useState('0 3 * * *');
  const [keepLast, setKeepLast] = useState('7');
  const [dest, setDest] = useState<DestinationDraft>(draftOf());
  const act = useAction();
  const errors = formErrors(act.error, LABELS);
  const chosenDb = ready.some((d) => d.id === dbId) ? dbId : (ready[0]?.id ?? '');
  const chosenVolume = volume || volumes.data?.[0] || '';
  const possible = kind === 'database' ? !!chosenDb : !!chosenVolume;
  const save = async () => {
    const source =
      kind === 'database'
        ? { type: 'database' as const, database_id: chosenDb }
        : { type: 'volume' as const, volume: chosenVolume };
    await api.createBackupTo(id, {
      source,
      schedule: schedule.trim(),
      keep_last: Number(keepLast),
      destination: destinationOf(dest),
    });
    await Promise.all([onAdded(), volumes.reload()]);
  };
  return (
    <>
      <h3>Add a backup</h3>
      <form
        class="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(save);
        }}
      >
        <div class="row wrap top">
          <SelectField
            id="backup-kind"
            label="Source"
            value={kind}
            options={[
              ['database', 'Database'],
              ['volume', 'Volume'],
            ]}
            onChange={setKind}
          />
          <BackupSource
            kind={kind}
            ready={ready}
            volumes={volumes.data}
            db={chosenDb}
            volume={chosenVolume}
            onDb={setDbId}
            onVolume={setVolume}
            error={errors.field}
          />
          <WhenFields
            schedule={schedule}
            keepLast={keepLast}
            onSchedule={setSchedule}
            onKeepLast={setKeepLast}
            error={errors.field}
          />
        </div>
        <DestinationFields idPrefix="backup-dest" value={dest} onChange={setDest} error={errors.field} />
        <FormNote errors={errors} />
        <div class="row">
          <button type="submit" disabled={act.busy || !possible}>
            Add backup
          </button>
        </div>
      </form>
    </>
  );
}

/** When a backup runs (in words under the cron line) and how many it keeps. */
function WhenFields(p: {
  schedule: string;
  keepLast: string;
  onSchedule: (v: string) => void;
  onKeepLast: (v: string) => void;
  error: (field: string) => string | undefined;
}) {
  return (
    <>
      <Field
        id="backup-schedule"
        label="Schedule (cron, UTC)"
        mono
        value={p.schedule}
        onInput={p.onSchedule}
        hint={describeCron(p.schedule)}
        error={p.error('schedule')}
      />
      <Field
        id="backup-keep"
        label="Keep last"
        inputMode="numeric"
        value={p.keepLast}
        onInput={p.onKeepLast}
        error={p.error('keep_last')}
      />
    </>
  );
}

/** What a backup copies: a ready database of the app, or one of its named volumes no backup covers. */
function BackupSource(props: {
  kind: 'database' | 'volume';
  ready: api.Database[];
  volumes: string[] | null;
  db: string;
  volume: string;
  onDb: (id: string) => void;
  onVolume: (v: string) => void;
  error: (field: string) => string | undefined;
}) {
  const { kind, ready, volumes } = props;
  if (kind === 'database')
    return ready.length ? (
      <SelectField
        id="backup-db"
        label="Database"
        value={props.db}
        options={ready.map((d) => [d.id, `${d.engine} ${d.version} (${d.env_var})`] as const)}
        onChange={props.onDb}
        error={props.error('source.database_id')}
      />
    ) : (
      <p class="muted small">No database ready to back up (a failed one is not offered).</p>
    );
  return volumes?.length ? (
    <SelectField
      id="backup-volume"
      label="Volume"
      value={props.volume}
      options={volumes.map((v) => [v, v] as const)}
      onChange={props.onVolume}
      error={props.error('source.volume')}
    />
  ) : (
    <p class="muted small">
      {volumes ? 'No named volume of this app lacks a backup.' : 'Reading the app’s volumes…'}
    </p>
  );
}

/** "every day at 03:00 UTC; next <local time>". */
export function Schedule({ expr }: { expr: string }) {
  const [next, setNext] = useState<Date | null>(null);
  useEffect(() => {
    let live = true;
    void nextRun(expr).then((d) => live && setNext(d));
    return () => void (live = false);
  }, [expr]);
  return (
    <span data-testid="backup-schedule">
      {describeCron(expr)}
      {next && (
        <span class="muted">
          ; next <time dateTime={next.toISOString()}>{next.toLocaleString()}</time>
        </span>
      )}
    </span>
  );
}

function BackupCard({
  id,
  c,
  dbs,
  onChanged,
}: {
  id: string;
  c: BackupConfig;
  dbs: api.Database[];
  onChanged: () => Promise<void>;
}) {
  const runs = useLoad(() => api.backupRuns(id, c.id).then((r) => r.items), [id, c.id]);
  const [restore, setRestore] = useState<Restore | null>(null);
  const act = useAction();
  const can = useCan();
  const running = runs.data?.some((r) => r.status === 'running') ?? false;
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => void runs.reload(), 2_000);
    return () => clearInterval(t);
  }, [running, runs.reload]);
  useEffect(() => {
    if (restore?.status !== 'running') return;
    const t = setInterval(
      () =>
        void api.getRestore(id, restore.id).then(
          (r) => setRestore(r.restore),
          () => {},
        ),
      2_000,
    );
    return () => clearInterval(t);
  }, [restore?.id, restore?.status]);
  const db =
    c.source.type === 'database'
      ? dbs.find((d) => d.id === (c.source as { database_id: string }).database_id)
      : null;
  const what =
    c.source.type === 'database'
      ? `database ${db ? `${db.engine} (${db.env_var})` : c.source.database_id}`
      : `volume ${c.source.volume}`;
  return (
    <div class="subcard" data-testid="backup-config">
      <div class="row spread">
        <p>
          <strong>{what}</strong> <Schedule expr={c.schedule} />{' '}
          <span class="muted">
            · keeps {c.keep_last} · {c.destination.type === 's3' ? `S3 ${c.destination.bucket}` : 'this host'}
            {c.enabled ? '' : ' · disabled'}
          </span>
        </p>
        <div class="row">
          {can('app.backup', id) && (
            <button
              type="button"
              disabled={act.busy}
              onClick={() =>
                void act.run(async () => {
                  await api.runBackup(id, c.id);
                  await runs.reload();
                })
              }
            >
              Run now
            </button>
          )}
          {can('app.admin', id) && (
            <button
              type="button"
              class="danger"
              aria-label={`Delete the backup of ${what}`}
              onClick={() => {
                if (
                  !confirm(
                    `Delete the backup configuration of ${what}? Stored artifacts are removed with it.`,
                  )
                )
                  return;
                void act.run(async () => {
                  await api.deleteBackup(id, c.id);
                  await onChanged();
                });
              }}
            >
              Delete
            </button>
          )}
        </div>
      </div>
      <ErrorNote error={runs.error ?? act.error} />
      {restore && (
        <p role="status" data-testid="restore-status">
          Restore <Badge status={restore.status} />{' '}
          {restore.error && <span class="error">{restore.error}</span>}
        </p>
      )}
      {runs.data && runs.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Started</th>
              <th>Status</th>
              <th>Size</th>
              <th>Verified</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.data.map((r) => (
              <RunRow
                key={r.id}
                id={id}
                r={r}
                admin={can('app.admin', id)}
                onRestore={() => {
                  if (
                    !confirm(
                      `Restore the backup of ${new Date(r.started_at).toLocaleString()} over the current data of ${what}?`,
                    )
                  )
                    return;
                  void act.run(async () => setRestore((await api.restoreRun(id, r.id)).restore));
                }}
              />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function RunRow({
  id,
  r,
  admin,
  onRestore,
}: {
  id: string;
  r: BackupRun;
  admin: boolean;
  onRestore: () => void;
}) {
  const done = r.status === 'succeeded' && admin;
  return (
    <tr data-testid="backup-run">
      <td>
        <When at={r.started_at} />
      </td>
      <td>
        <Badge status={r.status} />
        {r.error && <div class="error small">{r.error}</div>}
      </td>
      <td>{bytes(r.size_bytes)}</td>
      <td>
        {r.verified_at ? (
          <When at={r.verified_at} />
        ) : r.verify_error ? (
          <span class="error small">{r.verify_error}</span>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
      <td class="row">
        {done && (
          <a class="button" href={api.backupDownloadUrl(id, r.id)} download>
            Download
          </a>
        )}
        {done && (
          <button type="button" onClick={onRestore}>
            Restore
          </button>
        )}
      </td>
    </tr>
  );
}
