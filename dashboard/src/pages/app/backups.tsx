// Backups: configurations (a database or a named volume, on a schedule, kept N times), run one
// now, list its runs, download an artifact (decrypted by the API, still compressed), restore one
// (confirmation, then the API's step-up; the restore's progress is polled).
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { BackupConfig, BackupRun, Restore } from '../../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../../ui';
import { bytes } from './format';

export function BackupsTab({ id }: { id: string }) {
  const configs = useLoad(() => api.appBackups(id).then((r) => r.items), [id]);
  const dbs = useLoad(() => api.appDatabases(id).then((r) => r.items), [id]);
  const [kind, setKind] = useState<'database' | 'volume'>('database');
  const [dbId, setDbId] = useState('');
  const [volume, setVolume] = useState('');
  const [schedule, setSchedule] = useState('0 3 * * *');
  const [keepLast, setKeepLast] = useState('7');
  const act = useAction();
  const chosenDb = dbId || dbs.data?.[0]?.id || '';
  return (
    <section class="card" aria-labelledby="backups-h">
      <h2 id="backups-h">Backups</h2>
      <ErrorNote error={configs.error ?? act.error} />
      {configs.data?.length === 0 && <p class="muted">No backups configured.</p>}
      {configs.data?.map((c) => (
        <BackupCard key={c.id} id={id} c={c} dbs={dbs.data ?? []} onChanged={configs.reload} />
      ))}
      <h3>Add a backup</h3>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const source =
              kind === 'database'
                ? { type: 'database' as const, database_id: chosenDb }
                : { type: 'volume' as const, volume: volume.trim() };
            await api.createBackup(id, {
              source,
              schedule: schedule.trim(),
              keep_last: Number(keepLast),
              destination: { type: 'local' },
            });
            await configs.reload();
          });
        }}
      >
        <label>
          Source
          <select
            value={kind}
            onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'database' | 'volume')}
          >
            <option value="database">Database</option>
            <option value="volume">Volume</option>
          </select>
        </label>
        {kind === 'database' ? (
          <label>
            Database
            <select
              value={chosenDb}
              onChange={(e) => setDbId((e.target as HTMLSelectElement).value)}
              required
            >
              {dbs.data?.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.engine} {d.version} ({d.env_var})
                </option>
              ))}
            </select>
          </label>
        ) : (
          <label>
            Volume
            <input
              name="volume"
              required
              placeholder="as the compose file names it"
              value={volume}
              onInput={(e) => setVolume((e.target as HTMLInputElement).value)}
            />
          </label>
        )}
        <label>
          Schedule (cron, UTC)
          <input
            name="schedule"
            class="mono"
            required
            value={schedule}
            onInput={(e) => setSchedule((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Keep last
          <input
            name="keep_last"
            class="short"
            inputMode="numeric"
            required
            value={keepLast}
            onInput={(e) => setKeepLast((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={act.busy || (kind === 'database' && !chosenDb)}>
          Add backup
        </button>
      </form>
    </section>
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
          <strong>{what}</strong> <span class="mono muted">{c.schedule}</span>{' '}
          <span class="muted">
            keeps {c.keep_last}, {c.destination.type}
            {c.enabled ? '' : ', disabled'}
          </span>
        </p>
        <div class="row">
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
          <button
            type="button"
            class="danger"
            aria-label={`Delete the backup of ${what}`}
            onClick={() => {
              if (
                !confirm(`Delete the backup configuration of ${what}? Stored artifacts are removed with it.`)
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

function RunRow({ id, r, onRestore }: { id: string; r: BackupRun; onRestore: () => void }) {
  const done = r.status === 'succeeded';
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
