// Previews of a git app (docs/previews.md): one environment per pull request or branch on its own
// host `pr-<n>-<app>`, listed with its state; made from a branch, removed after a confirmation; and
// the app's preview settings, safe by default (off, forks refused, no variable inherited, idle
// previews sleep). A preview's status events name its own app row, so any event of a row named
// `<app>-pr-<n>` reloads the list.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { App, Preview, PreviewSettings } from '../../api';
import { useTopic } from '../../ws';
import { useCan } from '../../access';
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
} from '../../ui';

export function PreviewsTab({ app }: { app: App }) {
  const previews = useLoad(() => api.listPreviews(app.id).then((r) => r.items), [app.id]);
  const settings = useLoad(() => api.previewSettings(app.id), [app.id]);
  const [branch, setBranch] = useState('');
  const act = useAction();
  const errs = fieldErrors(act.error, '');
  useTopic('apps', (d: any) => {
    if (typeof d?.app === 'string' && d.app.startsWith(`${app.name}-pr-`)) void previews.reload();
  });
  const items = previews.data ?? [];
  const off = settings.data ? !settings.data.enabled : false;
  const can = useCan();
  const deployer = can('app.deploy', app.id);
  return (
    <>
      <section class="card" aria-labelledby="previews-h">
        <h2 id="previews-h">Previews</h2>
        <ErrorNote error={previews.error} />
        {previews.data && items.length === 0 && <p class="muted">No previews.</p>}
        {items.length > 0 && (
          <table>
            <thead>
              <tr>
                <th>Number</th>
                <th>Branch</th>
                <th>Address</th>
                <th>Status</th>
                <th>Expires</th>
                {deployer && (
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {items.map((p) => (
                <PreviewRow
                  key={p.id}
                  p={p}
                  busy={act.busy}
                  onRemove={
                    !deployer
                      ? null
                      : () => {
                          if (
                            !confirm(
                              `Remove preview ${p.number} (${p.branch}) with its containers, network and volumes?`,
                            )
                          )
                            return;
                          void act.run(async () => {
                            await api.deletePreview(app.id, p.id);
                            await previews.reload();
                          });
                        }
                  }
                />
              ))}
            </tbody>
          </table>
        )}
        {deployer && (
          <form
            class="stack"
            noValidate
            onSubmit={(e) => {
              e.preventDefault();
              void act.run(async () => {
                await api.createPreview(app.id, { branch: branch.trim() });
                setBranch('');
                await previews.reload();
              });
            }}
          >
            <Field
              id="preview-branch"
              label="Branch"
              mono
              value={branch}
              placeholder="feature/x"
              hint={
                off
                  ? 'Previews are off: enable them in the settings below first.'
                  : 'Builds and deploys this branch as a new preview.'
              }
              error={errs.branch}
              onInput={setBranch}
            />
            <ErrorNote error={errs.branch ? null : act.error} />
            <div class="row">
              <button type="submit" class="primary" disabled={act.busy || !branch.trim()}>
                Create preview
              </button>
            </div>
          </form>
        )}
      </section>
      {settings.error && <ErrorNote error={settings.error} />}
      {settings.data && (
        <SettingsForm
          id={app.id}
          initial={settings.data}
          onSaved={settings.set}
          allowed={can('app.admin', app.id)}
        />
      )}
    </>
  );
}

function PreviewRow({ p, busy, onRemove }: { p: Preview; busy: boolean; onRemove: (() => void) | null }) {
  return (
    <tr data-testid="preview-row">
      <td>
        {p.number}
        {p.title && <div class="muted small">{p.title}</div>}
      </td>
      <td class="mono">{p.branch}</td>
      <td class="mono">
        {p.url ? (
          <a href={p.url} target="_blank" rel="noopener noreferrer">
            {p.host}
          </a>
        ) : (
          <span class="muted">no base domain</span>
        )}
      </td>
      <td>
        <Badge status={p.status} />
        {p.sleeping && p.status !== 'sleeping' && <div class="muted small">sleeping</div>}
      </td>
      <td>
        <When at={p.expires_at} />
      </td>
      {onRemove && (
        <td>
          <button
            type="button"
            class="danger"
            disabled={busy}
            aria-label={`Remove preview ${p.number}`}
            onClick={onRemove}
          >
            Remove
          </button>
        </td>
      )}
    </tr>
  );
}

const DATABASES: Array<[PreviewSettings['database'], string]> = [
  ['none', 'none: no database of its own'],
  ['empty', "empty: a fresh database of each of the app's"],
  ['latest_backup', "latest_backup: a fresh database loaded with the app's latest backup"],
];

/** Numbers typed in the form; anything not a whole number goes to the API as is, which names the problem. */
const num = (v: string): number => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : (v as unknown as number));

function SettingsForm({
  id,
  initial,
  onSaved,
  allowed,
}: {
  id: string;
  initial: PreviewSettings;
  onSaved: (s: PreviewSettings) => void;
  allowed: boolean;
}) {
  const [enabled, setEnabled] = useState(initial.enabled);
  const [forks, setForks] = useState(initial.from_forks);
  const [ttl, setTtl] = useState(String(initial.ttl_hours));
  const [max, setMax] = useState(String(initial.max));
  const [inherit, setInherit] = useState(initial.inherit_env.join(', '));
  const [database, setDatabase] = useState(initial.database);
  const [sleep, setSleep] = useState(
    initial.sleep_after_minutes === null ? '' : String(initial.sleep_after_minutes),
  );
  const saving = useSaving();
  const errs = fieldErrors(saving.error, '');
  const inheritErr = Object.entries(errs)
    .filter(([k]) => k.startsWith('inherit_env'))
    .map(([, v]) => v)
    .join('; ');
  const changed = saving.changed;
  return (
    <section class="card" aria-labelledby="preview-settings-h">
      <h2 id="preview-settings-h">Preview settings</h2>
      <SaveForm
        saving={saving}
        allowed={allowed}
        label="Save preview settings"
        onSave={async () => {
          const r = await api.putPreviewSettings(id, {
            enabled,
            from_forks: forks,
            ttl_hours: num(ttl),
            max: num(max),
            inherit_env: inherit
              .split(/[\s,]+/)
              .map((k) => k.trim())
              .filter(Boolean),
            database,
            sleep_after_minutes: sleep.trim() === '' ? null : num(sleep),
          });
          setInherit(r.inherit_env.join(', '));
          onSaved(r);
        }}
      >
        <label class="inline">
          <input
            type="checkbox"
            name="preview_enabled"
            checked={enabled}
            onChange={(e) => (changed(), setEnabled((e.target as HTMLInputElement).checked))}
          />{' '}
          Previews on (pull request deliveries and “Create preview” make previews)
        </label>
        <label class="inline">
          <input
            type="checkbox"
            name="preview_from_forks"
            checked={forks}
            onChange={(e) => (changed(), setForks((e.target as HTMLInputElement).checked))}
          />{' '}
          Pull requests from forks (their code runs on this server)
        </label>
        <Field
          id="preview-ttl"
          label="Time to live (hours)"
          inputMode="numeric"
          value={ttl}
          hint="Removed this long after its last deployment"
          error={errs.ttl_hours}
          onInput={(v) => (changed(), setTtl(v))}
        />
        <Field
          id="preview-max"
          label="Maximum previews"
          inputMode="numeric"
          value={max}
          hint="One more removes the oldest first"
          error={errs.max}
          onInput={(v) => (changed(), setMax(v))}
        />
        <Field
          id="preview-inherit"
          label="Inherited variables"
          mono
          value={inherit}
          hint="The only keys of the app's variables a preview receives, separated by commas"
          error={inheritErr || undefined}
          onInput={(v) => (changed(), setInherit(v))}
        />
        <SelectField
          id="preview-database"
          label="Database"
          value={database}
          options={DATABASES}
          onChange={(v) => (changed(), setDatabase(v))}
        />
        <Field
          id="preview-sleep"
          label="Previews sleep after (minutes)"
          inputMode="numeric"
          value={sleep}
          hint="1 to 10080; empty: previews never sleep. A request to a sleeping preview wakes it."
          error={errs.sleep_after_minutes}
          onInput={(v) => (changed(), setSleep(v))}
        />
        <ErrorNote error={Object.keys(errs).length ? null : saving.error} />
      </SaveForm>
    </section>
  );
}
