// Managed databases: create one from the engines catalog, list them (refreshing while one is
// provisioning), delete one (the API asks for a step-up; the data volume can be kept).
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { Database } from '../../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../../ui';
import { bytes } from './format';

export function DatabasesTab({ id }: { id: string }) {
  const engines = useLoad(() => api.dbEngines().then((r) => r.items), []);
  const dbs = useLoad(() => api.appDatabases(id).then((r) => r.items), [id]);
  const [engine, setEngine] = useState('');
  const [version, setVersion] = useState('');
  const [envVar, setEnvVar] = useState('');
  const act = useAction();
  const provisioning = dbs.data?.some((d) => d.status === 'provisioning') ?? false;
  useEffect(() => {
    if (!provisioning) return;
    const t = setInterval(() => void dbs.reload(), 2_000);
    return () => clearInterval(t);
  }, [provisioning, dbs.reload]);
  const chosen = engines.data?.find((e) => e.engine === engine) ?? engines.data?.[0];
  const chosenVersion =
    chosen && chosen.versions.includes(version) ? version : (chosen?.default_version ?? '');
  return (
    <section class="card" aria-labelledby="db-h">
      <h2 id="db-h">Databases</h2>
      <ErrorNote error={engines.error ?? dbs.error ?? act.error} />
      {dbs.data?.length === 0 && <p class="muted">No databases.</p>}
      {dbs.data && dbs.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Engine</th>
              <th>Status</th>
              <th>Host</th>
              <th>Variable</th>
              <th>Size</th>
              <th>Created</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {dbs.data.map((d) => (
              <DbRow
                key={d.id}
                d={d}
                onDelete={(keep) =>
                  void act.run(async () => {
                    await api.deleteDatabase(id, d.id, keep);
                    await dbs.reload();
                  })
                }
              />
            ))}
          </tbody>
        </table>
      )}
      {chosen && (
        <form
          class="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              await api.createDatabase(id, {
                engine: chosen.engine,
                version: chosenVersion || undefined,
                ...(envVar.trim() ? { env_var: envVar.trim() } : {}),
              });
              setEnvVar('');
              await dbs.reload();
            });
          }}
        >
          <label>
            Engine
            <select
              value={chosen.engine}
              onChange={(e) => {
                setEngine((e.target as HTMLSelectElement).value);
                setVersion('');
              }}
            >
              {engines.data!.map((x) => (
                <option key={x.engine} value={x.engine}>
                  {x.engine}
                </option>
              ))}
            </select>
          </label>
          <label>
            Version
            <select value={chosenVersion} onChange={(e) => setVersion((e.target as HTMLSelectElement).value)}>
              {chosen.versions.map((v) => (
                <option key={v} value={v}>
                  {v}
                  {v === chosen.default_version ? ' (default)' : ''}
                </option>
              ))}
            </select>
          </label>
          <label>
            Variable name
            <input
              name="env_var"
              placeholder={chosen.engine === 'redis' ? 'REDIS_URL' : 'DATABASE_URL'}
              value={envVar}
              onInput={(e) => setEnvVar((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="submit" disabled={act.busy}>
            Create database
          </button>
        </form>
      )}
      <p class="muted small">
        The connection URL is stored as a secret variable of the app and takes effect on the next deployment.
      </p>
    </section>
  );
}

function DbRow({ d, onDelete }: { d: Database; onDelete: (keepData: boolean) => void }) {
  const [keep, setKeep] = useState(false);
  return (
    <tr data-testid="database-row">
      <td>
        {d.engine} <span class="muted">{d.version}</span>
      </td>
      <td>
        <Badge status={d.status} />
        {d.error && <div class="error small">{d.error}</div>}
      </td>
      <td class="mono">
        {d.host}:{d.port}
      </td>
      <td class="mono">{d.env_var}</td>
      <td>{bytes(d.size_bytes)}</td>
      <td>
        <When at={d.created_at} />
      </td>
      <td class="row">
        <label class="inline small">
          <input
            type="checkbox"
            checked={keep}
            onChange={(e) => setKeep((e.target as HTMLInputElement).checked)}
          />{' '}
          keep data
        </label>
        <button
          type="button"
          class="danger"
          aria-label={`Delete the ${d.engine} database ${d.name ?? d.id}`}
          onClick={() => {
            if (
              !confirm(
                `Delete the ${d.engine} database${keep ? ' (its data volume is kept)' : ' and its data'}?`,
              )
            )
              return;
            onDelete(keep);
          }}
        >
          Delete
        </button>
      </td>
    </tr>
  );
}
