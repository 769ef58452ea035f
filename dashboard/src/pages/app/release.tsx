// The release command (PATCH /api/apps/{id} `release_command`, `release_timeout_s`): run once per
// deployment in the new image before the new version takes traffic; its output is in the
// deployment's log (`release` lines). See docs/jobs.md.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { App } from '../../api';
import { ErrorNote, Field, SaveForm, fieldErrors, useSaving } from '../../ui';
import { ArgsField, toArgs } from './jobform';
import { useCan } from '../../access';

export function ReleaseSetting({ app, onSaved }: { app: App; onSaved: (a: App) => void }) {
  const [command, setCommand] = useState(() => (app.release_command ?? []).join('\n'));
  const [limit, setLimit] = useState(() => String(app.release_timeout_s));
  const saving = useSaving();
  const can = useCan();
  const errs = fieldErrors(saving.error, '');
  return (
    <section class="card" aria-labelledby="release-h">
      <h2 id="release-h">Release command</h2>
      <p class="muted small">
        {app.release_command
          ? `Runs once per deployment, in the new image with the new environment, before the new version takes traffic; a failure or a timeout fails the deployment and the running version keeps serving. Rollbacks skip it.`
          : 'None: deployments go straight from the build to the rollout.'}
      </p>
      <SaveForm
        saving={saving}
        allowed={can('app.admin', app.id)}
        label="Save release command"
        onSave={async () => {
          const args = toArgs(command);
          const t = limit.trim();
          const r = await api.setRelease(app.id, {
            release_command: args.length ? args : null,
            release_timeout_s: t === '' ? null : /^\d+$/.test(t) ? Number(t) : (t as unknown as number),
          });
          setCommand((r.app.release_command ?? []).join('\n'));
          setLimit(String(r.app.release_timeout_s));
          onSaved(r.app);
        }}
      >
        <ArgsField
          id="release-command"
          label="Command"
          value={command}
          error={errs.release_command}
          hint="One argument per line (e.g. npm, run, migrate); empty: no release command"
          onInput={(v) => {
            saving.changed();
            setCommand(v);
          }}
        />
        <Field
          id="release-timeout"
          label="Time limit (seconds)"
          inputMode="numeric"
          value={limit}
          error={errs.release_timeout_s}
          hint="Default 600"
          onInput={(v) => {
            saving.changed();
            setLimit(v);
          }}
        />
        <ErrorNote error={Object.keys(errs).length ? null : saving.error} />
      </SaveForm>
    </section>
  );
}
