// One-click services: the vetted add-on templates, each installed as an app of its own and
// deployed at once; the secrets it generates are shown once, here.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { Addon } from '../api';
import { Link } from '../router';
import { useCan } from '../access';
import { formErrors } from '../form-errors';
import { useTitle } from '../title';
import { ErrorNote, Field, FormNote, useAction, useLoad } from '../ui';

export function AddonsPage() {
  useTitle('Templates');
  const addons = useLoad(() => api.listAddons().then((r) => r.items));
  const can = useCan();
  const [open, setOpen] = useState<string | null>(null);
  return (
    <main>
      <h1>Templates</h1>
      <p class="muted">
        Ready-made services, each installed as an app of its own and deployed at once.{' '}
        <Link href="/apps">Back to the apps</Link>
      </p>
      <ErrorNote error={addons.error} />
      <div class="grid">
        {(addons.data ?? []).map((a) => (
          <section key={a.id} class="card" aria-labelledby={`addon-${a.id}`} data-testid="addon">
            <h2 id={`addon-${a.id}`}>{a.name}</h2>
            <p>{a.description}</p>
            <p class="muted small">
              {a.category} · {a.services.length} service{a.services.length === 1 ? '' : 's'} · about{' '}
              {a.footprint_mb} MB of memory
            </p>
            {can('app.admin') &&
              (open === a.id ? (
                <Install addon={a} onCancel={() => setOpen(null)} />
              ) : (
                <button type="button" onClick={() => setOpen(a.id)}>
                  Install {a.name}
                </button>
              ))}
          </section>
        ))}
      </div>
    </main>
  );
}

function Install({ addon, onCancel }: { addon: Addon; onCancel: () => void }) {
  const [name, setName] = useState(addon.id);
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(addon.params.filter((p) => !p.generated).map((p) => [p.key, p.default ?? ''])),
  );
  const [done, setDone] = useState<{ id: string; secrets: Record<string, string> } | null>(null);
  const act = useAction();
  const labels: Record<string, string> = { name: 'App name' };
  for (const p of addon.params) labels[`params.${p.key}`] = p.label;
  const errors = formErrors(act.error, labels, { conflict: 'name' });
  if (done) return <Installed name={name} id={done.id} secrets={done.secrets} />;
  return (
    <form
      class="stack"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          const r = await api.installAddon(addon.id, name.trim(), values);
          setDone({ id: r.app.id, secrets: r.generated_secrets });
        });
      }}
    >
      <Field
        id={`${addon.id}-name`}
        label="App name"
        value={name}
        onInput={setName}
        error={errors.field('name')}
      />
      {addon.params
        .filter((p) => !p.generated)
        .map((p) => (
          <Field
            key={p.key}
            id={`${addon.id}-${p.key}`}
            label={p.label}
            type={p.secret ? 'password' : 'text'}
            value={values[p.key] ?? ''}
            onInput={(v) => setValues({ ...values, [p.key]: v })}
            error={errors.field(`params.${p.key}`)}
          />
        ))}
      {addon.params.some((p) => p.generated) && (
        <p class="muted small">
          Generated for you:{' '}
          {addon.params
            .filter((p) => p.generated)
            .map((p) => p.label)
            .join(', ')}
          .
        </p>
      )}
      <FormNote errors={errors} />
      <div class="row">
        <button type="submit" class="primary" disabled={act.busy}>
          Install
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Installed({ name, id, secrets }: { name: string; id: string; secrets: Record<string, string> }) {
  return (
    <div class="notice" role="status" data-testid="addon-installed">
      <p>
        Installed and deploying: <Link href={`/apps/${encodeURIComponent(id)}`}>{name}</Link>.
      </p>
      {Object.keys(secrets).length > 0 && (
        <>
          <p class="small">Generated, shown only now (they are also the app's secret variables):</p>
          <ul class="plain">
            {Object.entries(secrets).map(([k, v]) => (
              <li key={k}>
                <span class="mono">{k}</span> <code class="secret">{v}</code>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
