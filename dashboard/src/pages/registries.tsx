// Registry credentials: the stored ones (host, user, last use; never a password), add one (a
// step-up is asked for), test one (a login against its /v2/), delete one.
import { useState } from 'preact/hooks';
import * as images from '../images-api';
import { useTitle } from '../title';
import type { Registry, RegistryTest } from '../images-api';
import { ErrorNote, Field, SaveForm, When, fieldErrors, useAction, useLoad, useSaving } from '../ui';

export function RegistriesPage({ canWrite }: { canWrite: boolean }) {
  useTitle('Registries');
  const list = useLoad(() => images.listRegistries());
  return (
    <main>
      <h1>Registries</h1>
      <p class="muted">
        Credentials for private container registries. A pull uses the ones whose host is the image's registry
        (<span class="mono">docker.io</span> for names like <span class="mono">nginx:1.27</span>
        ). Passwords are sealed and never shown again.
      </p>
      <section class="card" aria-labelledby="registries-h">
        <h2 id="registries-h">Stored credentials</h2>
        <ErrorNote error={list.error} />
        {list.data?.items.length === 0 && <p class="muted">No registry credentials yet.</p>}
        <ul class="plain">
          {(list.data?.items ?? []).map((r) => (
            <RegistryRow key={r.id} r={r} canWrite={canWrite} onChange={list.reload} />
          ))}
        </ul>
      </section>
      {canWrite && <NewRegistry onCreated={list.reload} />}
    </main>
  );
}

function RegistryRow(props: { r: Registry; canWrite: boolean; onChange: () => Promise<void> }) {
  const { r } = props;
  const act = useAction();
  const [test, setTest] = useState<RegistryTest | null>(null);
  return (
    <li class="channel" data-testid="registry">
      <div class="row">
        <strong class="mono">{r.host}</strong> <span class="muted">as {r.username}</span>
      </div>
      <p class="small muted">
        Added <When at={r.created_at} />
        {r.last_used_at ? (
          <>
            {' '}
            · last used <When at={r.last_used_at} />
          </>
        ) : (
          ' · not used yet'
        )}
      </p>
      {props.canWrite && (
        <div class="row">
          <button
            type="button"
            disabled={act.busy}
            onClick={() => act.run(async () => setTest(await images.testRegistry(r.id)))}
          >
            Test <span class="sr-only">{r.host}</span>
          </button>
          <button
            type="button"
            class="danger"
            disabled={act.busy}
            onClick={() =>
              confirm(`Delete the credentials for ${r.host}? Pulls from it go without them.`) &&
              act.run(async () => {
                await images.deleteRegistry(r.id);
                await props.onChange();
              })
            }
          >
            Delete <span class="sr-only">{r.host}</span>
          </button>
        </div>
      )}
      <ErrorNote error={act.error} />
      {test && (
        <p role="status" data-testid="registry-test" class={test.ok ? 'notice' : 'error'}>
          {test.ok ? 'Logged in.' : `Login failed: ${test.error ?? 'unknown reason'}`}
        </p>
      )}
    </li>
  );
}

function NewRegistry({ onCreated }: { onCreated: () => Promise<void> }) {
  const saving = useSaving();
  const [form, setForm] = useState({ host: '', username: '', password: '' });
  const errors = fieldErrors(saving.error, '');
  const set = (k: keyof typeof form) => (v: string) => {
    saving.changed();
    setForm({ ...form, [k]: v });
  };
  return (
    <section class="card" aria-labelledby="new-registry-h">
      <h2 id="new-registry-h">Add credentials</h2>
      <SaveForm
        saving={saving}
        label="Add"
        onSave={async () => {
          await images.createRegistry(form);
          setForm({ host: '', username: '', password: '' });
          await onCreated();
        }}
      >
        <Field
          id="registry-host"
          label="Registry host"
          mono
          placeholder="registry.example:5000"
          hint="As image references write it: host or host:port, no https://"
          value={form.host}
          onInput={set('host')}
          error={errors.host}
        />
        <Field
          id="registry-username"
          label="Username"
          value={form.username}
          onInput={set('username')}
          error={errors.username}
        />
        <div class="field">
          <label for="registry-password">Password or token</label>
          <input
            id="registry-password"
            type="password"
            autoComplete="new-password"
            value={form.password}
            aria-invalid={errors.password ? true : undefined}
            onInput={(e) => set('password')((e.target as HTMLInputElement).value)}
          />
          {errors.password && <span class="error small">{errors.password}</span>}
        </div>
        <ErrorNote error={saving.error} />
      </SaveForm>
    </section>
  );
}
