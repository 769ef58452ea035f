// Where an app's code comes from, and how it gets redeployed from outside: the image (or repository
// and branch) with its pull policy, saved with PATCH /api/apps/{id} (audited, revertible); "Pull and
// redeploy"; and the deploy hook a CI job calls, whose URL is shown once when it is made.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { App, AppSource } from '../../api';
import * as images from '../../images-api';
import {
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

type Pull = 'if_missing' | 'always';
const PULLS: ReadonlyArray<readonly [Pull, string]> = [
  ['if_missing', 'If missing: pull only what the engine does not have'],
  ['always', 'Always: pull again on every deploy'],
];

export function SourceTab(props: { app: App; onSaved: (a: App) => void; onDeployed: (did: string) => void }) {
  return (
    <div class="stack">
      <SourceForm app={props.app} onSaved={props.onSaved} />
      <PullRedeploy id={props.app.id} onDeployed={props.onDeployed} />
      <DeployHook id={props.app.id} />
    </div>
  );
}

interface Form {
  image: string;
  repo_url: string;
  branch: string;
  pull: Pull;
}

function formOf(s: AppSource): Form {
  return {
    image: s.type === 'image' ? s.image : '',
    repo_url: s.type === 'git' ? s.repo_url : '',
    branch: s.type === 'git' ? s.branch : '',
    pull: s.type === 'git' ? 'if_missing' : (s.pull ?? 'if_missing'),
  };
}

/** The source the form describes: only the fields it edits change; the rest is kept as saved. */
function sourceOf(s: AppSource, f: Form): AppSource {
  if (s.type === 'git') return { ...s, repo_url: f.repo_url.trim(), branch: f.branch.trim() };
  const pull = f.pull === 'if_missing' ? {} : { pull: f.pull };
  if (s.type === 'image') return { type: 'image', image: f.image.trim(), ...pull };
  return { type: 'compose', compose: s.compose, ...pull };
}

function SourceForm({ app, onSaved }: { app: App; onSaved: (a: App) => void }) {
  const saving = useSaving();
  const [form, setForm] = useState<Form>(() => formOf(app.source));
  const errors = fieldErrors(saving.error, 'source.');
  const set = (k: keyof Form) => (v: string) => {
    saving.changed();
    setForm({ ...form, [k]: v });
  };
  const s = app.source;
  return (
    <section class="card" aria-labelledby="source-h">
      <h2 id="source-h">Source</h2>
      <p class="muted small">
        Saved for the next deployment; the change is in the audit log and can be reverted.
      </p>
      <SaveForm
        saving={saving}
        label="Save source"
        onSave={async () => onSaved((await api.patchApp(app.id, { source: sourceOf(s, form) })).app)}
      >
        {s.type === 'image' && (
          <Field
            id="source-image"
            label="Image"
            mono
            placeholder="registry.example:5000/team/app:1.4"
            value={form.image}
            onInput={set('image')}
            error={errors.image}
          />
        )}
        {s.type === 'git' && (
          <>
            <Field
              id="source-repo"
              label="Repository"
              mono
              value={form.repo_url}
              onInput={set('repo_url')}
              error={errors.repo_url}
            />
            <Field
              id="source-branch"
              label="Branch"
              mono
              value={form.branch}
              onInput={set('branch')}
              error={errors.branch}
            />
          </>
        )}
        {s.type !== 'git' && (
          <SelectField
            id="source-pull"
            label="Pull policy"
            value={form.pull}
            options={PULLS}
            onChange={set('pull')}
            error={errors.pull}
          />
        )}
        <ErrorNote error={saving.error} />
      </SaveForm>
    </section>
  );
}

function PullRedeploy({ id, onDeployed }: { id: string; onDeployed: (did: string) => void }) {
  const act = useAction();
  return (
    <section class="card" aria-labelledby="pull-h">
      <h2 id="pull-h">Pull and redeploy</h2>
      <p class="muted small">
        Pulls every image again (a tag that moved gets its new content), then deploys. The running version
        serves until the new one is healthy.
      </p>
      <button
        type="button"
        class="primary"
        disabled={act.busy}
        onClick={() => act.run(async () => onDeployed((await images.pullAndDeploy(id)).deployment.id))}
      >
        Pull and redeploy
      </button>
      <ErrorNote error={act.error} />
    </section>
  );
}

function DeployHook({ id }: { id: string }) {
  const hook = useLoad(() => images.getDeployHook(id), [id]);
  const act = useAction();
  const [url, setUrl] = useState<string | null>(null);
  const h = hook.data;
  return (
    <section class="card" aria-labelledby="hook-h">
      <h2 id="hook-h">Deploy hook</h2>
      <p class="muted small">
        A secret URL for CI: <span class="mono">POST</span> to it after pushing an image and the app pulls and
        redeploys. It is shown once; making a new one stops the old one.
      </p>
      <ErrorNote error={hook.error} />
      {h && (
        <p class="small" data-testid="hook-state">
          {h.exists ? (
            <>
              Made <When at={h.created_at} />
              {h.last_used_at ? (
                <>
                  {' '}
                  · last called <When at={h.last_used_at} />
                </>
              ) : (
                ' · never called'
              )}
            </>
          ) : (
            'No deploy hook.'
          )}
        </p>
      )}
      {url && (
        <div class="field" role="status">
          <label for="hook-url">Copy it now: it is not shown again</label>
          <input
            id="hook-url"
            class="mono"
            readOnly
            value={url}
            onFocus={(e) => (e.target as HTMLInputElement).select()}
          />
        </div>
      )}
      <div class="row">
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            (!h?.exists || confirm('Make a new deploy hook? The current URL stops working.')) &&
            act.run(async () => {
              const made = (await images.makeDeployHook(id)).url;
              setUrl(made.startsWith('/') ? `${location.origin}${made}` : made);
              await hook.reload();
            })
          }
        >
          {h?.exists ? 'Regenerate' : 'Make deploy hook'}
        </button>
        {h?.exists && (
          <button
            type="button"
            class="danger"
            disabled={act.busy}
            onClick={() =>
              confirm('Delete the deploy hook? Calls to its URL fail from now on.') &&
              act.run(async () => {
                await images.deleteDeployHook(id);
                setUrl(null);
                await hook.reload();
              })
            }
          >
            Delete hook
          </button>
        )}
      </div>
      <ErrorNote error={act.error} />
    </section>
  );
}
