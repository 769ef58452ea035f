// Managed databases: create one from the engines catalog, list them (refreshing while one is
// provisioning), retry one whose provisioning failed (its reason shown), delete one (the API asks
// for a step-up; the data volume can be kept). Only those who may change the app see the controls.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { Database } from '../../api';
import { Badge, ErrorNote, FormNote, When, useAction, useLoad } from '../../ui';
import { useCan } from '../../access';
import { formErrors } from '../../form-errors';

const LABELS = { engine: 'Engine', version: 'Version', env_var: 'Variable name' } as const;
import { bytes } from './format';

export function DatabasesTab({ id }: { id: string }) {
  const engines = useLoad(() => api.dbEngines().then((r) => r.items), []);
  const dbs = useLoad(() => api.appDatabases(id).then((r) => r.items), [id]);
  const act = useAction();
  const can = useCan();
  const admin = can('app.admin', id);
  const provisioning = dbs.data?.some((d) => d.status === 'provisioning') ?? false;
  useEffect(() => {
    if (!provisioning) return;
    const t = setInterval(() => void dbs.reload(), 2_000);
    return () => clearInterval(t);
  }, [provisioning, dbs.reload]);
  return (
    <section class="card" aria-labelledby="db-h">
      <h2 id="db-h">Databases</h2>
      <ErrorNote error={engines.error ?? dbs.error ?? act.error} />
      {dbs.data?.length === 0 && <p class="muted">No databases.</p>}
      {dbs.data && dbs.data.length > 0 && (
        <table class="stack-sm">
          <thead>
            <tr>
              <th>Engine</th>
              <th>Status</th>
              <th>Host</th>
              <th>Variable</th>
              <th>Size</th>
              <th>Created</th>
              {admin && (
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {dbs.data.map((d) => (
              <DbRow
                key={d.id}
                d={d}
                admin={admin}
                busy={act.busy}
                onDelete={(keep) =>
                  void act.run(async () => {
                    await api.deleteDatabase(id, d.id, keep);
                    await dbs.reload();
                  })
                }
                onRetry={() =>
                  void act.run(async () => {
                    // A failed one holds nothing: it goes, and the same database is asked for again.
                    await api.deleteDatabase(id, d.id, false);
                    await api.createDatabase(id, {
                      engine: d.engine,
                      version: d.version,
                      env_var: d.env_var,
                    });
                    await dbs.reload();
                  })
                }
              />
            ))}
          </tbody>
        </table>
      )}
      {admin && engines.data && <NewDatabase id={id} engines={engines.data} onCreated={dbs.reload} />}
      <p class="muted small">
        The connection URL is stored under the Variable name (a secret variable of the app) and takes effect
        on the next deployment.
      </p>
    </section>
  );
}

/** A database from the engines catalog, its URL stored under the variable name given. */
function NewDatabase({
  id,
  engines,
  onCreated,
}: {
  id: string;
  engines: api.DbEngine[];
  onCreated: () => Promise<void>;
}) {
  const [engine, setEngine] = useState('');
  const [version, setVersion] = useState('');
  const [envVar, setEnvVar] = useState('');
  const create = useAction();
  const errors = formErrors(create.error, LABELS, { conflict: 'env_var' });
  const chosen = engines.find((e) => e.engine === engine) ?? engines[0];
  if (!chosen) return null;
  const chosenVersion = chosen.versions.includes(version) ? version : chosen.default_version;
  return (
    <form
      class="row wrap"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void create.run(async () => {
          await api.createDatabase(id, {
            engine: chosen.engine,
            version: chosenVersion || undefined,
            ...(envVar.trim() ? { env_var: envVar.trim() } : {}),
          });
          setEnvVar('');
          await onCreated();
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
          {engines.map((x) => (
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
      <div class="field">
        <label for="db-env-var">Variable name</label>
        <input
          id="db-env-var"
          name="env_var"
          placeholder={chosen.engine === 'redis' ? 'REDIS_URL' : 'DATABASE_URL'}
          value={envVar}
          aria-invalid={errors.field('env_var') ? true : undefined}
          aria-describedby={errors.field('env_var') ? 'db-env-var-err' : undefined}
          onInput={(e) => setEnvVar((e.target as HTMLInputElement).value)}
        />
        {errors.field('env_var') && (
          <span id="db-env-var-err" class="error small" data-testid="field-error">
            {errors.field('env_var')}
          </span>
        )}
      </div>
      <button type="submit" disabled={create.busy}>
        Create database
      </button>
      <FormNote errors={errors} />
    </form>
  );
}

function DbRow({
  d,
  admin,
  busy,
  onDelete,
  onRetry,
}: {
  d: Database;
  admin: boolean;
  busy: boolean;
  onDelete: (keepData: boolean) => void;
  onRetry: () => void;
}) {
  const [keep, setKeep] = useState(false);
  return (
    <tr data-testid="database-row">
      <td>
        {d.engine} <span class="muted">{d.version}</span>
      </td>
      <td>
        <Badge status={d.status === 'error' ? 'failed' : d.status} />
        {d.error && (
          <div class="error small" data-testid="database-error">
            Could not be created: {d.error}
          </div>
        )}
      </td>
      <td class="mono">
        {d.host}:{d.port}
      </td>
      <td class="mono">{d.env_var}</td>
      <td>{bytes(d.size_bytes)}</td>
      <td>
        <When at={d.created_at} />
      </td>
      {admin && (
        <td class="row wrap">
          {d.status === 'error' && (
            <button type="button" disabled={busy} onClick={onRetry}>
              Retry<span class="sr-only"> the {d.engine} database</span>
            </button>
          )}
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
      )}
    </tr>
  );
}
